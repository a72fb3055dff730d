"""Real processes against one database: two concurrent runs share the work; a replay killed with
SIGKILL resumes without redoing finished partition-days. The summarizer is Gemini against the
loopback fake with latency, so the runs really overlap."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa

from tests.conftest import ROOT, SAMPLE
from tests.fakes.gemini_server import FakeGemini
from tests.helpers import gemini_config
from tests.fakes.responders import canned_answer


def _mempipe(db_url, config, *args, wait=True):
    env = {**os.environ, "GEMINI_API_KEY": "test-key", "PYTHONPATH": str(ROOT)}
    env.pop("MEMPIPE_DATABASE_URL", None)
    cmd = [sys.executable, "-m", "pipeline.cli", "--db", db_url, "--config", str(config), *args]
    if not wait:
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture
def slow_gemini(tmp_path):
    with FakeGemini(canned_answer, latency=0.15) as server:
        yield server, gemini_config(tmp_path / "gemini.toml", server.url, concurrency=2, short_targets=True)


def _summaries(db_url):
    engine = sa.create_engine(db_url)
    with engine.connect() as conn:
        daily = conn.execute(sa.text("SELECT partition, day, user_id, summary FROM daily_summaries "
                                     "ORDER BY partition, day, user_id")).all()
        ctx = conn.execute(sa.text("SELECT scope, user_id, context FROM memory_context ORDER BY scope, user_id")).all()
        runs = conn.execute(sa.text("SELECT summarizer_calls, llm_calls, status FROM pipeline_runs ORDER BY id")).all()
    engine.dispose()
    return [tuple(map(str, r)) for r in daily], [tuple(map(str, r)) for r in ctx], runs


def _single_run_reference(tmp_path, config):
    ref = f"sqlite:///{tmp_path}/reference.db"
    _mempipe(ref, config, "db", "upgrade")
    _mempipe(ref, config, "import", str(SAMPLE))
    _mempipe(ref, config, "replay", "--from", "2026-11-01", "--to", "2026-11-04")
    return _summaries(ref)


def test_two_concurrent_runs_make_one_runs_calls(db_url, slow_gemini, tmp_path):
    server, config = slow_gemini
    ref_daily, ref_ctx, ref_runs = _single_run_reference(tmp_path, config)
    one_run_calls = ref_runs[0][1]
    server.reset()

    _mempipe(db_url, config, "db", "upgrade")
    _mempipe(db_url, config, "import", str(SAMPLE))
    a = _mempipe(db_url, config, "replay", "--from", "2026-11-01", "--to", "2026-11-04", wait=False)
    b = _mempipe(db_url, config, "replay", "--from", "2026-11-01", "--to", "2026-11-04", wait=False)
    for p in (a, b):
        _out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    daily, ctx, runs = _summaries(db_url)
    assert [r[2] for r in runs] == ["ok", "ok"]
    assert sum(r[1] for r in runs) == one_run_calls == len(server.calls())
    if db_url.startswith("sqlite"):
        # SQLite runs take turns under a file lock: one made every call, the other found it all done
        assert sorted(r[1] for r in runs) == [0, one_run_calls]
    else:
        assert all(r[1] > 0 for r in runs)  # PostgreSQL shares by claims: both really worked
    assert daily == ref_daily and ctx == ref_ctx  # no duplicates, nothing lost


def test_sigkill_mid_replay_then_rerun_finishes_without_redoing_work(db_url, slow_gemini, tmp_path):
    server, config = slow_gemini
    _mempipe(db_url, config, "db", "upgrade")
    _mempipe(db_url, config, "import", str(SAMPLE))
    proc = _mempipe(db_url, config, "replay", "--from", "2026-11-01", "--to", "2026-11-04", wait=False)
    deadline = time.monotonic() + 60
    while len([r for r in server.calls() if "<messages>" in r.prompt_text]) < 7:
        assert time.monotonic() < deadline and proc.poll() is None, "replay ended before it could be killed"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)  # reap it and close its pipes

    engine = sa.create_engine(db_url)
    with engine.connect() as conn:
        done_before = {tuple(map(str, r)) for r in conn.execute(sa.text("SELECT partition, day FROM partition_days"))}
        status = conn.execute(sa.text("SELECT status FROM pipeline_runs")).scalars().all()
    engine.dispose()
    assert 0 < len(done_before) < 14 and status == ["running"]  # killed: no chance to record it

    before = len(server.calls())
    _mempipe(db_url, config, "replay", "--from", "2026-11-01", "--to", "2026-11-04")
    rerun_daily = [r for r in server.calls()[before:] if "<messages>" in r.prompt_text]
    assert len(rerun_daily) == 14 - len(done_before)  # finished partition-days are not redone
    daily, ctx, runs = _summaries(db_url)
    ref_daily, ref_ctx, _ = _single_run_reference(tmp_path, config)
    assert daily == ref_daily and ctx == ref_ctx  # nothing missing


def test_two_concurrent_cheap_runs_take_turns(db_url, tmp_path):
    config = tmp_path / "extractive.toml"
    config.write_text('summarizer = "extractive"\n')
    _mempipe(db_url, config, "db", "upgrade")
    _mempipe(db_url, config, "import", str(SAMPLE))
    procs = [_mempipe(db_url, config, "replay", "--from", "2026-11-01", "--to", "2026-11-04", wait=False)
             for _ in range(2)]
    for p in procs:
        _out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    daily, ctx, runs = _summaries(db_url)
    ref_daily, ref_ctx, ref_runs = _single_run_reference(tmp_path, config)
    assert [r[2] for r in runs] == ["ok", "ok"]
    # one did the work (a single run's summarizer calls), the other found it done
    assert sorted(r[0] for r in runs) == [0, ref_runs[0][0]] and ref_runs[0][0] > 0
    assert daily == ref_daily and ctx == ref_ctx
