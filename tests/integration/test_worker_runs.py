"""Runs on workers (pipeline/workers/), with the worker in this process beside the run (the
acceptance tests run real worker processes): the same rows and counts as an in-process run, the
folds a refresh's merges consult carried from its daily jobs, a failed job failing the run by the
item's name, and the refusals (SQLite, no queue schema)."""

from __future__ import annotations

import asyncio
import datetime as dt
import time

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from pipeline.cli import cli
from pipeline.controls import OPERATOR, clear
from pipeline.errors import ConfigError, ErasedDuringRun
from pipeline.ingest import import_files, ingest_messages
from pipeline.runner import execute
from pipeline.store import Store
from pipeline.summarize import ExtractiveSummarizer
from pipeline.testing import RecordingSummarizer
from pipeline.workers.dispatch import WorkerJobFailed
from pipeline.workers.queue import ensure_schema
from pipeline.workers.worker import work
from tests.conftest import SAMPLE
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.responders import canned_answer
from tests.helpers import another_database, dump_derived, make_context
from tests.integration.test_gemini import gemini_settings, llm
from tests.integration.test_merge_budget import BO, WALL, _budgets, _bo_long, _context, _requests, _say, _week

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 11, 5, 12, tzinfo=UTC)


@pytest.fixture
def pg(db_url, db_kind, store, settings):
    """The test's PostgreSQL database with the job queue's tables, and settings for workers on it."""
    if db_kind != "postgresql":
        pytest.skip("workers run on PostgreSQL (SQLite: test_sqlite_refuses_workers)")
    s = on_workers(settings, db_url)
    assert ensure_schema(db_url) is True and ensure_schema(db_url) is False  # applied once, then found
    return store, s


def on_workers(settings, url: str):
    s = settings.model_copy(deep=True)
    s.database_url = url
    s.workers = s.workers.model_copy(update={"enabled": True, "heartbeat_s": 0.5, "stalled_s": 3.0})
    return s


async def _with_worker(settings, run, *, summarizer=None, concurrency: int = 2, clock=None):
    """`run()` while a worker (in this process, on this event loop) takes the jobs."""
    stop = asyncio.Event()
    kw = {"clock": clock} if clock is not None else {}
    worker = asyncio.ensure_future(work(settings, concurrency=concurrency, stop=stop, summarizer=summarizer, **kw))
    try:
        return await run()
    finally:
        stop.set()
        await worker


def _replay(store, settings, *, summarizer=None, worker_summarizer=None, first="2026-11-01", last="2026-11-04",
            concurrency: int = 2):
    ctx = make_context(store, settings, now=NOW, summarizer=summarizer)

    async def go():
        result = execute(ctx, "replay", dt.date.fromisoformat(first), dt.date.fromisoformat(last))
        if not settings.workers.enabled:
            return await result
        return await _with_worker(settings, lambda: result, summarizer=worker_summarizer, concurrency=concurrency,
                                  clock=lambda: NOW)

    return ctx, asyncio.run(go())


def _derived(store) -> dict[str, list[tuple]]:
    """Every derived row, byte for byte, but for what follows memory_facts' ids: a profile's key
    holds its facts' ids, which follow the order partition-days were written in — concurrent jobs
    write them in another order than a sequential run does (as an in-process run with a model and
    gemini.concurrency > 1 does too). The facts themselves, and every text, must be the same."""
    import json

    from pipeline.db.tables import memory_context, memory_profiles

    out = dump_derived(store)
    hashed = {"memory_profiles": [memory_profiles.c.keys().index("input_hash")],
              "memory_context": [memory_context.c.keys().index("input_hash")]}
    inputs = memory_context.c.keys().index("inputs")
    for table, columns in hashed.items():
        rows = [list(r) for r in out[table]]
        for r in rows:
            for i in columns:
                r[i] = None
            if table == "memory_context":
                r[inputs] = json.dumps({**json.loads(r[inputs]), "profile": None}, sort_keys=True)
        out[table] = [tuple(r) for r in rows]
    with store.engine.connect() as conn:
        out["memory_facts"] = sorted(tuple(r) for r in conn.execute(sa.text(
            "SELECT user_id, partition, level, category, text, fact_key, confidence, event_day, first_seen, "
            "last_seen, CAST(sources AS TEXT), origin, status, superseded_on, input_hash FROM memory_facts")))
    return out


def _queue(store) -> list[tuple]:
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.text("SELECT status, count(*) FROM procrastinate_jobs GROUP BY 1"))]


