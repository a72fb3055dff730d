"""SIGTERM on a real `mempipe replay` process — what cron's `timeout`, a Kubernetes CronJob's
activeDeadlineSeconds and `systemctl stop` send. Before, Python's default action killed the
process on the spot: its `pipeline_runs` row stayed `running` for good (and `mempipe runs`, the
status page and the metrics counted a run that no longer existed). Now it stops like Ctrl-C:
finished work kept, the row ends failed (terminated), exit 143 (128 + SIGTERM)."""

from __future__ import annotations

import signal
import time

import pytest

from tests.acceptance.test_cli_interrupt import MEMPIPE, _mempipe, _rows, slow_gemini  # noqa: F401 (fixture)


def test_sigterm_records_the_run_as_failed_and_keeps_finished_work(db_url, slow_gemini):  # noqa: F811
    if not MEMPIPE.exists():
        pytest.skip(f"no console script at {MEMPIPE}")
    server, config = slow_gemini
    _mempipe(db_url, config, "db", "upgrade")
    _mempipe(db_url, config, "import", "samples/community.jsonl")
    proc = _mempipe(db_url, config, "replay", "--from", "2026-11-01", "--to", "2026-11-04", wait=False)
    deadline = time.monotonic() + 60
    while len([r for r in server.calls() if "<messages>" in r.prompt_text and r.status_code]) < 4:
        assert time.monotonic() < deadline and proc.poll() is None, "replay ended before it could be stopped"
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)

    assert proc.returncode == 143, (proc.returncode, err)
    assert "Terminated: finished work is kept" in err and "Traceback" not in err
    assert out == ""
    (status, error, finished), = _rows(db_url, "SELECT status, error, finished_at FROM pipeline_runs")
    assert status == "failed" and error.startswith("terminated (SIGTERM)") and finished is not None
    kept = _rows(db_url, "SELECT partition, day FROM partition_days")
    assert 0 < len(kept) < 14
