"""A run on workers (pipeline/workers/dispatch.py) when the queue is not as it left it: a job
whose worker died while another run deferred its twin, a failed job deleted before the run saw
it, no worker at all. The queue's states are built with SQL, as procrastinate leaves them."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
import sqlalchemy as sa

from pipeline.ingest import import_files
from pipeline.runner import execute
from pipeline.summarize import ExtractiveSummarizer
from pipeline.testing import RecordingSummarizer
from pipeline.workers.dispatch import NoWorker
from pipeline.workers.jobs import daily_jobs
from pipeline.workers.queue import opened, queue_app
from pipeline.workers.worker import work
from tests.conftest import SAMPLE
from tests.helpers import make_context
from tests.integration.test_worker_runs import NOW, _with_worker, pg  # noqa: F401 (pg: the fixture)

DEADLINE_S = 60.0  # a run that needs longer is stuck


def _sql(store, statement: str, **params):
    with store.engine.begin() as conn:
        return conn.execute(sa.text(statement), params).fetchall()


async def _deferred(store, run: asyncio.Future) -> list[int]:
    """The ids of the jobs the run deferred, once there are some (no worker takes them yet)."""
    for _ in range(int(DEADLINE_S / 0.05)):
        assert not run.done(), run.exception() if not run.cancelled() else "cancelled"
        ids = [r.id for r in _sql(store, "SELECT id FROM procrastinate_jobs WHERE status = 'todo' ORDER BY id")]
        if ids:
            return ids
        await asyncio.sleep(0.05)
    raise AssertionError("the run deferred no job")


def test_a_stalled_job_whose_twin_waits_is_ended_and_the_twin_does_the_item(pg):
    """Job J's worker died while J was `doing`; meanwhile another run deferred J's twin (same lock
    and queueing lock: procrastinate's queueing-lock index is unique among `todo` jobs only). J
    cannot go back to the queue and the twin cannot start while J holds the lock: the run ends J
    and waits for the twin, which a worker does."""
    store, s = pg
    import_files(store, [str(SAMPLE)], s)
    ctx = make_context(store, s, now=NOW)

    async def go():
        run = asyncio.ensure_future(execute(ctx, "run", None, dt.date(2026, 11, 4)))
        job = (await _deferred(store, run))[0]
        with store.engine.begin() as conn:  # worker_id NULL: no live worker holds it (stalled)
            conn.execute(sa.text("UPDATE procrastinate_jobs SET status = 'doing' WHERE id = :id"), {"id": job})
            conn.execute(sa.text(
                "INSERT INTO procrastinate_jobs (queue_name, task_name, lock, queueing_lock, args, status) "
                "SELECT queue_name, task_name, lock, queueing_lock, args, 'todo' FROM procrastinate_jobs "
                "WHERE id = :id"), {"id": job})
        result = await asyncio.wait_for(_with_worker(s, lambda: run), DEADLINE_S)
        return job, result

    job, result = asyncio.run(go())
    assert result.status == "ok"
    assert store.runs(1)[0]["partition_days"] == 14
    assert _sql(store, "SELECT id, status::text FROM procrastinate_jobs") == [(job, "aborted")]  # the twin succeeded


class _Slow(RecordingSummarizer):
    """Takes `seconds` over each partition-day: a job longer than workers.stalled_s."""

    def __init__(self, settings, seconds: float):
        super().__init__(ExtractiveSummarizer(settings.summary))
        self.seconds, self.done = seconds, 0

    async def daily(self, pd):
        await asyncio.sleep(self.seconds)
        self.done += 1
        return await self.inner.daily(pd)


def test_a_stopping_worker_keeps_its_heartbeat_until_its_running_job_is_done(pg):
    """procrastinate's worker stops heartbeating before it waits for its running jobs: without
    mempipe's own heartbeat meanwhile, a job longer than stalled_s would be listed stalled (and a
    waiting run would hand it to another worker while this one still runs it)."""
    store, base = pg
    s = base.model_copy(deep=True)
    s.workers = s.workers.model_copy(update={"heartbeat_s": 0.2, "stalled_s": 1.0})
    import_files(store, [str(SAMPLE)], s)
    partition, guild, ts = _sql(store, "SELECT partition, guild_id, min(ts) FROM chat_history "
                                       "GROUP BY partition, guild_id ORDER BY partition LIMIT 1")[0]
    [spec] = daily_jobs([(partition, guild, ts.date())], force=False, queued={}, day1={})
    slow = _Slow(s, seconds=3 * s.workers.stalled_s)

    async def go():
        queue = queue_app(store.engine.url)
        async with opened(queue):
            job = await queue.job_manager.defer_job_async(queue.configure_task(
                spec.task, lock=spec.key, queueing_lock=spec.queueing_lock, queue=s.workers.queue,
            ).make_new_job(**spec.kwargs({"id": 0, "kind": "run"})))  # no run row: counts go nowhere
            stop = asyncio.Event()
            worker = asyncio.ensure_future(work(s, concurrency=1, stop=stop, summarizer=slow))
            for _ in range(int(DEADLINE_S / 0.05)):
                if _sql(store, "SELECT status::text FROM procrastinate_jobs WHERE id = :id", id=job.id) == [("doing",)]:
                    break
                await asyncio.sleep(0.05)
            stop.set()  # as SIGTERM does (pipeline/cli/worker.py)
            stalled = set()
            while not worker.done():
                stalled |= {j.id for j in await queue.job_manager.get_stalled_jobs(
                    queue=s.workers.queue, seconds_since_heartbeat=s.workers.stalled_s)}
                await asyncio.sleep(0.1)
            await worker
        return job.id, stalled

    job, stalled = asyncio.run(go())
    assert slow.done == 1 and stalled == set()
    assert _sql(store, "SELECT id FROM procrastinate_jobs WHERE id = :id", id=job) == []  # succeeded, deleted


@pytest.mark.parametrize("elsewhere", [False, True], ids=["no worker", "a worker on another queue"])
def test_a_run_no_worker_takes_fails_after_no_worker_s_and_cancels_its_jobs(pg, elsewhere):
    store, base = pg
    s = base.model_copy(deep=True)
    s.workers = s.workers.model_copy(update={"no_worker_s": 1.5})
    import_files(store, [str(SAMPLE)], s)
    ctx = make_context(store, s, now=NOW)
    other = s.model_copy(deep=True)
    other.workers = other.workers.model_copy(update={"queue": "someone-else"})

    async def go():
        run = execute(ctx, "run", None, dt.date(2026, 11, 4))
        if elsewhere:  # alive, heartbeating, and never taking a job of queue 'mempipe'
            return await asyncio.wait_for(_with_worker(other, lambda: run), DEADLINE_S)
        return await asyncio.wait_for(run, DEADLINE_S)

    with pytest.raises(NoWorker) as failed:
        asyncio.run(go())
    assert str(failed.value).startswith("no worker took a job of queue 'mempipe' for 2 s (")
    assert str(failed.value).endswith(": start `mempipe worker` with [workers] queue = 'mempipe' on this database "
                                      "(or set [workers] enabled = false)")
    run = store.runs(1)[0]
    assert run["status"] == "failed" and run["error"] == str(failed.value)
    statuses = {status for (status,) in _sql(store, "SELECT DISTINCT status::text FROM procrastinate_jobs")}
    assert statuses == {"cancelled"}  # the run's jobs, none left waiting


def test_a_failed_job_deleted_before_the_run_saw_it_is_queued_again(pg):
    """A job failed and was deleted between two polls of the run (erase and retention drop ended
    jobs: queue_drop_ended): gone, but without the report a succeeded job sends first — not done."""
    store, s = pg
    import_files(store, [str(SAMPLE)], s)
    ctx = make_context(store, s, now=NOW)

    async def go():
        run = asyncio.ensure_future(execute(ctx, "run", None, dt.date(2026, 11, 4)))
        await _deferred(store, run)
        [(job,)] = _sql(store, "SELECT j.id FROM procrastinate_jobs j WHERE EXISTS (SELECT 1 FROM chat_history c "
                               "WHERE c.partition = j.args->'item'->>'partition' AND "
                               "CAST(c.ts AT TIME ZONE 'UTC' AS date) = CAST(j.args->'item'->>'day' AS date)) "
                               "ORDER BY j.id LIMIT 1")  # a partition-day with messages (sample: UTC)
        with store.engine.begin() as conn:  # through the statuses procrastinate's triggers accept
            for status in ("doing", "failed"):
                conn.execute(sa.text("UPDATE procrastinate_jobs SET status = CAST(:s AS procrastinate_job_status) "
                                     "WHERE id = :id"), {"s": status, "id": job})
            assert store.queue_drop_ended(s.workers.queue, conn=conn) == 1
        return await asyncio.wait_for(_with_worker(s, lambda: run), DEADLINE_S)

    assert asyncio.run(go()).status == "ok"
    assert store.runs(1)[0]["partition_days"] == 14  # the dropped job's partition-day too
    assert _sql(store, "SELECT count(*) FROM partition_days") == [(14,)]


def test_a_run_failing_midway_through_deferring_cancels_what_it_deferred(pg, monkeypatch):
    from procrastinate.manager import JobManager

    store, s = pg
    import_files(store, [str(SAMPLE)], s)
    monkeypatch.setattr("pipeline.workers.dispatch.DEFER_BATCH", 5)
    batch = JobManager.batch_defer_jobs_async
    calls = []

    async def second_fails(self, jobs):
        calls.append(len(jobs))
        if len(calls) == 2:
            raise RuntimeError("the connection dropped")
        return await batch(self, jobs)

    monkeypatch.setattr(JobManager, "batch_defer_jobs_async", second_fails)
    ctx = make_context(store, s, now=NOW)
    with pytest.raises(RuntimeError, match="the connection dropped"):
        asyncio.run(asyncio.wait_for(execute(ctx, "run", None, dt.date(2026, 11, 4)), DEADLINE_S))
    assert calls == [5, 5]
    assert _sql(store, "SELECT status::text, count(*) FROM procrastinate_jobs GROUP BY 1") == [("cancelled", 5)]
