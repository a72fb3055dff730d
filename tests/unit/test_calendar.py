"""pipeline.calendar: partitions, scopes, local days. Pure functions, no database, no clock."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from pipeline.calendar import (
    HISTORY_DAYS,
    Scope,
    day_bounds,
    days_between,
    history_days,
    local_day,
    parse_scope,
    partition_for,
)
from pipeline.errors import MempipeError, ScopeError

UTC = dt.timezone.utc
GUILD, CHANNEL = 1150000000000000001, 1160000000000000002  # snowflakes: exact 64-bit ints


# ---------------------------------------------------------------- partitions

def test_public_messages_share_the_guild_partition():
    assert partition_for("public", GUILD, CHANNEL) == f"guild:{GUILD}"
    assert partition_for("public", GUILD, CHANNEL + 1) == f"guild:{GUILD}"


def test_restricted_channels_are_their_own_partition():
    assert partition_for("restricted", GUILD, CHANNEL) == f"channel:{CHANNEL}"
    assert partition_for("restricted", GUILD, CHANNEL + 1) != partition_for("restricted", GUILD, CHANNEL)


def test_dms_are_their_own_partition_with_or_without_a_guild():
    assert partition_for("dm", None, CHANNEL) == f"dm:{CHANNEL}"
    assert partition_for("dm", GUILD, CHANNEL) == f"dm:{CHANNEL}"


@pytest.mark.parametrize("visibility", ["public", "restricted"])
def test_guild_visibilities_need_a_guild(visibility):
    with pytest.raises(ValueError, match=f"a {visibility} message needs a guild id"):
        partition_for(visibility, None, CHANNEL)


@pytest.mark.parametrize("visibility", ["private", "PUBLIC", "", "thread"])
def test_unknown_visibility_is_refused_naming_the_accepted_ones(visibility):
    with pytest.raises(ValueError, match=r"unknown visibility .*public, restricted or dm"):
        partition_for(visibility, GUILD, CHANNEL)


def test_partition_ids_keep_the_exact_snowflake():
    assert partition_for("public", 2**63 - 1, 1) == "guild:9223372036854775807"


# ---------------------------------------------------------------- scopes

@pytest.mark.parametrize("text,kind,ident", [
    (f"guild:{GUILD}", "guild", GUILD),
    (f"channel:{CHANNEL}", "channel", CHANNEL),
    ("dm:42", "dm", 42),
    ("guild:9223372036854775807", "guild", 2**63 - 1),
])
def test_parse_scope_accepts_the_three_kinds(text, kind, ident):
    scope = parse_scope(text)
    assert scope == Scope(kind, ident)
    assert str(scope) == text


ACCEPTED = "use guild:<guild_id>, channel:<channel_id> or dm:<channel_id>"


@pytest.mark.parametrize("text", [
    "", "guild", "guild:", "guild:abc", "guild:12a", "guild:-1", "guild:+1", "guild:1.0",
    "guild: 1", " guild:1", "GUILD:1", "user:1", "role:1", "partition:1", "guild:1:2", "1", ":1",
])
def test_parse_scope_rejects_everything_else_showing_the_accepted_forms(text):
    with pytest.raises(ScopeError) as info:
        parse_scope(text)
    assert ACCEPTED in str(info.value)
    assert repr(text) in str(info.value)
    assert isinstance(info.value, MempipeError)  # the CLI prints these as "Error: ..."


# Found while writing these tests: str.isdigit() let these through (and int('²') then crashed).
@pytest.mark.parametrize("text", ["dm:²", "guild:١٢"])
def test_parse_scope_rejects_non_ascii_digits(text):
    with pytest.raises(ScopeError, match="use guild:"):
        parse_scope(text)


# ---------------------------------------------------------------- local days

def test_day_bounds_in_utc():
    assert day_bounds(dt.date(2026, 11, 5), ZoneInfo("UTC")) == (
        dt.datetime(2026, 11, 5, tzinfo=UTC), dt.datetime(2026, 11, 6, tzinfo=UTC))


def test_day_bounds_at_utc_plus_14():
    start, end = day_bounds(dt.date(2026, 1, 1), ZoneInfo("Pacific/Kiritimati"))
    assert start == dt.datetime(2025, 12, 31, 10, tzinfo=UTC)  # the new year starts here first
    assert end == dt.datetime(2026, 1, 1, 10, tzinfo=UTC)
    assert start.tzinfo == UTC and end.tzinfo == UTC


def test_day_bounds_at_utc_minus_12():
    # POSIX sign convention: Etc/GMT+12 is UTC-12.
    start, end = day_bounds(dt.date(2026, 1, 1), ZoneInfo("Etc/GMT+12"))
    assert start == dt.datetime(2026, 1, 1, 12, tzinfo=UTC)
    assert end == dt.datetime(2026, 1, 2, 12, tzinfo=UTC)


def test_the_same_date_covers_different_instants_at_the_extremes():
    day = dt.date(2026, 1, 1)
    east = day_bounds(day, ZoneInfo("Pacific/Kiritimati"))
    west = day_bounds(day, ZoneInfo("Etc/GMT+12"))
    assert west[0] - east[0] == dt.timedelta(hours=26)
    assert east[1] <= west[0]  # no overlap at all


@pytest.mark.parametrize("day,hours", [
    (dt.date(2026, 3, 29), 23),   # Europe/Lisbon springs forward
    (dt.date(2026, 10, 25), 25),  # and falls back
    (dt.date(2026, 6, 1), 24),
])
def test_day_bounds_follow_daylight_saving(day, hours):
    start, end = day_bounds(day, ZoneInfo("Europe/Lisbon"))
    assert end - start == dt.timedelta(hours=hours)


def test_consecutive_days_tile_without_gaps():
    tz = ZoneInfo("America/Santiago")  # DST starts at local midnight: 00:00 does not exist
    days = days_between(dt.date(2025, 9, 1), dt.date(2025, 9, 14))
    bounds = [day_bounds(d, tz) for d in days]
    for (_, end), (start, _) in zip(bounds, bounds[1:]):
        assert end == start


@pytest.mark.parametrize("zone", ["Pacific/Kiritimati", "Etc/GMT+12", "Europe/Lisbon", "UTC"])
def test_local_day_agrees_with_day_bounds(zone):
    tz = ZoneInfo(zone)
    day = dt.date(2026, 1, 1)
    start, end = day_bounds(day, tz)
    assert local_day(start, tz) == day
    assert local_day(end - dt.timedelta(microseconds=1), tz) == day
    assert local_day(end, tz) == day + dt.timedelta(days=1)
    assert local_day(start - dt.timedelta(microseconds=1), tz) == day - dt.timedelta(days=1)


def test_local_day_of_a_utc_instant():
    ts = dt.datetime(2026, 1, 1, 11, 0, tzinfo=UTC)
    assert local_day(ts, ZoneInfo("Pacific/Kiritimati")) == dt.date(2026, 1, 2)
    assert local_day(ts, ZoneInfo("Etc/GMT+12")) == dt.date(2025, 12, 31)


# ---------------------------------------------------------------- day ranges

def test_history_days_are_the_six_days_before_day_one():
    assert HISTORY_DAYS == 6
    assert history_days(dt.date(2026, 11, 5)) == (dt.date(2026, 10, 30), dt.date(2026, 11, 4))


def test_history_days_cross_month_and_year_ends():
    assert history_days(dt.date(2026, 1, 3)) == (dt.date(2025, 12, 28), dt.date(2026, 1, 2))
    assert history_days(dt.date(2024, 3, 2)) == (dt.date(2024, 2, 25), dt.date(2024, 3, 1))  # leap year


def test_days_between_is_inclusive():
    assert days_between(dt.date(2026, 2, 27), dt.date(2026, 3, 2)) == [
        dt.date(2026, 2, 27), dt.date(2026, 2, 28), dt.date(2026, 3, 1), dt.date(2026, 3, 2)]
    assert days_between(dt.date(2026, 3, 1), dt.date(2026, 3, 1)) == [dt.date(2026, 3, 1)]


def test_days_between_refuses_a_reversed_range():
    with pytest.raises(ValueError, match=r"--to 2026-03-01 is before --from 2026-03-02"):
        days_between(dt.date(2026, 3, 2), dt.date(2026, 3, 1))
