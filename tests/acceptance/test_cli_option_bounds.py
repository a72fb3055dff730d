"""Option values the pipeline cannot honour are usage errors (exit 2) naming the option, before
anything runs. Before: `run --date 0001-01-01` and `replay --to 9999-12-31` died with an
OverflowError traceback (and a failed `runs` row); `runs --limit -1` listed every run on SQLite
and was a database error on PostgreSQL."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.conftest import SAMPLE


@pytest.mark.parametrize("args", [
    ("run", "--date", "0001-01-01"),
    ("run", "--date", "9999-12-31"),
    ("replay", "--from", "0001-01-01", "--to", "0001-01-03"),
    ("replay", "--from", "9999-12-30", "--to", "9999-12-31"),
    ("replay", "--from", "1969-12-31", "--to", "2026-11-04"),
])
def test_a_day_outside_the_storable_range_is_a_usage_error(mp, args):
    mp("import", str(SAMPLE))
    result = mp(*args, ok=False)
    assert result.exit_code == 2, result.output
    assert "1970-01-01" in result.output and "9998-12-31" in result.output
    assert "Traceback" not in result.output
    assert mp("runs", "--json").output.strip() == "[]"  # nothing ran


def test_the_first_storable_day_runs(mp):
    assert mp("replay", "--from", "1970-01-01", "--to", "1970-01-02").exit_code == 0


@pytest.mark.parametrize("args", [("run", "--date", "2099-01-01"), ("replay", "--from", "2026-11-01", "--to", "2099-01-01")])
def test_a_day_that_has_begun_nowhere_is_a_usage_error(mp, args):
    """A typo'd year made contexts as of 2099 that every later run left in place (a context made as
    of a later day is never overwritten): the bot read them for good."""
    mp("import", str(SAMPLE))
    result = mp(*args, ok=False)
    assert result.exit_code == 2, result.output
    assert "2099-01-01" in result.output and "UTC+14" in result.output and "Traceback" not in result.output
    assert mp("runs", "--json").output.strip() == "[]"  # nothing ran
    assert mp("contexts", "--json", ok=False).output.strip() in ("", "[]")


def test_today_in_the_first_timezone_runs(mp):
    latest = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=14)).date()
    assert mp("run", "--date", latest.isoformat()).exit_code == 0


@pytest.mark.parametrize("command", ["runs", "batches"])
def test_a_negative_limit_is_a_usage_error(mp, command):
    result = mp(command, "--limit", "-1", ok=False)
    assert result.exit_code == 2 and "--limit" in result.output, result.output
