"""Worker jobs that ended without succeeding keep their arguments (partitions, days, user ids)
in procrastinate_jobs: an erase deletes them, retention after a day (pipeline/store/queue.py
queue_drop_ended). Jobs still to do or running are never touched."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from pipeline.controls import erase
from pipeline.retention import apply_retention
from pipeline.workers.queue import ensure_schema

UTC = dt.timezone.utc
USER = 1160000000000000077


def _job(conn, status: str, queue: str = "mempipe", age_days: float = 0.0) -> int:
    job_id = conn.execute(sa.text(
        "INSERT INTO procrastinate_jobs (queue_name, task_name, args, status) "
        "VALUES (:q, 'mempipe.merge', CAST(:args AS jsonb), 'todo') RETURNING id"),
        {"q": queue, "args": f'{{"users": [["guild:1", {USER}]]}}'}).scalar_one()
    if status != "todo":  # through the statuses procrastinate's triggers accept
        conn.execute(sa.text("UPDATE procrastinate_jobs SET status = 'doing' WHERE id = :id"), {"id": job_id})
        if status != "doing":
            conn.execute(sa.text("UPDATE procrastinate_jobs SET status = CAST(:s AS procrastinate_job_status) "
                                 "WHERE id = :id"), {"s": status, "id": job_id})
    conn.execute(sa.text("UPDATE procrastinate_events SET at = now() - make_interval(secs => :d * 86400) WHERE job_id = :id"),
                 {"d": age_days, "id": job_id})
    return job_id


def _left(store) -> dict[int, str]:
    with store.engine.connect() as conn:
        return {r.id: r.status for r in conn.execute(sa.text("SELECT id, status::text AS status FROM procrastinate_jobs"))}


@pytest.fixture
def queue(db_url, db_kind, store):
    if db_kind != "postgresql":
        pytest.skip("the job queue is PostgreSQL's (SQLite has none: queue_drop_ended is 0 there)")
    ensure_schema(db_url)
    return store


def test_erase_deletes_ended_jobs_and_keeps_live_ones(queue, settings):
    with queue.engine.begin() as conn:
        live = {_job(conn, "todo"), _job(conn, "doing")}
        ended = {_job(conn, "failed"), _job(conn, "cancelled"), _job(conn, "aborted")}
        other_queue = _job(conn, "failed", queue="someone-else")
    assert set(_left(queue)) == live | ended | {other_queue}
    result = erase(queue, settings, USER, requested_by=USER)  # the subject asks
    assert result["rows"]["procrastinate_jobs"] == len(ended)
    assert set(_left(queue)) == live | {other_queue}


def test_retention_deletes_ended_jobs_a_day_old(queue, settings):
    with queue.engine.begin() as conn:
        old = _job(conn, "failed", age_days=2)
        recent = _job(conn, "failed", age_days=0.2)
        old_todo = _job(conn, "todo", age_days=3)
    with queue.engine.connect() as conn:
        now = conn.execute(sa.text("SELECT now()")).scalar_one().astimezone(UTC)
    deleted = apply_retention(queue, settings, now=now)
    assert deleted["procrastinate_jobs"] == 1
    left = set(_left(queue))
    assert old not in left and left == {recent, old_todo}


def test_without_a_queue_nothing_to_delete(db_kind, store, settings):
    # SQLite, or PostgreSQL where `db upgrade` never made the job queue
    assert store.queue_drop_ended(settings.workers.queue) == 0