def test_a_replay_on_workers_writes_and_counts_what_an_in_process_replay_does(pg, settings):
    store, s = pg
    import_files(store, [str(SAMPLE)], s)
    with another_database() as ref_url:
        ref = Store.open(ref_url, check_schema=False)
        try:
            ref.upgrade()
            import_files(ref, [str(SAMPLE)], settings)
            ref_ctx, _ = _replay(ref, settings)  # workers.enabled is false: in-process
            expected, expected_run = _derived(ref), ref.runs(1)[0]
        finally:
            ref.close()

    ctx, result = _replay(store, s, worker_summarizer=RecordingSummarizer(ExtractiveSummarizer(s.summary)))
    assert result.status == "ok" and ctx.summarizer.calls == []  # the run itself summarised nothing
    assert _derived(store) == expected  # timestamps included (one clock)
    run = store.runs(1)[0]
    counts = [k for k in run if k not in ("id", "started_at", "finished_at")]
    assert {k: run[k] for k in counts} == {k: expected_run[k] for k in counts}
    assert run["summarizer_calls"] > 0 and run["partition_days"] == 14
    assert ctx.stats.contexts_written == ref_ctx.stats.contexts_written > 0  # counts without a column, reported
    assert _queue(store) == []  # every job succeeded and was deleted

    again, _ = _replay(store, s)  # unchanged: every job finds its rows fresh
    rerun = store.runs(1)[0]
    assert rerun["summarizer_calls"] == 0 and rerun["passed_unchanged"] == 34 and rerun["status"] == "ok"
    assert _derived(store) == expected


def test_a_refresh_on_workers_keeps_a_merge_on_growth_as_in_process(pg):
    """The folds a refresh's daily jobs make reach its merge jobs (see test_merge_budget.py for
    the in-process run): an immaterial growth of Bo's day keeps his merged recent part."""
    store, base = pg

    def answer(request) -> str:
        import json

        out = json.loads(canned_answer(request))
        for item in out.get("summaries", ()):
            if item["summary"].startswith("Bo said: "):
                item["summary"] = bo_says
        return json.dumps(out)

    with FakeGemini(answer) as server:
        s = _budgets(gemini_settings(base, server))
        s.refresh.fold_min_chars = 0  # fold mechanics: a fold every hour (the waiting rule: test_fold_waits.py)

        def run(kind: str, now: dt.datetime, as_of=None):
            ctx = make_context(store, s, now=now, summarizer=llm(s))
            asyncio.run(_with_worker(s, lambda: execute(ctx, kind, None, as_of), summarizer=llm(s),
                                     clock=lambda: now))
            return ctx

        bo_says = WALL
        _week(store, s)
        run("run", dt.datetime(2026, 11, 3, 23, tzinfo=UTC), dt.date(2026, 11, 3))
        ingest_messages(store, _bo_long(4, 9, "west wall"), s)
        mark = len(server.calls())
        run("refresh", dt.datetime(2026, 11, 4, 9, 59, tzinfo=UTC))
        assert [r for r in _requests(server, mark) if r[0] == "merge"] == [("merge", "Bo")]
        first = _context(store, BO)

        bo_says = WALL + " He thanked everyone."
        ingest_messages(store, [_say(4, 10, BO, "Thanks all.")], s)
        mark = len(server.calls())
        ctx = run("refresh", dt.datetime(2026, 11, 4, 10, 59, tzinfo=UTC))
        assert [r for r in _requests(server, mark) if r[0] == "merge"] == []
        assert ctx.stats.daily_folded == 1 and ctx.stats.merges_kept == 1  # reported by the jobs
        kept = _context(store, BO)
        assert kept["recent"] == first["recent"] and kept["input_hash"] != first["input_hash"]


def test_a_run_with_no_worker_waits_and_says_so_then_a_worker_finishes_it(pg, monkeypatch, caplog):
    store, s = pg
    import_files(store, [str(SAMPLE)], s)
    monkeypatch.setattr("pipeline.workers.dispatch.IDLE_S", 0.3)
    ctx = make_context(store, s, now=NOW)

    async def go():
        run = asyncio.ensure_future(execute(ctx, "run", None, dt.date(2026, 11, 4)))
        deadline = time.monotonic() + 30
        while "no worker is running one: start `mempipe worker` with [workers] queue = 'mempipe'" not in caplog.text:
            assert not run.done() and time.monotonic() < deadline
            await asyncio.sleep(0.05)
        return await asyncio.wait_for(_with_worker(s, lambda: run), 60)

    with caplog.at_level("WARNING", logger="pipeline.workers"):
        assert asyncio.run(go()).status == "ok"
    assert store.runs(1)[0]["partition_days"] == 14


class _Breaks(RecordingSummarizer):
    """Raises (as a store outage would: not a model failure) on the first partition-day of `day`
    it is asked for; every partition-day asked for after that waits until the run has ended, so
    the run's later jobs are still in the queue when it fails (a worker taking one job at a time
    cannot finish them all first, however fast the machine)."""

    def __init__(self, settings, store, day: dt.date):
        super().__init__(ExtractiveSummarizer(settings.summary))
        self.store, self.day = store, day
        self.failed_on = None
        self.held = 0

    async def daily(self, pd):
        if self.failed_on is None and pd.day == self.day:
            self.failed_on = pd
            raise RuntimeError("the disk is on fire")
        if self.failed_on is not None:
            self.held += 1
            deadline = time.monotonic() + 60  # bounded: a run that never ends fails the test, not hangs it
            while (await asyncio.to_thread(self.store.runs, 1))[0]["status"] == "running":
                assert time.monotonic() < deadline, "the run did not end after its job failed"
                await asyncio.sleep(0.05)
        return await self.inner.daily(pd)


