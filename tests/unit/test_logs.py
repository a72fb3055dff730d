"""pipeline/logs.py: both formats, and the redaction filter configure_logging installs."""

from __future__ import annotations

import json
import logging

import pytest

from pipeline import safety
from pipeline.logs import configure_logging

KEY = "plain-log-key-5e8c1a"  # matches no token format: only the registered value redacts it
AIZA = "AIza" + "SyD4k9vQ2mX7pL1wR8tN3bF6hJ0cZ5gY2eU"


@pytest.fixture
def ours():
    """Our handler for one test, removed afterwards."""
    yield
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "_mempipe", False)]:
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_log_line_with_a_key_is_redacted(fmt, ours, capsys):
    safety.register_secret(KEY)
    configure_logging(fmt, logging.INFO)
    log = logging.getLogger("mempipe.test")
    log.warning("server said %s and %s", f"bad key {KEY}", AIZA, extra={"fields": {"reason": f"echo {KEY}", "n": 3}})
    try:
        raise RuntimeError(f"API key not valid: {KEY}")
    except RuntimeError:
        log.exception("request failed for %s", KEY)
    err = capsys.readouterr().err
    assert KEY not in err and AIZA not in err
    assert err.count("[redacted]") >= 5
    if fmt == "json":
        lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
        assert lines[0]["reason"] == "echo [redacted]" and lines[0]["n"] == 3
        assert "RuntimeError: API key not valid: [redacted]" in lines[1]["exc"]
    else:
        assert "reason=\"echo [redacted]\" n=3" in err

