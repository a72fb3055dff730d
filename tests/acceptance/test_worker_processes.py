"""Real `mempipe worker` processes on PostgreSQL against the slow loopback fake Gemini: two and
three workers complete a night with exactly a single process's model requests and its rows; a
worker killed with SIGKILL mid-night loses no item (another takes it up once the run finds it
silent for workers.stalled_s) and duplicates none."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import signal
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa

from pipeline.app import App
from pipeline.config import load_settings
from pipeline.ingest import import_files
from pipeline.runner import execute
from pipeline.store import Store
from pipeline.workers.queue import ensure_schema
from tests.conftest import ROOT, SAMPLE
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.responders import canned_answer
from tests.helpers import gemini_config, stop_process
from tests.integration.test_gemini import llm

FIRST, LAST = dt.date(2026, 11, 1), dt.date(2026, 11, 4)
REPLAY = ("replay", "--from", FIRST.isoformat(), "--to", LAST.isoformat())
WORKERS = "[workers]\nenabled = true\nheartbeat_s = 0.5\nstalled_s = 2.0\n"


def _env() -> dict:
    env = {**os.environ, "GEMINI_API_KEY": "test-key", "PYTHONPATH": str(ROOT)}
    for name in list(env):
        if name.startswith("MEMPIPE_"):
            env.pop(name)
    return env


def _mempipe(db_url, config, *args, wait=True, log=None):
    """Run the command to its end; `wait=False`: start it, its output to the file `log`."""
    cmd = [sys.executable, "-m", "pipeline.cli", "--db", db_url, "--config", str(config), *args]
    if not wait:
        with open(log, "w", encoding="utf-8") as out:  # a file, not a pipe: a chatty worker never blocks on it
            return subprocess.Popen(cmd, env=_env(), stdout=out, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    done = subprocess.run(cmd, env=_env(), capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


def _worker(db_url, config, log, concurrency: int = 2):
    return _mempipe(db_url, config, "-v", "worker", "--concurrency", str(concurrency), wait=False, log=log)


def _rows(db_url) -> dict[str, list[tuple]]:
    """The derived texts (test_processes.py's comparison, with the past weeks): every row once."""
    engine = sa.create_engine(db_url)
    queries = {"daily": "SELECT partition, day, user_id, summary FROM daily_summaries ORDER BY 1, 2, 3",
               "historical": "SELECT partition, day, user_id, summary FROM historical_summaries ORDER BY 1, 2, 3",
               "context": "SELECT scope, user_id, context, recent FROM memory_context ORDER BY 1, 2"}
    with engine.connect() as conn:
        out = {name: [tuple(map(str, r)) for r in conn.execute(sa.text(q))] for name, q in queries.items()}
        out["runs"] = [tuple(r) for r in conn.execute(sa.text(
            "SELECT status, llm_calls, partition_days, historical_items, context_items, summarized "
            "FROM pipeline_runs"))]
    engine.dispose()
    return out


def _generated(server) -> list:
    return [r for r in server.calls() if r.method == "generateContent"]


@pytest.fixture(scope="module")
def night(tmp_path_factory):
    """The fake server, a config for workers, and what one process makes of the sample's night
    (an in-process replay on SQLite, without workers): its rows and its model requests."""
    tmp = tmp_path_factory.mktemp("workers")
    with FakeGemini(canned_answer, latency=0.15) as server:
        alone = gemini_config(tmp / "alone.toml", server.url, concurrency=2, short_targets=True)
        config = tmp / "workers.toml"
        config.write_text(alone.read_text(encoding="utf-8") + WORKERS, encoding="utf-8")
        ref = f"sqlite:///{tmp}/reference.db"
        settings = load_settings(alone, database_url=ref)
        store = _store(ref, settings)
        try:
            ctx = App(settings, store).run_context(summarizer=llm(settings))
            assert asyncio.run(execute(ctx, "replay", FIRST, LAST)).status == "ok"
        finally:
            store.close()
        yield server, config, _rows(ref), len(_generated(server))


def _store(url: str, settings) -> Store:
    """The database upgraded (with the job queue's tables on PostgreSQL) and the sample imported."""
    store = Store.open(url, check_schema=False)
    store.upgrade()
    if store.dialect == "postgresql":
        ensure_schema(url)
    import_files(store, [str(SAMPLE)], settings)
    return store


@pytest.fixture
def pg_url(db_url, db_kind):
    if db_kind != "postgresql":
        pytest.skip("workers run on PostgreSQL")
    return db_url


def _prepared(pg_url, night):
    server, config, reference, minimum = night
    _store(pg_url, load_settings(config, database_url=pg_url)).close()
    server.reset()
    return server, config, reference, minimum


@pytest.mark.parametrize("n", [2, 3])
def test_workers_complete_a_night_with_one_process_calls_and_rows(pg_url, night, n, tmp_path):
    server, config, reference, minimum = _prepared(pg_url, night)
    workers = [_worker(pg_url, config, tmp_path / f"worker{i}.log") for i in range(n)]
    try:
        _mempipe(pg_url, config, *REPLAY)
    finally:
        codes = [stop_process(w) for w in workers]
    logs = [(tmp_path / f"worker{i}.log").read_text(encoding="utf-8") for i in range(n)]
    assert codes == [0] * n, logs  # SIGTERM: graceful
    assert len(_generated(server)) == minimum > 0  # no item computed twice, none left out
    rows = _rows(pg_url)
    assert {k: rows[k] for k in ("daily", "historical", "context")} == \
        {k: reference[k] for k in ("daily", "historical", "context")}
    assert rows["runs"] == reference["runs"]  # `mempipe runs` shows what one process's run shows
    jobs = [log.count(" done in ") for log in logs]
    assert sum(jobs) == 7 * 5 + 5 + 3 and sum(1 for j in jobs if j) >= 2, jobs  # the work was shared


def test_a_worker_killed_mid_night_loses_no_item_and_duplicates_none(pg_url, night, tmp_path):
    server, config, reference, minimum = _prepared(pg_url, night)
    first = _worker(pg_url, config, tmp_path / "first.log", concurrency=1)
    replay = _mempipe(pg_url, config, *REPLAY, wait=False, log=tmp_path / "replay.log")
    second = None
    try:
        deadline = time.monotonic() + 60
        while True:  # mid-night, with a request of the only worker in flight
            calls = _generated(server)
            in_flight = [r for r in calls if r.status_code is None]
            if len(calls) >= 5 and in_flight:
                break
            assert time.monotonic() < deadline and replay.poll() is None, "the night ended before the kill"
            time.sleep(0.005)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        killed_in_flight = len(in_flight)
        second = _worker(pg_url, config, tmp_path / "second.log")
        replay.wait(timeout=120)
        err = (tmp_path / "replay.log").read_text(encoding="utf-8")
        assert replay.returncode == 0, err
    finally:
        for p in (first, replay, second):
            if p is not None and p.poll() is None:
                stop_process(p)
        if second is not None:
            assert stop_process(second) == 0
    assert "back in the queue for another worker" in err  # found silent after stalled_s, retried
    calls = len(_generated(server))
    assert minimum <= calls <= minimum + killed_in_flight  # at most the killed worker's item is asked again
    rows = _rows(pg_url)
    assert {k: rows[k] for k in ("daily", "historical", "context")} == \
        {k: reference[k] for k in ("daily", "historical", "context")}  # nothing lost, every row once
    assert rows["runs"][0][0] == "ok"
