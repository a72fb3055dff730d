"""A scheduled run that a control stopped (a user erased, a memory forgotten or cleared while it
worked: it writes nothing after that) runs again a minute later, not at the job's next regular
time — a nightly one would otherwise leave every context a day behind — and at most
RERUNS_AT_MOST times in a row; any other failure waits for the regular time (pipeline/scheduler/
jobs.py). In-process, with the service's real scheduler (paused: nothing fires on its own)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt

from pipeline.clock import fixed_clock
from pipeline.controls import OPERATOR, clear
from pipeline.ingest import ingest_messages
from pipeline.scheduler import jobs
from pipeline.scheduler.service import make_scheduler
from tests.integration.test_controls import BO, CLOCK, NOW, anas, others

UTC = dt.timezone.utc
JOB = "rollover:UTC"


def _clear_during_each_run(store, settings) -> dict:
    """While `armed`, another session clears Bo's memory just before the run first writes facts."""
    write, state = store.write_batch, {"armed": True, "fired": 0}

    def racing(*args, **kwargs):
        if state["armed"] and kwargs.get("facts"):
            state["armed"], state["fired"] = False, state["fired"] + 1
            clear(store, settings, BO, requested_by=OPERATOR, clock=CLOCK)
        return write(*args, **kwargs)

    store.write_batch = racing
    return state


@contextlib.asynccontextmanager
async def _paused_scheduler(rt, settings):
    """The service's scheduler with every job, started paused (nothing fires), as rt's."""
    scheduler = make_scheduler(rt, settings, now=NOW)
    scheduler.start(paused=True)
    rt.scheduler = scheduler
    try:
        yield scheduler
    finally:
        scheduler.shutdown(wait=False)


def _far_off(scheduler) -> dt.datetime:
    """The job's next regular run put a day away (APScheduler fires by the real clock: just
    before a local midnight the trigger's own next time is seconds away)."""
    regular = dt.datetime.now(UTC).replace(microsecond=0) + dt.timedelta(days=1)
    scheduler.modify_job(JOB, next_run_time=regular)
    assert scheduler.get_job(JOB).next_run_time == regular
    return regular


def _seconds_from_now(when: dt.datetime) -> float:
    return (when - dt.datetime.now(UTC)).total_seconds()


def test_a_run_a_control_stopped_runs_again_soon_at_most_three_times_in_a_row(store, settings):
    ingest_messages(store, anas() + others(), settings)
    rt = jobs.Runtime(store, settings, clock=fixed_clock(NOW))
    race = _clear_during_each_run(store, settings)

    async def scenario():
        async with _paused_scheduler(rt, settings) as scheduler:
            regular = _far_off(scheduler)
            for n in range(1, jobs.RERUNS_AT_MOST + 1):
                race["armed"] = True
                report = await jobs.run_job(rt, JOB)
                assert report["outcome"] == "failed" and "while this run was working" in report["error"]
                assert report["rerun"] == n
                again = scheduler.get_job(JOB).next_run_time
                assert 0 < _seconds_from_now(again) <= jobs.RERUN_AFTER_S
                assert report["next_run_at"] == again.isoformat()
            scheduler.modify_job(JOB, next_run_time=regular)
            race["armed"] = True  # a fourth in a row: the regular time stands
            report = await jobs.run_job(rt, JOB)
            assert report["outcome"] == "failed" and "rerun" not in report
            assert scheduler.get_job(JOB).next_run_time == regular
            report = await jobs.run_job(rt, JOB)  # nothing stops it: done, and the count starts again
            assert report["outcome"] == "ok" and rt.reruns == {}

    asyncio.run(scenario())
    assert race["fired"] == jobs.RERUNS_AT_MOST + 1


def test_any_other_failure_waits_for_the_regular_time(store, settings):
    ingest_messages(store, anas() + others(), settings)

    def broken(_settings):
        raise RuntimeError("no summarizer today")

    rt = jobs.Runtime(store, settings, clock=fixed_clock(NOW), make_summarizer=broken)

    async def scenario():
        async with _paused_scheduler(rt, settings) as scheduler:
            regular = _far_off(scheduler)
            rt.reruns[JOB] = 2  # two stopped runs before: this failure ends the row
            report = await jobs.run_job(rt, JOB)
            assert report["outcome"] == "failed" and "no summarizer today" in report["error"]
            assert "rerun" not in report and scheduler.get_job(JOB).next_run_time == regular
            assert rt.reruns == {}

    asyncio.run(scenario())
