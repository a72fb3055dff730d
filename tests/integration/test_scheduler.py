"""The scheduler's jobs and leader election on both databases, run in-process with an injected
clock: catch-up after downtime, per-timezone rollovers, cancellation by a shutdown, retention,
two leaders on one database, and `serve` itself (lead, stand by, take over, stop)."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
import sqlalchemy as sa

from pipeline.clock import fixed_clock
from pipeline.ingest import import_files
from pipeline.scheduler import jobs
from pipeline.scheduler.leader import Leader
from pipeline.scheduler.schedule import build_triggers, catch_up_due, timezone_groups
from pipeline.scheduler.service import make_scheduler, serve
from pipeline.scheduler.status import status
from pipeline.store import Store
from pipeline.summarize import ExtractiveSummarizer
from tests.conftest import SAMPLE
from tests.helpers import RecordingSummarizer

UTC = dt.timezone.utc
G1, G2 = 1150000000000000001, 1150000000000000002
SAMPLE_PARTITION_DAYS = 14  # messages on 2026-11-01..04: 2 guilds, a restricted channel, 2 DMs


def _rows(store, sql, **params):
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.text(sql), params)]


def _partition_days_are_whole(store) -> list[tuple]:
    """Every partition_days row has exactly its user_count daily rows: no partial day."""
    rows = _rows(store, "SELECT p.partition, p.day, p.user_count, "
                        "(SELECT COUNT(*) FROM daily_summaries d WHERE d.partition = p.partition AND d.day = p.day) "
                        "FROM partition_days p ORDER BY p.partition, p.day")
    assert rows and all(r[2] == r[3] for r in rows), rows
    return [(r[0], str(r[1])[:10]) for r in rows]


def _message_days(store) -> set[tuple]:
    """(partition, UTC day) of every message: the partition-days that must exist."""
    out = set()
    for partition, ts in _rows(store, "SELECT partition, ts FROM chat_history"):
        ts = ts if isinstance(ts, dt.datetime) else dt.datetime.fromisoformat(ts.replace("Z", "+00:00"))
        out.add((partition, ts.astimezone(UTC).date().isoformat()))
    return out


def _runtime(store, settings, now, summarizer=None):
    summarizer = summarizer or RecordingSummarizer(ExtractiveSummarizer(settings.summary))
    return jobs.Runtime(store, settings, clock=fixed_clock(now), make_summarizer=lambda _s: summarizer)


# ---------------------------------------------------------------- catch-up

def test_three_days_down_one_rollover_fills_every_missing_day(store, settings):
    import_files(store, [SAMPLE], settings)
    last_ok = dt.datetime(2026, 11, 4, 0, 5, tzinfo=UTC)   # the last rollover before the outage
    store.scheduler_job_started("rollover:UTC", last_ok)
    store.scheduler_job_finished("rollover:UTC", outcome="ok", started_at=last_ok, now=last_ok)
    now = dt.datetime(2026, 11, 7, 9, 0, tzinfo=UTC)      # three midnights later

    # The rule: one coalesced run is due, for the latest missed midnight.
    trigger = build_triggers(settings)["rollover:UTC"]
    state = store.scheduler_states()["rollover:UTC"]
    assert catch_up_due(trigger, state["last_ok_at"], now, settings.scheduler.misfire_grace_s) == \
        dt.datetime(2026, 11, 7, 0, 5, tzinfo=UTC)
    rt = _runtime(store, settings, now)
    due_now = [j.id for j in make_scheduler(rt, settings, now=now, states=store.scheduler_states()).get_jobs()
               if getattr(j, "next_run_time", None) is not None]
    assert due_now == ["rollover:UTC"]

    # The one run (day 1 = 11-07; days 2-7 = 11-01..11-06) fills every missing partition-day.
    report = asyncio.run(jobs.run_job(rt, "rollover:UTC"))
    assert report["outcome"] == "ok" and report["partitions"] == SAMPLE_PARTITION_DAYS
    assert set(_partition_days_are_whole(store)) == _message_days(store)
    assert len(_partition_days_are_whole(store)) == SAMPLE_PARTITION_DAYS
    runs = _rows(store, "SELECT kind, status FROM pipeline_runs")
    assert runs == [("rollover", "ok")]
    assert _rows(store, "SELECT COUNT(*) FROM memory_context")[0][0] > 0
    state = store.scheduler_states()["rollover:UTC"]
    assert state["last_outcome"] == "ok" and state["last_ok_at"] == now and state["last_run_id"] is not None
    assert catch_up_due(trigger, state["last_ok_at"], now, 86400) is None  # nothing left to catch up


def test_each_timezone_rolls_over_its_own_guilds(store, settings):
    s = settings.model_copy(update={"timezones": settings.timezones.model_copy(
        update={"guilds": {G1: "Europe/Lisbon"}})})
    import_files(store, [SAMPLE], s)
    guild_of = dict(_rows(store, "SELECT DISTINCT partition, guild_id FROM chat_history"))
    groups = timezone_groups(s, set(guild_of.values()))
    assert groups == {"UTC": {None, G2}, "Europe/Lisbon": {G1}}
    now = dt.datetime(2026, 11, 5, 0, 10, tzinfo=UTC)

    asyncio.run(jobs.run_job(_runtime(store, s, now), "rollover:Europe/Lisbon"))
    done = {p for p, _ in _partition_days_are_whole(store)}
    assert done == {p for p, g in guild_of.items() if g == G1}  # guild:G1 and its restricted channel

    asyncio.run(jobs.run_job(_runtime(store, s, now), "rollover:UTC"))
    done = {p for p, _ in _partition_days_are_whole(store)}
    assert done == set(guild_of)  # G2 and the DMs too
    assert [r[0] for r in _rows(store, "SELECT kind FROM pipeline_runs ORDER BY id")] == ["rollover", "rollover"]


def test_refresh_job_and_status(store, settings):
    import_files(store, [SAMPLE], settings)
    now = dt.datetime(2026, 11, 5, 12, 30, tzinfo=UTC)
    report = asyncio.run(jobs.run_job(_runtime(store, settings, now), "refresh"))
    assert report["outcome"] == "ok" and report["summarizer_calls"] > 0
    assert {"partitions", "summarizer_calls", "llm_calls", "tokens", "duration_s", "outcome"} <= set(report)
    again = asyncio.run(jobs.run_job(_runtime(store, settings, now), "refresh"))
    assert again["summarizer_calls"] == 0  # nothing changed, no call

    st = status(store, settings, now=now)
    assert st["leader"] is None
    by_job = {j["job"]: j for j in st["jobs"]}
    assert by_job["refresh"]["last_outcome"] == "ok"
    assert by_job["refresh"]["next_run_at"] == dt.datetime(2026, 11, 5, 13, 7, tzinfo=UTC)
    assert by_job["rollover:UTC"]["last_started_at"] is None
    assert by_job["retention"]["next_run_at"] == dt.datetime(2026, 11, 6, 3, 30, tzinfo=UTC)


def test_retention_job_deletes_and_records(store, settings):
    import_files(store, [SAMPLE], settings)
    now = dt.datetime(2026, 12, 20, 3, 30, tzinfo=UTC)  # everything in the sample is past 30 days
    report = asyncio.run(jobs.run_job(_runtime(store, settings, now), "retention"))
    assert report["outcome"] == "ok" and report["deleted"]["chat_history"] == 90 and report["rows_deleted"] >= 90
    assert store.count_messages() == 0
    assert store.scheduler_states()["retention"]["last_report"]["rows_deleted"] == report["rows_deleted"]


def test_a_failing_job_is_recorded_and_does_not_raise(store, settings):
    import_files(store, [SAMPLE], settings)

    def broken(_settings):
        raise RuntimeError("no summarizer today")

    rt = jobs.Runtime(store, settings, clock=fixed_clock(dt.datetime(2026, 11, 5, tzinfo=UTC)),
                      make_summarizer=broken)
    report = asyncio.run(jobs.run_job(rt, "refresh"))
    assert report["outcome"] == "failed" and "no summarizer today" in report["error"]
    state = store.scheduler_states()["refresh"]
    assert state["last_outcome"] == "failed" and state["last_ok_at"] is None


# ---------------------------------------------------------------- shutdown in the middle of a job

class SlowSummarizer(RecordingSummarizer):
    def __init__(self, inner, delay=0.05):
        super().__init__(inner)
        self.delay = delay

    async def daily(self, pd):
        await asyncio.sleep(self.delay)
        return await super().daily(pd)


def test_shutdown_cancels_the_job_cleanly_and_the_next_run_resumes(store, settings):
    import_files(store, [SAMPLE], settings)
    now = dt.datetime(2026, 11, 5, 12, 30, tzinfo=UTC)
    slow = SlowSummarizer(ExtractiveSummarizer(settings.summary))
    rt = _runtime(store, settings, now, slow)

    async def scenario():
        job = asyncio.ensure_future(jobs.run_job(rt, "refresh"))
        while len([c for c in slow.calls if c[0] == "daily"]) < 4:
            await asyncio.sleep(0.01)
        await rt.stop()
        return await job

    report = asyncio.run(scenario())
    assert report["outcome"] == "cancelled" and report["error"] == "cancelled by shutdown"
    done = _partition_days_are_whole(store)  # written whole or not at all
    assert 0 < len(done) < SAMPLE_PARTITION_DAYS
    (status_, error), = _rows(store, "SELECT status, error FROM pipeline_runs")
    assert status_ == "failed" and "cancelled by shutdown" in error
    assert store.scheduler_states()["refresh"]["last_outcome"] == "cancelled"
    skipped = asyncio.run(jobs.run_job(rt, "refresh"))  # a stopping runtime takes no new work
    assert skipped["outcome"] == "skipped"

    fresh = RecordingSummarizer(ExtractiveSummarizer(settings.summary))
    report = asyncio.run(jobs.run_job(_runtime(store, settings, now, fresh), "refresh"))
    assert report["outcome"] == "ok"
    assert len([c for c in fresh.calls if c[0] == "daily"]) == SAMPLE_PARTITION_DAYS - len(done)
    assert len(_partition_days_are_whole(store)) == SAMPLE_PARTITION_DAYS


# ---------------------------------------------------------------- leader election

def test_only_one_leader_per_database(db_url, store):
    other = Store.open(db_url)
    a, b = Leader(store, identity="a", check_s=1), Leader(other, identity="b", check_s=1)
    try:
        assert a.try_acquire() is True
        assert b.try_acquire() is False
        assert a.alive() and not b.alive()
        assert b.try_acquire() is False  # polling again changes nothing
        a.release()
        assert b.try_acquire() is True and b.alive()
        assert a.try_acquire() is False
    finally:
        a.release()
        b.release()
        other.close()


def test_postgresql_leader_whose_connection_drops_loses_the_lead(db_url, store):
    if store.dialect != "postgresql":
        pytest.skip("the session advisory lock is PostgreSQL's")
    other = Store.open(db_url)
    a, b = Leader(store, identity="a", check_s=1), Leader(other, identity="b", check_s=1)
    try:
        assert a.try_acquire() and a.alive()
        with store.engine.connect() as conn:  # the server ends the leader's session
            conn.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": a._lock.backend_pid})
            conn.commit()
        assert a.alive() is False and a.held is False
        assert b.try_acquire() is True
    finally:
        a.release()
        b.release()
        other.close()


# ---------------------------------------------------------------- serve, in-process

async def _until(predicate, timeout=20.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


def test_serve_leads_stands_by_takes_over_and_stops(db_url, store, settings):
    import_files(store, [SAMPLE], settings)
    s = settings.model_copy(update={"scheduler": settings.scheduler.model_copy(
        update={"takeover_s": 0.2, "heartbeat_s": 0.1})})
    clock = fixed_clock(dt.datetime(2026, 11, 5, 12, 30, tzinfo=UTC))
    second = Store.open(db_url)
    leading: dict[str, bool] = {}

    def refreshes():
        return _rows(store, "SELECT status FROM pipeline_runs WHERE kind = 'refresh'")

    async def scenario():
        stop_a, stop_b = asyncio.Event(), asyncio.Event()
        a = asyncio.ensure_future(serve(s, clock=clock, stop_event=stop_a, run_now=True, store=store,
                                        identity="a", on_leader=lambda on: leading.__setitem__("a", on)))
        await _until(lambda: leading.get("a"))
        b = asyncio.ensure_future(serve(s, clock=clock, stop_event=stop_b, run_now=True, store=second,
                                        identity="b", on_leader=lambda on: leading.__setitem__("b", on)))
        await _until(lambda: refreshes() == [("ok",)])
        await asyncio.sleep(0.5)  # b polls a few times meanwhile
        assert not leading.get("b") and len(refreshes()) == 1  # the standby does no work
        st = status(store, s, now=clock())
        assert st["leader"]["holder"] == "a" and st["leader"]["state"] == "leading"
        assert all(j["next_run_source"] == "leader" for j in st["jobs"])

        stop_a.set()  # a stops cleanly: b takes over and (run_now) refreshes
        await asyncio.wait_for(a, 10)
        await _until(lambda: leading.get("b"), timeout=5)
        await _until(lambda: refreshes() == [("ok",), ("ok",)])
        assert status(store, s, now=clock())["leader"]["holder"] == "b"
        stop_b.set()
        await asyncio.wait_for(b, 10)

    try:
        asyncio.run(scenario())
    finally:
        second.close()
    assert refreshes() == [("ok",), ("ok",)]
    leader = store.scheduler_leader()
    assert leader["holder"] == "b" and leader["released_at"] is not None
    assert status(store, s, now=clock())["leader"]["state"] == "stopped"
    states = store.scheduler_states()
    assert set(states) == set(build_triggers(s))
    assert all(st["next_run_at"] is not None for st in states.values())


def test_serve_whose_lock_connection_drops_stops_its_jobs_and_stands_by(db_url, store, settings, monkeypatch):
    if store.dialect != "postgresql":
        pytest.skip("the session advisory lock is PostgreSQL's")
    s = settings.model_copy(update={"scheduler": settings.scheduler.model_copy(
        update={"takeover_s": 0.2, "heartbeat_s": 0.1})})
    clock = fixed_clock(dt.datetime(2026, 11, 5, 12, 30, tzinfo=UTC))
    changes: list[bool] = []
    leaders: list[Leader] = []
    original = Leader.__init__

    def remember(self, *args, **kwargs):
        original(self, *args, **kwargs)
        leaders.append(self)

    async def scenario():
        stop = asyncio.Event()
        task = asyncio.ensure_future(serve(s, clock=clock, stop_event=stop, store=store, identity="a",
                                           on_leader=changes.append))
        await _until(lambda: changes == [True])
        with store.engine.connect() as conn:  # the server ends the leader's lock session
            conn.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": leaders[0]._lock.backend_pid})
            conn.commit()
        await _until(lambda: changes[:2] == [True, False], timeout=5)  # noticed at the next heartbeat
        await _until(lambda: changes == [True, False, True], timeout=5)  # the lock is free: leads again
        stop.set()
        await asyncio.wait_for(task, 10)

    monkeypatch.setattr(Leader, "__init__", remember)
    asyncio.run(scenario())
    assert changes == [True, False, True, False]


def test_serve_that_cannot_reach_its_lock_says_so_not_that_another_leads(store, settings, caplog):
    """A database outage while standing by: the log says the lock cannot be reached, each try,
    and never "another process leads" (nobody may lead; an operator would look for a second
    process that is not there)."""
    if store.dialect != "postgresql":
        pytest.skip("the advisory lock's own connection is PostgreSQL's")
    s = settings.model_copy(update={
        "database_url": "postgresql+psycopg://postgres@127.0.0.1:1/mempipe",  # nothing listens there
        "scheduler": settings.scheduler.model_copy(update={"takeover_s": 0.05, "heartbeat_s": 0.05})})
    away = Store.open(s.database_url, check_schema=False)
    changes: list[bool] = []

    async def scenario():
        stop = asyncio.Event()
        task = asyncio.ensure_future(serve(s, stop_event=stop, store=away, identity="a", on_leader=changes.append))
        await _until(lambda: sum("cannot reach the leader lock" in r.getMessage() for r in caplog.records) >= 3)
        stop.set()
        await asyncio.wait_for(task, 10)

    caplog.set_level("INFO", logger="pipeline.scheduler")
    try:
        asyncio.run(scenario())
    finally:
        away.close()
    assert changes == []  # never led
    assert not [r for r in caplog.records if "another process leads" in r.getMessage()]
