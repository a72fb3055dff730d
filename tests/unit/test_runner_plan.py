"""The run plan is a pure function of the partitions, the days asked for and each guild's day 1."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from pipeline.runner import day1_for, plan_run, run_window

UTC = dt.timezone.utc
D = dt.date(2026, 11, 10)


def test_a_run_plans_days_1_to_7_of_each_partition_then_its_historical_stage():
    parts = [{"partition": "guild:1", "guild_id": 1}, {"partition": "dm:9", "guild_id": None}]
    plan = plan_run(parts, None, lambda _g: D)
    assert plan.by_partition["guild:1"] == [D - dt.timedelta(days=i) for i in range(6, -1, -1)]
    assert plan.by_partition["dm:9"] == plan.by_partition["guild:1"]
    assert plan.total == 2 * 7 + 2  # 14 daily items, then one historical stage per partition


def test_a_replay_adds_its_days_but_never_a_day_after_day_1():
    asked = [D - dt.timedelta(days=20), D, D + dt.timedelta(days=1)]
    plan = plan_run([{"partition": "guild:1", "guild_id": 1}], asked, lambda _g: D)
    days = plan.by_partition["guild:1"]
    assert D - dt.timedelta(days=20) in days and D + dt.timedelta(days=1) not in days
    assert len(days) == 8 and days == sorted(days)


def test_each_partition_uses_its_own_guilds_day_1():
    now = dt.datetime(2026, 11, 10, 23, 30, tzinfo=UTC)  # already the 11th in Tokyo
    zones = {1: ZoneInfo("Asia/Tokyo"), 2: ZoneInfo("America/New_York")}
    day1 = day1_for(now, lambda g: zones.get(g, UTC), None)
    plan = plan_run([{"partition": "guild:1", "guild_id": 1}, {"partition": "guild:2", "guild_id": 2}], None, day1)
    assert max(plan.by_partition["guild:1"]) == dt.date(2026, 11, 11)
    assert max(plan.by_partition["guild:2"]) == dt.date(2026, 11, 10)
    assert day1_for(now, lambda g: UTC, D)(1) == D  # an explicit day 1 wins everywhere


def test_the_window_covers_every_timezone_and_the_history_before_the_first_day():
    now = dt.datetime(2026, 11, 10, 12, tzinfo=UTC)
    first, last = run_window(now, None, None)
    assert first <= dt.date(2026, 11, 3) and last >= dt.date(2026, 11, 11)
    assert run_window(now, [dt.date(2026, 10, 1)], dt.date(2026, 10, 5)) == (dt.date(2026, 9, 29), dt.date(2026, 10, 5))


def test_queued_days_join_the_plan_however_old_but_never_after_day_1():
    parts = [{"partition": "guild:1", "guild_id": 1}, {"partition": "dm:9", "guild_id": None}]
    at = dt.datetime(2026, 11, 9, tzinfo=UTC)
    old, future = D - dt.timedelta(days=200), D + dt.timedelta(days=1)
    queued = [{"partition": "guild:1", "day": old, "queued_at": at}, {"partition": "guild:1", "day": D, "queued_at": at},
              {"partition": "guild:1", "day": future, "queued_at": at},
              {"partition": "guild:7", "day": old, "queued_at": at}]  # not a partition of this run
    plan = plan_run(parts, None, lambda _g: D, queued)
    assert plan.by_partition["guild:1"] == [old] + [D - dt.timedelta(days=i) for i in range(6, -1, -1)]
    assert plan.by_partition["dm:9"] == [D - dt.timedelta(days=i) for i in range(6, -1, -1)]
    assert plan.queued == {("guild:1", old): at, ("guild:1", D): at}  # what the run dequeues when done
    assert plan.day1 == {"guild:1": D, "dm:9": D}


def test_a_partitions_messages_are_read_in_spans_without_long_gaps():
    from pipeline.stage_loops import spans as _spans

    week = [D - dt.timedelta(days=i) for i in range(6, -1, -1)]
    assert _spans(week) == [week]
    old = D - dt.timedelta(days=200)
    assert _spans([old] + week) == [[old], week]
    assert _spans([week[0] - dt.timedelta(days=7)] + week) == [[week[0] - dt.timedelta(days=7)] + week]  # a week apart: one read
