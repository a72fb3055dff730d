"""Shared by the CLI acceptance tests."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from pipeline.cli import cli


@pytest.fixture
def mp(db_url, monkeypatch):
    """`mempipe --db <a fresh database> ARGS…` in-process (click's runner), after `db upgrade`;
    asserts exit 0 unless called with ok=False."""
    for name in ("MEMPIPE_DATABASE_URL", "MEMPIPE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    runner = CliRunner()

    def invoke(*args, ok=True):
        result = runner.invoke(cli, ["--db", db_url, *args], catch_exceptions=False)
        if ok:
            assert result.exit_code == 0, result.output
        return result

    invoke("db", "upgrade")
    return invoke
