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
