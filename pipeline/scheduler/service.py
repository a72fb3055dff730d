"""`mempipe serve`: a long-running APScheduler 3.11 AsyncIOScheduler, run only by the leader.

    standby ──(lock taken, every takeover_s)──▶ leader: schedule jobs, heartbeat every heartbeat_s
       ▲                                              │
       └────────── lock lost (connection dropped) ◀───┘        stop_event ──▶ clean shutdown

The job store is APScheduler's in-memory one: the jobs are rebuilt from the config at every
start, and what must survive a restart (when each job last ran, how it ended) is in our own
tables (`scheduler_state`, `scheduler_leader`), from which a new leader also catches up a run
that was missed while nobody led (schedule.catch_up_due). A pickled job store would add a
second source of truth, and two schedulers must never share one anyway.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import uuid
from typing import Any, Callable

from apscheduler.executors.asyncio import AsyncIOExecutor
from apscheduler.jobstores.memory import MemoryJobStore
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from ..clock import Clock, system_clock
from ..config import Settings
from ..errors import MempipeError
from ..store import Store
from . import jobs
from .leader import Leader
from .schedule import REFRESH, build_triggers, job_options, job_specs, missed_while_away

log = logging.getLogger("pipeline.scheduler")
UTC = dt.timezone.utc


async def _sleep_until(stop: asyncio.Event, seconds: float) -> bool:
    """Wait `seconds` or until `stop` is set; True when stopping."""
    try:
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    except asyncio.TimeoutError:
        pass
    return stop.is_set()


async def serve(settings: Settings, *, clock: Clock = system_clock, stop_event: asyncio.Event | None = None,
                run_now: bool | None = None, store: Store | None = None, identity: str | None = None,
                make_summarizer: Callable[[Settings], Any] | None = None,
                on_leader: Callable[[bool], None] | None = None) -> None:
    """Run until `stop_event` is set: wait to become leader, then schedule the jobs until the
    leadership is lost or we are told to stop. `run_now` (default: scheduler.run_on_start) runs
    the refresh as soon as this process leads. Returns after a clean shutdown."""
    stop = stop_event or asyncio.Event()
    s = settings.scheduler
    run_now = s.run_on_start if run_now is None else run_now
    own_store = store is None
    if store is None:
        store = Store.open(settings.database_url, pool_size=settings.pool_size,
                           max_overflow=settings.pool_max_overflow)
    leader = Leader(store, identity=identity, check_s=s.heartbeat_s)
    waiting_logged = False
    try:
        while not stop.is_set():
            try:
                got = leader.try_acquire()
            except MempipeError as exc:  # not "another process leads": nobody may, the database is away
                log.warning("cannot reach the leader lock (retrying in %s s): %s", s.takeover_s, exc,
                            extra={"fields": {"identity": leader.identity}})
                waiting_logged = False  # once it answers again, say who leads
                await _sleep_until(stop, s.takeover_s)
                continue
            if got:
                waiting_logged = False
                if on_leader:
                    on_leader(True)
                failed = False
                try:
                    await _lead(store, settings, leader, clock=clock, stop=stop, run_now=run_now,
                                make_summarizer=make_summarizer)
                except MempipeError as exc:  # e.g. the database went away: stand by and retry
                    log.error("leading failed: %s", exc, extra={"fields": {"identity": leader.identity}})
                    failed = True
                finally:
                    leader.release()
                    if on_leader:
                        on_leader(False)
                if failed:
                    await _sleep_until(stop, s.takeover_s)
                continue
            if not waiting_logged:
                current = _current_leader(store)
                log.info("standby: another process leads; trying again every %s s", s.takeover_s,
                         extra={"fields": {"identity": leader.identity, "leader": current}})
                waiting_logged = True
            await _sleep_until(stop, s.takeover_s)
    finally:
        leader.release()
        if own_store:
            store.close()
    log.info("stopped", extra={"fields": {"identity": leader.identity}})


def _current_leader(store: Store) -> str | None:
    try:
        row = store.scheduler_leader()
    except MempipeError:
        return None
    return row["holder"] if row and row["released_at"] is None else None


def make_scheduler(rt: jobs.Runtime, settings: Settings, *, now: dt.datetime, run_now: bool = False,
                   states: dict[str, dict] | None = None) -> AsyncIOScheduler:
    """An AsyncIOScheduler (not started) with every job: in-memory job store, fixed ids,
    coalesce / max_instances / misfire grace from schedule.job_options. A job is due at once
    when the catch-up rule says a fire was missed while nobody led (or `run_now` for refresh)."""
    scheduler = AsyncIOScheduler(jobstores={"default": MemoryJobStore()},
                                 executors={"default": AsyncIOExecutor()}, timezone=UTC)
    options = job_options(settings)
    states = states or {}
    grace = settings.scheduler.misfire_grace_s
    real_now = dt.datetime.now(UTC)  # APScheduler fires by the real clock
    for spec in job_specs(settings):
        missed = missed_while_away(spec.trigger, states.get(spec.id), now, grace)
        extra = {}
        if missed is not None or (run_now and spec.id == REFRESH):
            extra["next_run_time"] = real_now
            if missed is not None:
                log.info("catching up %s (missed the run due at %s)", spec.id, missed.isoformat(),
                         extra={"fields": {"job": spec.id, "missed": missed.isoformat()}})
        scheduler.add_job(spec.func, trigger=spec.trigger, id=spec.id, name=spec.id,
                          kwargs={"service": rt.key, **spec.kwargs}, **options, **extra)
    return scheduler


async def _lead(store: Store, settings: Settings, leader: Leader, *, clock: Clock, stop: asyncio.Event,
                run_now: bool, make_summarizer) -> None:
    s = settings.scheduler
    since = clock()
    rt = jobs.Runtime(store, settings, clock=clock, make_summarizer=make_summarizer,
                      key=f"{leader.identity}/{uuid.uuid4().hex[:8]}")
    jobs.register(rt)
    scheduler = None
    try:
        store.leader_heartbeat(leader.identity, leader.pid, leader.host, since, since)
        scheduler = make_scheduler(rt, settings, now=since, run_now=run_now, states=store.scheduler_states())
        rt.scheduler = scheduler
        scheduler.start()  # inside the running loop (AsyncIOScheduler needs it)
        _record_next_runs(store, scheduler)
        log.info("leading: scheduler started", extra={"fields": {
            "identity": leader.identity, "lock": leader.kind,
            "jobs": sorted(build_triggers(settings))}})
        while not await _sleep_until(stop, s.heartbeat_s):
            if not leader.alive():
                log.error("leadership lost (the lock's connection dropped): stopping the jobs",
                          extra={"fields": {"identity": leader.identity}})
                break
            try:
                store.leader_heartbeat(leader.identity, leader.pid, leader.host, since, clock())
                _record_next_runs(store, scheduler)
            except MempipeError as exc:  # the lock decides who leads; the row is informational
                log.warning("could not record the heartbeat: %s", exc)
    finally:
        if stop.is_set():
            log.info("shutting down: taking no new jobs, cancelling the one in flight (if any)",
                     extra={"fields": {"running": len(rt.work)}})
        if scheduler is not None and scheduler.running:
            scheduler.pause()  # takes no new work from here on
        await rt.stop()
        if scheduler is not None and scheduler.running:
            scheduler.shutdown(wait=False)
            await asyncio.sleep(0)  # AsyncIOScheduler shuts down on the loop's next turn
        jobs.unregister(rt)
        try:
            store.leader_released(leader.identity, clock())
        except MempipeError as exc:
            log.warning("could not record the release of the leadership: %s", exc)


def _record_next_runs(store: Store, scheduler: AsyncIOScheduler) -> None:
    store.scheduler_next_runs({job.id: job.next_run_time for job in scheduler.get_jobs()})
