"""The worker's side of a job: the same stage function the in-process run calls, on a RunContext
built in the worker process, then the job's report.

Each task is idempotent by input hash: the stage finds a fresh row and does nothing (a cache hit),
so a job run twice — retried after its worker died, or deferred again by a later run — costs no
second model call for what was written. After the stage the job writes what is buffered, adds its
counts to the run's pipeline_runs row (`store.add_run_counts`, atomic) and reports to the run on
its channel (pipeline/store/queue.py): the folds it made, its counts without a column, or why it
failed (then it raises, and procrastinate marks the job failed).
"""

from __future__ import annotations

import datetime as dt
import logging
import time

from ..calendar import parse_scope
from ..errors import ErasedDuringRun
from ..safety import redact
from ..stages.context import REPORTED_COUNTS, RunContext
from ..stages.daily import load_partition_days, run_daily
from ..stages.historical import run_historical
from ..stages.merge import run_merge_jobs
from ..stages.merge_inputs import MERGED_FACT_COLUMNS, MergeInputs
from ..stages.refresh import ItemStatus
from .jobs import DAILY, HISTORICAL, MERGES, day1_by_zone

log = logging.getLogger(__name__)
RUNTIME = "mempipe"  # the key of the worker's runtime in procrastinate's job context
_DONE = (ItemStatus.COMPUTED, ItemStatus.CACHED, ItemStatus.EMPTY)


async def daily(ctx: RunContext, item: dict) -> None:
    """One partition-day (pipeline/stages/daily.py), as `runner._run_dailies` runs it (in one of
    the worker's slots): a day of the recompute queue leaves it once computed, found fresh or
    found empty."""
    partition, guild, day = item["partition"], item["guild_id"], dt.date.fromisoformat(item["day"])
    queued = "queued_at" in item
    emptied: set[dt.date] = set()
    async with ctx.slot():  # the worker's items in flight (and their claims' connections) stay within its slots
        pd = load_partition_days(ctx, partition, guild, [day], emptied).get(day)
        status = await run_daily(ctx, partition, guild, day, pd=pd, drop_if_empty=queued or day in emptied,
                                 may_wait=item.get("may_wait", False))
    if queued and status in _DONE:
        ctx.writer.queued_done(partition, day, dt.datetime.fromisoformat(item["queued_at"]),
                               dt.date.fromisoformat(item["day1"]))


async def historical(ctx: RunContext, item: dict) -> None:
    """One partition's past weeks as of its day 1 (pipeline/stages/historical.py)."""
    await run_historical(ctx, item["partition"], item["guild_id"], dt.date.fromisoformat(item["day1"]))


async def merges(ctx: RunContext, item: dict) -> None:
    """A group of (scope, user) contexts (pipeline/stages/merge.py), from inputs narrowed to its
    users: the rows a whole run's inputs give them, read for these users only."""
    pairs = [(parse_scope(scope), user) for scope, user in item["pairs"]]
    day1_for = day1_by_zone(item["zones"], ctx.tz_for_guild)
    ctx.folds.update({(p, dt.date.fromisoformat(d)): h for p, d, h in item["folds"]})
    inputs = MergeInputs(ctx.store, [dt.date.fromisoformat(d) for d in item["day1s"]], {u for _s, u in pairs},
                         fact_columns=MERGED_FACT_COLUMNS)
    await run_merge_jobs(ctx, pairs, day1_for, inputs)


BODIES = {DAILY: daily, HISTORICAL: historical, MERGES: merges}


async def run_job(runtime, task: str, key: str, run: dict, item: dict) -> None:
    """Run one job in this worker process and report it (see the module's docstring)."""
    ctx = runtime.context(run, force=item.get("force", False))
    store, t0 = ctx.store, time.monotonic()
    try:
        await BODIES[task](ctx, item)
        ctx.writer.flush()
    except BaseException as exc:
        try:
            ctx.writer.flush()  # items finished before the failure are whole: keep them
            store.add_run_counts(run["id"], ctx.stats.columns())
            if isinstance(exc, Exception):
                # stopped by a control (an erase, forget or clear): the run may be run again at once
                store.notify_run(run["id"], {"key": key, "error": redact(f"{exc.__class__.__name__}: {exc}"),
                                             **({"stopped": True} if isinstance(exc, ErasedDuringRun) else {})})
        except Exception:
            log.exception("%s: could not record what the failed job did", key)
        raise
    store.add_run_counts(run["id"], ctx.stats.columns())
    store.notify_run(run["id"], {
        "key": key,
        "folds": [[p, d.isoformat(), h] for (p, d), h in sorted(ctx.folds.items())] if task == DAILY else [],
        "reported": {n: v for n in REPORTED_COUNTS if (v := getattr(ctx.stats, n))},
    })
    s = ctx.stats
    log.info("%s done in %.1f s: %d summarized, %d model call(s), %d cache hit(s), %d error(s)", key,
             time.monotonic() - t0, s.summarized, s.llm_calls, s.cache_hits, s.errors)


def register(app) -> None:
    """mempipe's tasks on a procrastinate App (a worker's). Each gets the job context and finds
    the worker's runtime in it."""
    for name in BODIES:
        async def task(context, *, run: dict, item: dict, _name: str = name) -> None:
            await run_job(context.additional_context[RUNTIME], _name, context.job.lock, run, item)

        app.task(name=name, pass_context=True, queue="mempipe")(task)  # each job names its queue (workers.queue)
