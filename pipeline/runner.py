"""Runs: `run` (bring everything up to date as of day 1) and `replay` (a date range).

A run is planned (`plan_run`, a pure function of the partitions, the days asked for, the
recompute queue and each guild's day 1) and then executed: daily partition-days, then historical
rows, then merges. It records a pipeline_runs row, commits each item that cost a model call as
it finishes and the rest in batches (all of them, for cheap summarizers: a crash keeps finished
calls and a rerun resumes), and never holds one transaction for the whole run.

The recompute queue (pipeline/store/controls.py: a deleted message, a clear) adds partition-days
of any age up to day 1. A queued day is removed from the queue once computed, found fresh or
found empty (not on a dry run, not when it failed); an empty one loses its stored summaries, and
the historical rows as of other day 1s that quoted it go (the current ones are recomputed here).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
from dataclasses import dataclass, field
from typing import Callable

from .calendar import HISTORY_DAYS, day_bounds, days_between
from .errors import MempipeError
from .gc_thresholds import fewer_collections
from .llm.batch_jobs import finish_batch, start_batch
from .safety import redact
from .stage_loops import run_dailies, run_historicals, spread_dailies, spread_merges
from .stages.context import RunContext
from .stages.daily import run_daily
from .stages.merge import Day1For, run_merges
from .stages.processes import processes_for
from .stages.refresh import ItemStatus
from .stages.requests import apply_requests
from .workers.dispatch import dispatcher_for

log = logging.getLogger(__name__)
Progress = Callable[[int, int], None]  # (done, total)
# The widest UTC offsets in use (UTC-12 .. UTC+14) bound where a local day can fall.
_WIDEST = dt.timedelta(hours=15)
WorkItem = tuple[str, int | None, dt.date]  # (partition, guild, day)


@dataclass
class RunResult:
    run_id: int
    status: str
    stats: object
    plan: dict | None = None


@dataclass
class RunPlan:
    """What a run will do: daily items (partition, guild, day), then the historical stage of each
    partition, then the merges of its scopes."""

    partitions: list[dict]
    work: list[WorkItem]
    by_partition: dict[str, list[dt.date]] = field(default_factory=dict)
    queued: dict[tuple[str, dt.date], dt.datetime] = field(default_factory=dict)  # -> queued_at
    day1: dict[str, dt.date] = field(default_factory=dict)  # each partition's day 1
    live: bool = False  # as of now (no date given): today's fold may wait (stages/daily.py _fold_waits)

    def may_wait(self, partition: str, day: dt.date) -> bool:
        """Today's partition-day in a run as of now, not queued for a recompute: a fold of a few new
        messages may wait. A finished day (the rollover's yesterday, a run as of a date, a replay)
        is always made complete."""
        return self.live and day == self.day1.get(partition) and (partition, day) not in self.queued

    @property
    def total(self) -> int:
        return len(self.work) + len(self.partitions)


def day1_for(now: dt.datetime, tz_for_guild, as_of: dt.date | None) -> Day1For:
    if as_of is not None:
        return lambda _guild: as_of
    return lambda guild: now.astimezone(tz_for_guild(guild)).date()


def run_window(now: dt.datetime, daily_days: list[dt.date] | None, as_of: dt.date | None) -> tuple[dt.date, dt.date]:
    """The first and last local day any partition may need (today differs per timezone: take
    the widest span)."""
    newest = as_of if as_of is not None else (now + _WIDEST).date()
    oldest_day1 = as_of if as_of is not None else (now - _WIDEST).date()
    first = min(daily_days[0] if daily_days else newest, oldest_day1 - dt.timedelta(days=HISTORY_DAYS))
    return first, newest


def plan_run(partitions: list[dict], daily_days: list[dt.date] | None, day1: Day1For,
             queued: list[dict] | None = None) -> RunPlan:
    """Daily items: days 1-7 of each partition (its own day 1), plus `daily_days` up to day 1,
    plus the `queued` days (recompute_queue rows: partition, day, queued_at) of these partitions
    up to day 1, however old."""
    plan = RunPlan(partitions, [])
    queued_days: dict[str, set[dt.date]] = {}
    for q in queued or ():
        queued_days.setdefault(q["partition"], set()).add(q["day"])
    for p in partitions:
        d1 = plan.day1[p["partition"]] = day1(p["guild_id"])
        own_days = [d1 - dt.timedelta(days=i) for i in range(HISTORY_DAYS, -1, -1)]
        days = sorted(set(own_days) | set(daily_days or []) | queued_days.get(p["partition"], set()))
        plan.work.extend((p["partition"], p["guild_id"], d) for d in days if d <= d1)
    planned = set((p, d) for p, _g, d in plan.work)
    plan.queued = {(q["partition"], q["day"]): q["queued_at"] for q in queued or ()
                   if (q["partition"], q["day"]) in planned}
    for partition, _guild, day in plan.work:
        plan.by_partition.setdefault(partition, []).append(day)
    return plan


async def bring_up_to_date(ctx: RunContext, daily_days: list[dt.date] | None, as_of: dt.date | None,
                           guild_id: int | None = None, progress: Progress | None = None,
                           only_guilds: Callable[[int | None], bool] | None = None) -> dict:
    """Daily summaries for `daily_days` (default: days 1-7 of each partition), then historical and
    merge as of day 1 (`as_of`, default today in each guild's timezone). Returns the plan's counts
    ("estimated": the stages a dry run covers when it stopped early, "daily" or "historical")."""
    now = ctx.now()
    day1 = day1_for(now, ctx.tz_for_guild, as_of)
    first, newest = run_window(now, daily_days, as_of)
    start, _ = day_bounds(first, ctx.tz_for_guild(None))
    _, end = day_bounds(newest, ctx.tz_for_guild(None))
    parts = ctx.store.partitions_between(start - _WIDEST, end + _WIDEST, guild_id)
    if only_guilds is not None:  # e.g. the rollover of one timezone: its guilds (None = DMs)
        parts = [p for p in parts if only_guilds(p["guild_id"])]
    queued = _queued(ctx, parts, guild_id, only_guilds)
    plan = plan_run(parts, daily_days, day1, queued)
    plan.live = as_of is None
    counts = {"partition_days": 0, "daily_calls": 0}
    done = 0

    def advance() -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, plan.total)

    def counted(status: ItemStatus) -> None:
        if status is not ItemStatus.EMPTY:
            counts["partition_days"] += 1
        if status in (ItemStatus.PLANNED, ItemStatus.COMPUTED, ItemStatus.FAILED):
            counts["daily_calls"] += 1
        advance()

    workers = dispatcher_for(ctx)  # pipeline/workers/: each stage's items as jobs (workers.enabled)
    if workers is not None:
        await workers.dailies(plan, advance)
    elif (n := processes_for(ctx)) > 1:
        await spread_dailies(ctx, n, plan, counted)
    else:
        await run_dailies(ctx, plan, counted)
    # A dry run writes nothing, so a later stage would read what the earlier ones did not make:
    # checked against the stored rows its items would look unchanged, or empty. Its estimate stops
    # after the first stage with an item to make ("estimated": the stages it covers).
    if ctx.dry_run and counts["daily_calls"]:
        counts["estimated"] = "daily"
        for _p in parts:
            advance()
        return counts
    if ctx.stats.deferred:  # gemini.batch: the next stages wait for the batch answers (llm/batch.py)
        return counts
    ctx.writer.flush()  # historical summaries read the dailies
    # in-chat memory requests (stages/requests.py), in the order they were said, after the facts
    # of their days are written; a day a forget applies to is made again now, not by a later run
    touched = await apply_requests(ctx)
    for partition, guild, day in plan.work if touched else ():
        if partition in touched:
            counted(await run_daily(ctx, partition, guild, day))
    ctx.writer.flush()
    unchanged = ctx.stats.passed_unchanged
    if workers is not None:
        await workers.historicals(parts, day1, advance)
    else:
        await run_historicals(ctx, processes_for(ctx), parts, day1, advance)
    if ctx.dry_run and ctx.stats.historical_items > ctx.stats.passed_unchanged - unchanged:
        counts["estimated"] = "historical"
        return counts
    if ctx.stats.deferred:  # gemini.batch: the merges wait for the past weeks' batch answers
        return counts
    scopes = [p["partition"] for p in parts]

    def in_run(guild: int | None) -> bool:  # the scopes of this run (a guild, a timezone's rollover)
        return (guild_id is None or guild == guild_id) and (only_guilds is None or only_guilds(guild))
    if workers is not None:
        await workers.merges(scopes, day1, in_run)
    elif (n := processes_for(ctx)) > 1:
        await spread_merges(ctx, n, scopes, day1, in_run)
    else:
        await run_merges(ctx, scopes, day1, in_run)
    return counts


def _queued(ctx: RunContext, parts: list[dict], guild_id: int | None,
            only_guilds: Callable[[int | None], bool] | None) -> list[dict]:
    """The recompute queue's entries in this run's guilds (or timezone); their partitions join
    `parts` when no message of the run's window put them there."""
    rows = ctx.store.queued_days()
    if not rows:
        return []
    known = {p["partition"]: p["guild_id"] for p in parts}
    channels: dict[int, dict] | None = None
    out = []
    for q in rows:
        if q["partition"] not in known:
            kind, _, ident = q["partition"].partition(":")
            if kind == "channel":
                channels = ctx.store.channels() if channels is None else channels
                guild = (channels.get(int(ident)) or {}).get("guild_id")
            else:
                guild = int(ident) if kind == "guild" else None
            if (guild_id is not None and guild != guild_id) or (only_guilds is not None and not only_guilds(guild)):
                continue
            known[q["partition"]] = guild
            parts.append({"partition": q["partition"], "guild_id": guild})
        out.append(q)
    return out


@contextlib.asynccontextmanager
async def _run_lock(ctx: RunContext):
    """Runs that do not share work item by item take turns (RunContext decides which): a second
    run waits, then finds its work done. The wait polls, so a waiting `serve` keeps its event loop
    (heartbeats, signals) alive."""
    lock = ctx.run_lock()
    warned = False
    while not lock.try_acquire():
        if not warned:
            log.warning("another mempipe run is working on %s; waiting for it", ctx.store.safe_url)
            warned = True
        await asyncio.sleep(0.2)
    try:
        yield
    finally:
        lock.release()


async def execute(ctx: RunContext, kind: str, date_from: dt.date | None, date_to: dt.date | None,
                  guild_id: int | None = None, progress: Progress | None = None, *,
                  only_guilds: Callable[[int | None], bool] | None = None,
                  on_cancel: str | Callable[[], str] = "cancelled by shutdown") -> RunResult:
    """Record a pipeline_runs row around one run or replay; a failure is recorded with its cause
    (`on_cancel` when the run is cancelled or interrupted: the scheduler's shutdown, the CLI's
    Ctrl-C; a callable: the CLI knows which signal only once it came). `kind` is "run" (as of
    date_to, default today per guild), "replay"
    (date_from..date_to), or a scheduler job name (run semantics, recorded under that name)."""
    with fewer_collections():  # (pipeline/gc_thresholds.py: a tenth of a large run was the collector's)
        async with _run_lock(ctx):
            return await _execute(ctx, kind, date_from, date_to, guild_id, progress, only_guilds, on_cancel)


async def _execute(ctx: RunContext, kind: str, date_from: dt.date | None, date_to: dt.date | None,
                   guild_id: int | None, progress: Progress | None,
                   only_guilds: Callable[[int | None], bool] | None, on_cancel: str | Callable[[], str]) -> RunResult:
    ctx.mark_controls()  # before anything is read
    run_id = ctx.store.start_run(kind, date_from, date_to, guild_id, ctx.dry_run, ctx.now())
    ctx.run_kind = kind  # an hourly refresh may keep an immaterially changed context (stages/recent.py)
    ctx.run_id = run_id
    daily_days = days_between(date_from, date_to) if kind == "replay" else None
    try:
        batching = await start_batch(ctx, kind)  # gemini.batch: collect finished jobs first
        plan = await bring_up_to_date(ctx, daily_days, date_to, guild_id, progress, only_guilds)
        if batching:  # what this run (or another process) deferred goes as batch jobs
            await finish_batch(ctx, kind, date_from, date_to, guild_id)
        if ctx.dry_run:  # the estimate's input cost (batch prices with gemini.batch)
            ctx.stats.estimated_cost += getattr(ctx.summarizer, "planned_cost", 0.0)
    except BaseException as exc:
        try:
            ctx.writer.flush()  # items finished before the failure are whole: keep them
        except Exception:
            log.exception("could not write the results finished before the failure")
        await _close(ctx)
        if isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt)):
            reason = on_cancel() if callable(on_cancel) else on_cancel
        elif isinstance(exc, MempipeError):
            reason = str(exc)
        else:
            reason = f"{exc.__class__.__name__}: {exc}"
        try:
            # stored and shown by `mempipe runs`: never with a secret an exception text may carry
            ctx.store.finish_run(run_id, "failed", ctx.stats.columns(), ctx.now(), error=redact(reason))
        except MempipeError:
            log.error("could not record the failure of run %s", run_id)
        raise
    ctx.writer.flush()
    await _close(ctx)
    ctx.store.finish_run(run_id, "ok", ctx.stats.columns(), ctx.now())
    return RunResult(run_id, "ok", ctx.stats, plan)


async def _close(ctx: RunContext) -> None:
    close = getattr(ctx.summarizer, "aclose", None)
    if close is not None:
        try:
            await close()
        except Exception:  # closing a client must never hide the run's own outcome
            log.exception("closing the summarizer failed")
