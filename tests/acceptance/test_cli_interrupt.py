"""Ctrl-C on a real `mempipe replay` process (.venv/bin/mempipe, SIGINT): exit 130, stderr says
finished work is kept, the run row ends failed (interrupted) instead of "running", and a rerun
does only what is left. The summarizer is Gemini against the loopback fake with latency, so the
replay is still running when the signal arrives."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.conftest import ROOT, SAMPLE
from tests.fakes.gemini_server import FakeGemini
from tests.helpers import gemini_config
from tests.fakes.responders import canned_answer

MEMPIPE = Path(sys.executable).parent / "mempipe"  # the console script of the venv the tests run in


def default_sigint() -> None:
    """The child takes Ctrl-C as a terminal gives it. Launched as `(nohup sh -c "make test" &)` (a
    shell without job control), the child replay never saw the SIGINT and ended with 0; with
    SIGINT's default action (and unblocked) in the child it does. Measured both ways that launch."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _mempipe(db_url, config, *args, wait=True):
    env = {**os.environ, "GEMINI_API_KEY": "test-key"}
    env.pop("MEMPIPE_DATABASE_URL", None)
    cmd = [str(MEMPIPE), "--db", db_url, "--config", str(config), *args]
    if not wait:
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, text=True,
                                preexec_fn=default_sigint)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture
def slow_gemini(tmp_path):
    with FakeGemini(canned_answer, latency=0.1) as server:
        yield server, gemini_config(tmp_path / "gemini.toml", server.url, concurrency=1, short_targets=True)


def replay_under_way(db_url, gemini, answered: int = 4) -> subprocess.Popen:
    """A real `mempipe replay` of the sample against the slow fake, once `answered` daily
    requests have been answered: a run with finished work and work still to do."""
    server, config = gemini
    _mempipe(db_url, config, "db", "upgrade")
    _mempipe(db_url, config, "import", str(SAMPLE))
    proc = _mempipe(db_url, config, "replay", "--from", "2026-11-01", "--to", "2026-11-04", wait=False)
    deadline = time.monotonic() + 60
    while len([r for r in server.calls() if "<messages>" in r.prompt_text and r.status_code]) < answered:
        assert time.monotonic() < deadline and proc.poll() is None, "replay ended before it could be stopped"
        time.sleep(0.02)
    return proc


def _rows(db_url, sql):
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text(sql)).all()
    finally:
        engine.dispose()


def test_ctrl_c_exits_130_keeps_finished_work_and_records_the_run(db_url, slow_gemini):
    if not MEMPIPE.exists():
        pytest.skip(f"no console script at {MEMPIPE}")
    proc = replay_under_way(db_url, slow_gemini)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)

    assert proc.returncode == 130, err
    assert "Interrupted: finished work is kept" in err and "Aborted!" not in err and "Traceback" not in err
    assert out == ""  # no run line for a run that did not finish
    (status, error, finished), = _rows(db_url, "SELECT status, error, finished_at FROM pipeline_runs")
    assert status == "failed" and error.startswith("interrupted (SIGINT)") and finished is not None
    kept = _rows(db_url, "SELECT partition, day FROM partition_days")
    assert 0 < len(kept) < 14  # the partition-days answered before Ctrl-C were written

    rerun = _mempipe(db_url, slow_gemini[1], "replay", "--from", "2026-11-01", "--to", "2026-11-04", "--json")
    run = json.loads(rerun.stdout)
    assert run["status"] == "ok" and run["partition_days"] == 14
    assert run["passed_unchanged"] >= len(kept)  # kept days are found done, not summarised again
