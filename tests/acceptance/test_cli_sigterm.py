"""SIGTERM on a real `mempipe replay` process — what cron's `timeout`, a Kubernetes CronJob's
activeDeadlineSeconds and `systemctl stop` send. Before, Python's default action killed the
process on the spot: its `pipeline_runs` row stayed `running` for good (and `mempipe runs`, the
status page and the metrics counted a run that no longer existed). Now it stops like Ctrl-C:
finished work kept, the row ends failed (terminated), exit 143 (128 + SIGTERM)."""

from __future__ import annotations

import signal

import pytest

from tests.acceptance.test_cli_interrupt import MEMPIPE, _rows, replay_under_way
from tests.acceptance.test_cli_interrupt import slow_gemini  # noqa: F401 (the fixture, used by name)


def test_sigterm_records_the_run_as_failed_and_keeps_finished_work(db_url, slow_gemini):  # noqa: F811
    if not MEMPIPE.exists():
        pytest.skip(f"no console script at {MEMPIPE}")
    proc = replay_under_way(db_url, slow_gemini)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)

    assert proc.returncode == 143, (proc.returncode, err)
    assert "Terminated: finished work is kept" in err and "Traceback" not in err
    assert out == ""
    (status, error, finished), = _rows(db_url, "SELECT status, error, finished_at FROM pipeline_runs")
    assert status == "failed" and error.startswith("terminated (SIGTERM)") and finished is not None
    kept = _rows(db_url, "SELECT partition, day FROM partition_days")
    assert 0 < len(kept) < 14