def test_a_failed_job_fails_the_run_naming_the_item_and_its_cause(pg):
    store, s = pg
    import_files(store, [str(SAMPLE)], s)
    breaks = _Breaks(s, store, dt.date(2026, 11, 3))
    with pytest.raises(WorkerJobFailed) as failed:
        _replay(store, s, worker_summarizer=breaks, concurrency=1)
    message = str(failed.value)
    assert breaks.failed_on is not None and breaks.held >= 1  # a later job was held back, as meant
    assert message.startswith("partition-day ") and " 2026-11-03 failed in a worker: " in message
    assert breaks.failed_on.partition in message
    assert message.endswith("RuntimeError: the disk is on fire")
    run = store.runs(1)[0]
    assert run["status"] == "failed" and run["error"] == message
    assert run["partition_days"] > 0  # what the jobs finished before is counted
    statuses = {status for status, _n in _queue(store)}
    assert "failed" in statuses and "cancelled" in statuses  # the run's jobs not yet started were cancelled
    assert statuses <= {"failed", "cancelled"}  # none left to do or running; the others succeeded (deleted)


class _ClearsOnce(RecordingSummarizer):
    """Asked for its first partition-day, has an operator clear a user's memory first (another
    session, committed): the worker's job read before it, so its writes must stop."""

    def __init__(self, settings, store, user_id: int):
        super().__init__(ExtractiveSummarizer(settings.summary))
        self.settings, self.store, self.user_id, self.cleared = settings, store, user_id, False

    async def daily(self, pd):
        if not self.cleared:
            self.cleared = True
            await asyncio.to_thread(clear, self.store, self.settings, self.user_id, requested_by=OPERATOR,
                                    clock=lambda: NOW)
        return await self.inner.daily(pd)


def test_a_job_a_control_stopped_stops_the_run_as_a_removal(pg):
    """A clear while a worker's job works stops that job (RemovedDuringRun in the worker) and the
    run with an error that is both a failed worker job and a removal during the run — what `serve`
    runs again soon (pipeline/scheduler/jobs.py)."""
    store, s = pg
    import_files(store, [str(SAMPLE)], s)
    clears = _ClearsOnce(s, store, _a_sample_speaker(store))
    with pytest.raises(WorkerJobFailed) as failed:
        _replay(store, s, worker_summarizer=clears, concurrency=1)
    assert clears.cleared
    assert isinstance(failed.value, ErasedDuringRun)
    assert "RemovedDuringRun" in str(failed.value) and "while this run was working" in str(failed.value)
    assert store.runs(1)[0]["status"] == "failed"


def _a_sample_speaker(store) -> int:
    with store.engine.connect() as conn:
        return conn.execute(sa.text("SELECT min(user_id) FROM chat_history")).scalar_one()


def test_sqlite_refuses_workers(sqlite_store, settings):
    s = settings.model_copy(deep=True)
    s.workers.enabled = True
    import_files(sqlite_store, [str(SAMPLE)], s)
    ctx = make_context(sqlite_store, s, now=NOW)
    with pytest.raises(ConfigError, match=r"^\[workers\] enabled = true needs PostgreSQL .* SQLite, where everything "
                                          r"runs in one process: keep \[workers\] enabled = false"):
        asyncio.run(execute(ctx, "run", None, None))
    assert sqlite_store.runs(1)[0]["status"] == "failed"
    dry = make_context(sqlite_store, s, now=NOW, dry_run=True)  # a dry run writes nothing: in-process
    assert asyncio.run(execute(dry, "run", None, None)).status == "ok"

    result = CliRunner().invoke(cli, ["--db", str(sqlite_store.engine.url), "worker"])
    assert result.exit_code == 1 and "`mempipe worker` needs PostgreSQL" in result.output


def test_a_worker_without_the_queue_schema_says_to_upgrade(store, db_kind, db_url, settings):
    if db_kind != "postgresql":
        pytest.skip("workers run on PostgreSQL")
    result = CliRunner().invoke(cli, ["--db", db_url, "worker"])  # `store` upgraded ours, not the queue's
    assert result.exit_code == 1
    assert "the job queue's tables (procrastinate) are missing: run `mempipe db upgrade`" in result.output
    upgraded = CliRunner().invoke(cli, ["--db", db_url, "db", "upgrade"])
    assert upgraded.exit_code == 0 and "applied the job queue's schema (procrastinate)" in upgraded.output
    assert "procrastinate" not in CliRunner().invoke(cli, ["--db", db_url, "db", "upgrade"]).output  # once
