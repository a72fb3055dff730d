"""Runs: `run` (bring everything up to date as of day 1) and `replay` (a date range).

A run records a pipeline_runs row, commits per partition-day (a crash keeps finished work and
a rerun resumes), and never holds one transaction for the whole run.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
from dataclasses import dataclass

import filelock
from typing import Callable

from .calendar import HISTORY_DAYS, day_bounds, days_between
from .errors import MempipeError
from .stages.claims import lock_key
from .stages.context import RunContext
from .stages.daily import _UNKNOWN as _UNREAD
from .stages.daily import load_partition_days, run_daily
from .stages.historical import run_historical
from .stages.merge import Day1For, run_merges

log = logging.getLogger(__name__)
Progress = Callable[[int, int], None]  # (done, total)
# The widest UTC offsets in use (UTC-12 .. UTC+14) bound where a local day can fall.
_WIDEST = dt.timedelta(hours=15)


@dataclass
class RunResult:
    run_id: int
    status: str
    stats: object
    plan: dict | None = None


def _partitions(ctx: RunContext, first: dt.date, last: dt.date, guild_id: int | None) -> list[dict]:
    start, _ = day_bounds(first, ctx.tz_for_guild(None))
    _, end = day_bounds(last, ctx.tz_for_guild(None))
    return ctx.store.partitions_between(start - _WIDEST, end + _WIDEST, guild_id)


def _day1_for(ctx: RunContext, as_of: dt.date | None) -> Day1For:
    if as_of is not None:
        return lambda _guild: as_of
    now = ctx.now()
    return lambda guild: now.astimezone(ctx.tz_for_guild(guild)).date()


async def bring_up_to_date(ctx: RunContext, daily_days: list[dt.date] | None, as_of: dt.date | None,
                           guild_id: int | None = None, progress: Progress | None = None,
                           only_guilds: Callable[[int | None], bool] | None = None) -> dict:
    """Daily summaries for `daily_days` (default: days 1-7 of each partition), then historical and
    merge as of day 1 (`as_of`, default today in each guild's timezone). Returns the plan."""
    day1_for = _day1_for(ctx, as_of)
    if as_of is not None:
        newest = as_of
    else:  # today differs per timezone: take the widest span
        newest = (ctx.now() + _WIDEST).date()
    oldest_day1 = as_of if as_of is not None else (ctx.now() - _WIDEST).date()
    first = min(daily_days[0] if daily_days else newest, oldest_day1 - dt.timedelta(days=HISTORY_DAYS))
    parts = _partitions(ctx, first, newest, guild_id)
    if only_guilds is not None:  # e.g. the rollover of one timezone: its guilds (None = DMs)
        parts = [p for p in parts if only_guilds(p["guild_id"])]

    work: list[tuple[str, int | None, dt.date]] = []
    for p in parts:
        d1 = day1_for(p["guild_id"])
        own_days = [d1 - dt.timedelta(days=i) for i in range(HISTORY_DAYS, -1, -1)]
        days = sorted(set(own_days) | set(daily_days or []))
        work.extend((p["partition"], p["guild_id"], d) for d in days if d <= d1)
    plan = {"partition_days": 0, "daily_calls": 0}
    total = len(work) + len(parts)
    done = 0
    # Partition-days run concurrently up to the configured cap: an LLM summarizer keeps several
    # requests in flight (its limiter keeps them inside the quota); each writes its own rows.
    busy: list[tuple[str, int | None, dt.date]] = []

    loaded: dict[str, tuple[dict, dict]] = {}  # partition -> (its partition-days, their stored rows)
    by_partition: dict[str, list[dt.date]] = {}
    for partition, _guild, day in work:
        by_partition.setdefault(partition, []).append(day)
    loading = asyncio.Semaphore(4)  # partitions read ahead of the work, bounded for memory

    async def load(partition: str, guild: int | None) -> tuple[dict, dict]:
        if partition not in loaded:
            async with loading:
                if partition not in loaded:
                    days = by_partition[partition]
                    loaded[partition] = (load_partition_days(ctx, partition, guild, days),
                                         ctx.store.partition_days_between(partition, min(days), max(days)))
        return loaded[partition]

    async def one(partition: str, guild: int | None, day: dt.date, wait: bool = False) -> None:
        nonlocal done
        async with ctx.slot():
            # First pass: skip what another run is computing right now (both runs then share the
            # work); second pass: wait for those and find them done.
            pds, stored = await load(partition, guild)
            status = await run_daily(ctx, partition, guild, day, wait=wait, pd=pds.get(day),
                                     stored=stored.get(day) if not wait else _UNREAD)
        if status == "busy":
            busy.append((partition, guild, day))
            return
        remaining[partition] -= 1
        if not remaining[partition] and not wait:
            loaded.pop(partition, None)  # done with this partition: free its messages
        if status != "empty":
            plan["partition_days"] += 1
        if status in ("planned", "computed", "failed"):
            plan["daily_calls"] += 1
        done += 1
        if progress:
            progress(done, total)

    remaining = {p: len(days) for p, days in by_partition.items()}
    for items, wait in ((work, False), (busy, True)):
        tasks = [asyncio.ensure_future(one(*item, wait=wait)) for item in list(items)]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for t in tasks:  # a store outage stops the run: cancel the rest, keep what is written
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
    ctx.writer.flush()  # historical summaries read the dailies
    for p in parts:
        await run_historical(ctx, p["partition"], p["guild_id"], day1_for(p["guild_id"]))
        done += 1
        if progress:
            progress(done, total)
    scopes = [p["partition"] for p in parts]
    if guild_id is None and (only_guilds is None or only_guilds(None)):
        scopes += [s for s in ctx.store.context_scopes("dm:") if s not in scopes]
        scopes += sorted({s["scope"] for s in ctx.store.facts_scopes()} - set(scopes))
    await run_merges(ctx, scopes, day1_for)
    return plan


@contextlib.asynccontextmanager
async def _run_lock(ctx: RunContext):
    """Runs that do not share work item by item take turns: a second run waits, then finds its
    work done. SQLite: a file lock next to the database. PostgreSQL with a cheap summarizer: a
    session advisory lock on a dedicated connection. (PostgreSQL with a model shares the work
    through per-item claims instead, stages/claims.py.) The wait polls, so a waiting `serve` keeps
    its event loop (heartbeats, signals) alive."""
    url = ctx.store.engine.url
    if ctx.dry_run or ctx.uses_claims or (url.get_backend_name() == "sqlite"
                                           and (not url.database or url.database == ":memory:")):
        yield
        return
    if url.get_backend_name() == "sqlite":
        lock = filelock.FileLock(url.database + ".run.lock")

        def try_acquire() -> bool:
            try:
                lock.acquire(timeout=0)
                return True
            except filelock.Timeout:
                return False
        release = lock.release
    else:
        lock = ctx.store.advisory_lock(lock_key("mempipe:run"))
        try_acquire, release = lock.try_acquire, lock.release
    warned = False
    while not try_acquire():
        if not warned:
            log.warning("another mempipe run is working on %s; waiting for it", ctx.store.safe_url)
            warned = True
        await asyncio.sleep(0.2)
    try:
        yield
    finally:
        release()


async def execute(ctx: RunContext, kind: str, date_from: dt.date | None, date_to: dt.date | None,
                  guild_id: int | None = None, progress: Progress | None = None, *,
                  only_guilds: Callable[[int | None], bool] | None = None) -> RunResult:
    """Record a pipeline_runs row around one run or replay; a failure is recorded with its cause.
    `kind` is "run" (as of date_to, default today per guild), "replay" (date_from..date_to), or
    a scheduler job name (run semantics, recorded under that name)."""
    async with _run_lock(ctx):
        return await _execute(ctx, kind, date_from, date_to, guild_id, progress, only_guilds)


async def _execute(ctx: RunContext, kind: str, date_from: dt.date | None, date_to: dt.date | None,
                   guild_id: int | None, progress: Progress | None,
                   only_guilds: Callable[[int | None], bool] | None) -> RunResult:
    run_id = ctx.store.start_run(kind, date_from, date_to, guild_id, ctx.dry_run, ctx.now())
    try:
        if kind == "replay":
            plan = await bring_up_to_date(ctx, days_between(date_from, date_to), date_to, guild_id, progress,
                                          only_guilds)
        else:
            plan = await bring_up_to_date(ctx, None, date_to, guild_id, progress, only_guilds)
    except BaseException as exc:
        try:
            ctx.writer.flush()  # items finished before the failure are whole: keep them
        except Exception:
            log.exception("could not write the results finished before the failure")
        await _close(ctx)
        if isinstance(exc, asyncio.CancelledError):
            reason = "cancelled by shutdown"
        elif isinstance(exc, MempipeError):
            reason = str(exc)
        else:
            reason = f"{exc.__class__.__name__}: {exc}"
        try:
            ctx.store.finish_run(run_id, "failed", ctx.stats.columns(), ctx.now(), error=reason)
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
