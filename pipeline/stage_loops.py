"""How a run drives a stage's items (pipeline/runner.py plans the run and calls these): the
daily stage's partition-days in this process (`run_dailies`), or each stage shared out to
several processes (`spread_dailies`, `run_historicals`, `spread_merges`: stages/processes.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from typing import TYPE_CHECKING, Callable

from .calendar import HISTORY_DAYS
from .stages.context import RunContext
from .stages.daily import _UNKNOWN as _UNREAD
from .stages.daily import load_partition_days, run_daily
from .stages.historical import run_historical
from .stages.merge import Day1For, plan_merges, run_merge_jobs
from .stages.merge_inputs import MERGED_FACT_COLUMNS, MergeInputs
from .stages.processes import spread
from .stages.refresh import ItemStatus

if TYPE_CHECKING:
    from .runner import RunPlan, WorkItem

MERGE_USERS = 100  # at least these many users per unit of a merge stage spread over processes...
MERGE_UNITS = 16   # ...and at most about these many units per process: each unit reads its users'
# inputs, and on PostgreSQL four of those reads scan a table (contexts, profiles, historicals,
# names: their keys do not lead with the user). Slice of the large corpus, PostgreSQL, 2
# processes: 100 users a unit, merges 31 s; 16 units a process, 26 s (one read of everything
# before the fork: 24-28 s). An index by user on each would save ~1 of the units' 9-10 s of
# reading, not worth four more indexes to keep up to date on every write.


def spans(days: list[dt.date]) -> list[list[dt.date]]:
    """Days in runs without a gap of more than a week: a partition's messages are read per run, so
    a queued day months back does not read every message since."""
    spans: list[list[dt.date]] = []
    for day in sorted(days):
        if spans and (day - spans[-1][-1]).days <= HISTORY_DAYS + 1:
            spans[-1].append(day)
        else:
            spans.append([day])
    return spans


async def run_dailies(ctx: RunContext, plan: RunPlan, counted: Callable[[ItemStatus], None]) -> None:
    """Partition-days run concurrently up to the configured cap: an LLM summarizer keeps several
    requests in flight (its limiter keeps them inside the quota); each writes its own rows. A
    partition's messages are read once, ahead of its days, and freed after its last day."""
    loaded: dict[str, tuple[dict, dict, set]] = {}  # partition -> (partition-days, stored rows, emptied days)
    loading = asyncio.Semaphore(4)  # partitions read ahead of the work, bounded for memory
    remaining = {p: len(days) for p, days in plan.by_partition.items()}
    busy: list[WorkItem] = []
    done = (ItemStatus.COMPUTED, ItemStatus.CACHED, ItemStatus.EMPTY)

    async def load(partition: str, guild: int | None) -> tuple[dict, dict, set]:
        if partition not in loaded:
            async with loading:
                if partition not in loaded:
                    pds, stored, emptied = {}, {}, set()
                    for days in spans(plan.by_partition[partition]):
                        pds |= load_partition_days(ctx, partition, guild, days, emptied)
                        stored |= ctx.store.partition_days_between(partition, min(days), max(days))
                    loaded[partition] = (pds, stored, emptied)
        return loaded[partition]

    async def one(partition: str, guild: int | None, day: dt.date, wait: bool = False) -> None:
        queued = (partition, day) in plan.queued
        async with ctx.slot():
            # First pass: skip what another run is computing right now (both runs then share the
            # work); second pass: wait for those and find them done.
            pds, stored, emptied = await load(partition, guild)
            status = await run_daily(ctx, partition, guild, day, wait=wait, pd=pds.get(day),
                                     stored=stored.get(day) if not wait else _UNREAD,
                                     drop_if_empty=queued or day in emptied,
                                     may_wait=plan.may_wait(partition, day))
        if status is ItemStatus.BUSY:
            busy.append((partition, guild, day))
            return
        if queued and status in done and not ctx.dry_run:
            ctx.writer.queued_done(partition, day, plan.queued[(partition, day)], plan.day1[partition])
        remaining[partition] -= 1
        if not remaining[partition] and not wait:
            loaded.pop(partition, None)  # done with this partition: free its messages
        counted(status)

    for items, wait in ((plan.work, False), (busy, True)):
        tasks = [asyncio.ensure_future(one(*item, wait=wait)) for item in list(items)]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for t in tasks:  # a store outage stops the run: cancel the rest, keep what is written
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise


def biggest_first(parts: list[dict]) -> list[dict]:
    """Partitions by their messages in the run's window, most first: shared out in this order,
    the busiest one does not start last and keep one process busy after the others are done."""
    return sorted(parts, key=lambda p: -p.get("messages", 0))


async def spread_dailies(ctx: RunContext, n: int, plan: RunPlan, counted: Callable[[ItemStatus], None]) -> None:
    """The daily stage in n processes (stages/processes.py), a partition at a time."""
    guild_of = {p["partition"]: p["guild_id"] for p in plan.partitions}

    async def partition_days(c: RunContext, partition: str) -> list[ItemStatus]:
        one = dataclasses.replace(plan, work=[(partition, guild_of[partition], d) for d in plan.by_partition[partition]],
                                  by_partition={partition: plan.by_partition[partition]})
        statuses: list[ItemStatus] = []
        await run_dailies(c, one, statuses.append)
        return statuses

    def report(statuses: list[ItemStatus]) -> None:
        for status in statuses:
            counted(status)

    order = [p["partition"] for p in biggest_first(plan.partitions) if p["partition"] in plan.by_partition]
    await spread(ctx, n, order, partition_days, report)


async def spread_merges(ctx: RunContext, n: int, scopes: list[str], day1: Day1For,
                         in_run: Callable[[int | None], bool]) -> None:
    """The merge stage in n processes: planned here, shared out a group of users at a time (a
    user's scopes stay in one process: they share its facts and lines, run_merge_jobs) — not
    workers/jobs.py merge_groups, which splits a user's scopes by guild. Each group's inputs are
    read by the process that merges it, for its users only (as a worker's merge job reads them):
    the plan's inputs for every user are freed before the fork, so no process holds a copy of
    them — a child reading inherited inputs copies every page it touches (reference counts)."""
    ctx.writer.flush()  # merges read the dailies and historicals written so far
    merges = plan_merges(ctx, scopes, day1, in_run, plan_only=True)
    audience, day1s = merges.inputs.audience, merges.day1s
    by_user: dict[int, list] = {}
    for job in merges.jobs:
        by_user.setdefault(job[1], []).append(job)
    del merges  # the whole run's inputs: each group reads its own
    users = list(by_user.values())
    size = max(MERGE_USERS, -(-len(users) // (n * MERGE_UNITS)))
    groups = [[job for jobs in users[i:i + size] for job in jobs] for i in range(0, len(users), size)]

    async def group(c: RunContext, jobs: list) -> None:
        inputs = MergeInputs(c.store, day1s, {u for _scope, u in jobs}, audience=audience,
                             fact_columns=MERGED_FACT_COLUMNS)
        await run_merge_jobs(c, jobs, day1, inputs)
    await spread(ctx, n, groups, group, lambda _report: None)


async def run_historicals(ctx: RunContext, n: int, parts: list[dict], day1: Day1For,
                          advance: Callable[[], None]) -> None:
    """The historical stage: each partition's rows as of its day 1, in n processes."""
    async def historical(c: RunContext, p: dict) -> None:
        await run_historical(c, p["partition"], p["guild_id"], day1(p["guild_id"]))
    await spread(ctx, n, biggest_first(parts) if n > 1 else parts, historical, lambda _report: advance())
