"""The scheduler's jobs: importable module-level coroutines (APScheduler refers to them as
"pipeline.scheduler.jobs:refresh_job" etc.; their arguments are plain strings, as a persistent
job store would need), and `run_job`, which does the work and can be called directly (tests do,
with an injected clock).

Every run: one job at a time per service (an asyncio lock; jobs overlap in their work, and on
SQLite a second run would wait for the first's file lock anyway), a `scheduler_state` row
(started, finished, outcome, last ok), and one structured log line with the job, partitions,
calls, tokens, duration and outcome.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
import time
from typing import Any, Callable

from ..clock import Clock, system_clock
from ..config import Settings
from ..errors import ErasedDuringRun, MempipeError
from ..safety import redact
from ..store import Store
from .schedule import BATCH_POLL, REFRESH, RETENTION, ROLLOVER, in_zone, kind_of

log = logging.getLogger("pipeline.scheduler")
CANCELLED = "cancelled by shutdown"
# A run stopped because a user was erased or a memory was forgotten or cleared while it worked
# (ErasedDuringRun, RemovedDuringRun) wrote nothing after it: the job runs again this soon instead
# of at its next regular time (a nightly one would otherwise leave every context a day behind),
# at most RERUNS_AT_MOST times in a row (controls that keep coming must not keep the service busy).
RERUN_AFTER_S = 60.0
RERUNS_AT_MOST = 3


class Runtime:
    """What the jobs of one `serve` leadership share: the store, settings, clock, a way to make a
    summarizer (one per run: a run closes its summarizer's client at the end), the job lock and
    the running jobs (so a shutdown can cancel them)."""

    def __init__(self, store: Store, settings: Settings, *, clock: Clock = system_clock,
                 make_summarizer: Callable[[Settings], Any] | None = None, key: str = "default"):
        if make_summarizer is None:
            from ..summarize import make_summarizer
        from ..app import App

        self.store, self.settings, self.clock, self.key = store, settings, clock, key
        self.make_summarizer = make_summarizer
        self.app = App(settings, store, clock, make_summarizer)
        self.lock = asyncio.Lock()
        self.stopping = False
        self.work: set[asyncio.Task] = set()   # the running job bodies (what a shutdown cancels)
        self.jobs: set[asyncio.Task] = set()   # the run_job wrappers (what a shutdown waits for)
        self.scheduler = None                  # set by the service: next run times for the state
        self.last_report: dict | None = None
        self.reruns: dict[str, int] = {}       # job -> reruns in a row after a run a control stopped

    async def stop(self, timeout: float = 30.0) -> None:
        """Take no new work; cancel the job in flight (its partition-day in progress is written
        whole or not at all: each is one transaction) and wait for the wrappers to record it."""
        self.stopping = True
        for task in list(self.work):
            task.cancel(CANCELLED)
        pending = [t for t in self.jobs if not t.done() and t is not asyncio.current_task()]
        if pending:
            done, still = await asyncio.wait(pending, timeout=timeout)
            if still:
                log.warning("%d job(s) did not stop within %.0f s", len(still), timeout)


_RUNTIMES: dict[str, Runtime] = {}


def register(rt: Runtime) -> None:
    _RUNTIMES[rt.key] = rt


def unregister(rt: Runtime) -> None:
    if _RUNTIMES.get(rt.key) is rt:
        del _RUNTIMES[rt.key]


def _runtime(service: str) -> Runtime:
    try:
        return _RUNTIMES[service]
    except KeyError:
        raise MempipeError(f"no running mempipe service {service!r} for this job") from None


# ---------------------------------------------------------------- what APScheduler calls

async def refresh_job(service: str) -> None:
    await run_job(_runtime(service), REFRESH)


async def rollover_job(service: str, zone: str) -> None:
    await run_job(_runtime(service), f"{ROLLOVER}:{zone}")


async def retention_job(service: str) -> None:
    await run_job(_runtime(service), RETENTION)


async def batch_poll_job(service: str) -> None:
    await run_job(_runtime(service), BATCH_POLL)


# ---------------------------------------------------------------- the work

async def _pipeline(rt: Runtime, job_id: str, report: dict) -> None:
    from ..runner import execute

    kind, zone = kind_of(job_id)
    ctx = rt.app.run_context()
    report["_stats"] = ctx.stats
    only = in_zone(rt.settings, zone) if kind == ROLLOVER else None
    result = await execute(ctx, kind, None, None, only_guilds=only)
    report["run_id"] = result.run_id


async def _retention(rt: Runtime, job_id: str, report: dict) -> None:
    from ..retention import apply_retention

    # In a worker thread, so heartbeats go on during a long first retention. Each batch is its
    # own transaction; a shutdown waits for the running call to finish its batches.
    deleted = await asyncio.to_thread(apply_retention, rt.store, rt.settings, now=rt.clock(),
                                      batch_size=rt.settings.scheduler.retention_batch_size)
    report["deleted"] = dict(deleted)
    report["rows_deleted"] = sum(deleted.values())


async def _batch_poll(rt: Runtime, job_id: str, report: dict) -> None:
    """gemini.batch: ask the server about the submitted jobs; when answers came in, start the runs
    that submitted them again (each once, in the order they were submitted) to use them."""
    from ..llm.batch_jobs import poll

    report.update(await poll(rt.app.run_context, rt.store, rt.settings, rt.clock))


def _stats_fields(stats) -> dict:
    if stats is None:
        return {}
    s = dataclasses.asdict(stats)
    return {"partitions": s["partition_days"], "summarizer_calls": s["summarizer_calls"],
            "llm_calls": s["llm_calls"], "tokens": s["prompt_tokens"] + s["output_tokens"],
            "prompt_tokens": s["prompt_tokens"], "output_tokens": s["output_tokens"],
            "cache_hits": s["cache_hits"], "fallbacks": s["fallbacks"], "errors": s["errors"]}


async def run_job(rt: Runtime, job_id: str) -> dict:
    """Run one job now and record it. Returns its report (also logged as one line). A failure is
    recorded and logged, never raised: the schedule goes on. A shutdown cancels the body; the
    run is then recorded `cancelled` (its pipeline_runs row `failed`, 'cancelled by shutdown')."""
    task = asyncio.current_task()
    rt.jobs.add(task)
    try:
        async with rt.lock:
            if rt.stopping:
                return {"job": job_id, "outcome": "skipped"}
            return await _run_locked(rt, job_id)
    finally:
        rt.jobs.discard(task)


async def _run_locked(rt: Runtime, job_id: str) -> dict:
    kind, _ = kind_of(job_id)
    started, t0 = rt.clock(), time.monotonic()
    report: dict[str, Any] = {}
    try:
        rt.store.scheduler_job_started(job_id, started)
    except MempipeError as exc:
        log.warning("could not record the start of %s: %s", job_id, exc)
    body = _retention if kind == RETENTION else _batch_poll if kind == BATCH_POLL else _pipeline
    work = asyncio.ensure_future(body(rt, job_id, report))
    rt.work.add(work)
    outcome, error, stopped = "ok", None, False
    try:
        await work
    except asyncio.CancelledError:
        me = asyncio.current_task()
        if me is not None and me.cancelling():  # this wrapper itself is being cancelled
            work.cancel(CANCELLED)
            outcome, error = "cancelled", CANCELLED
            _finish(rt, job_id, started, t0, outcome, error, report)
            raise
        outcome, error = "cancelled", CANCELLED
    except Exception as exc:  # recorded and logged; the schedule goes on
        outcome = "failed"
        error = redact(str(exc) if isinstance(exc, MempipeError) else f"{exc.__class__.__name__}: {exc}")
        stopped = isinstance(exc, ErasedDuringRun)
    finally:
        rt.work.discard(work)
    return _finish(rt, job_id, started, t0, outcome, error, report, stopped=stopped)


def _finish(rt: Runtime, job_id: str, started, t0: float, outcome: str, error: str | None,
            report: dict, *, stopped: bool = False) -> dict:
    fields: dict[str, Any] = {"job": job_id, "outcome": outcome}
    if not stopped:  # done, or failed otherwise: the next stop starts a new count
        rt.reruns.pop(job_id, None)
    elif rt.reruns.get(job_id, 0) < RERUNS_AT_MOST and _run_again_soon(rt, job_id):
        rt.reruns[job_id] = rt.reruns.get(job_id, 0) + 1
        fields["rerun"] = rt.reruns[job_id]
    fields.update(_stats_fields(report.get("_stats")))
    if "batch_jobs_collected" in report:
        fields["batch_jobs_collected"], fields["run_ids"] = report["batch_jobs_collected"], report["run_ids"]
    if "rows_deleted" in report:
        fields["rows_deleted"] = report["rows_deleted"]
        fields["deleted"] = report["deleted"]
    fields["duration_s"] = round(time.monotonic() - t0, 3)
    fields["run_id"] = report.get("run_id")
    if error:
        fields["error"] = error
    next_run = _next_run(rt, job_id)
    if next_run is not None:
        fields["next_run_at"] = next_run.isoformat()
    try:
        rt.store.scheduler_job_finished(job_id, outcome=outcome, started_at=started, now=rt.clock(),
                                        error=error, run_id=report.get("run_id"),
                                        report={k: v for k, v in fields.items() if k not in ("job", "error")})
        if next_run is not None:
            rt.store.scheduler_next_runs({job_id: next_run})
    except MempipeError as exc:
        log.warning("could not record the end of %s: %s", job_id, exc)
    level = logging.INFO if outcome == "ok" else logging.WARNING if outcome == "cancelled" else logging.ERROR
    log.log(level, "job %s %s", job_id, outcome, extra={"fields": fields})
    rt.last_report = fields
    return fields


def _run_again_soon(rt: Runtime, job_id: str) -> bool:
    """Move the job's next run to RERUN_AFTER_S from now (APScheduler fires by the real clock)
    unless it is due sooner anyway; its trigger's own times go on after that run."""
    if rt.scheduler is None:
        return False
    at = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=RERUN_AFTER_S)
    try:
        job = rt.scheduler.get_job(job_id)
        if job is None:
            return False
        due = getattr(job, "next_run_time", None)
        if due is None or due > at:
            rt.scheduler.modify_job(job_id, next_run_time=at)
    except Exception as exc:  # noqa: BLE001 — the scheduler is shutting down: the regular time stands
        log.warning("could not run %s again soon: %s", job_id, exc)
        return False
    return True


def _next_run(rt: Runtime, job_id: str):
    if rt.scheduler is None:
        return None
    try:
        job = rt.scheduler.get_job(job_id)
    except Exception:  # the scheduler is shutting down
        return None
    return getattr(job, "next_run_time", None) if job is not None else None
