"""[workers] settings (pipeline/config.py WorkerSettings) that cannot work together are refused."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pipeline.config import WorkerSettings


def test_stalled_s_must_be_at_least_twice_heartbeat_s():
    assert WorkerSettings(heartbeat_s=10, stalled_s=20).stalled_s == 20
    assert WorkerSettings().stalled_s >= 2 * WorkerSettings().heartbeat_s  # config/default.toml's: 30, 10
    with pytest.raises(ValidationError, match=r"stalled_s \(15\) must be at least twice heartbeat_s \(10\), .*"
                                              r"set stalled_s to 20 or more \(runs and workers must agree on both\)"):
        WorkerSettings(heartbeat_s=10, stalled_s=15)
