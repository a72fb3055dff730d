"""What a run hands to workers (pipeline/workers/jobs.py), planned without a database."""

from __future__ import annotations

import datetime as dt
import json
import types

import pytest

from pipeline.config import Timezones
from pipeline.errors import ConfigError
from pipeline.runner import plan_run
from pipeline.workers.dispatch import Dispatcher
from pipeline.workers.jobs import (DAILY, HISTORICAL, MERGES, daily_jobs, day1_by_zone, historical_jobs, merge_groups,
                                   merge_jobs, zone_days)

D = dt.date(2026, 11, 4)
UTC = dt.timezone.utc
G1, G2 = 1150000000000000001, 1150000000000000002
GUILD_OF = {f"guild:{G1}": G1, "channel:7": G1, f"guild:{G2}": G2, "dm:9": None, "dm:10": None}


def test_a_daily_job_per_partition_day_with_its_queue_entry_only_when_queued():
    parts = [{"partition": f"guild:{G1}", "guild_id": G1}, {"partition": "dm:9", "guild_id": None}]
    queued_at = dt.datetime(2026, 11, 4, 8, 30, 0, 123456, tzinfo=UTC)
    queue = [{"partition": "dm:9", "day": dt.date(2026, 10, 1), "queued_at": queued_at}]
    plan = plan_run(parts, None, lambda _g: D, queue)
    jobs = daily_jobs(plan.work, force=False, queued=plan.queued, day1=plan.day1)
    assert len(jobs) == len(plan.work) == 7 + 8  # days 1-7 each; dm:9 also its queued day
    assert all(j.task == DAILY for j in jobs)
    assert jobs[0].key == f"daily:guild:{G1}:2026-10-29" and jobs[0].label == f"partition-day guild:{G1} 2026-10-29"
    assert jobs[0].item == {"partition": f"guild:{G1}", "guild_id": G1, "day": "2026-10-29", "force": False}
    queued = [j for j in jobs if "queued_at" in j.item]
    assert [j.key for j in queued] == ["daily:dm:9:2026-10-01"]
    assert dt.datetime.fromisoformat(queued[0].item["queued_at"]) == queued_at  # to the microsecond
    assert queued[0].item["day1"] == "2026-11-04"
    json.dumps([j.kwargs({"id": 1, "kind": "run"}) for j in jobs])  # JSON all the way


def test_the_queueing_lock_is_the_item_and_what_it_gets_never_the_run():
    [a] = daily_jobs([(f"guild:{G1}", G1, D)], force=False, queued={}, day1={})
    [forced] = daily_jobs([(f"guild:{G1}", G1, D)], force=True, queued={}, day1={})
    assert a.key == forced.key  # one lock: never computed twice at once
    assert a.queueing_lock != forced.queueing_lock  # asked for differently: a job of its own
    assert a.queueing_lock.startswith(a.key + "#")
    runs = [{"id": 1, "kind": "run"}, {"id": 2, "kind": "refresh"}]
    jobs = [_job(a, run) for run in runs]  # the jobs two runs defer for the item
    assert {(j.lock, j.queueing_lock, j.queue) for j in jobs} == {(a.key, a.queueing_lock, "q")}
    assert [j.task_kwargs for j in jobs] == [{"run": run, "item": a.item} for run in runs]
    [again] = daily_jobs([(f"guild:{G1}", G1, D)], force=False, queued={}, day1={})
    assert again.queueing_lock == a.queueing_lock  # another run, same inputs: the same waiting job


def _job(spec, run: dict):
    """The procrastinate job a run's Dispatcher defers for `spec` (pipeline/workers/dispatch.py)."""
    from procrastinate import App
    from procrastinate.testing import InMemoryConnector

    dispatcher = types.SimpleNamespace(workers=types.SimpleNamespace(queue="q"), run=run)
    return Dispatcher._job(dispatcher, App(connector=InMemoryConnector()), spec)


def test_a_historical_job_per_partition_as_of_its_own_day_1():
    parts = [{"partition": f"guild:{G1}", "guild_id": G1}, {"partition": "dm:9", "guild_id": None}]
    jobs = historical_jobs(parts, lambda g: D if g else D - dt.timedelta(days=1), force=True)
    assert [(j.task, j.key) for j in jobs] == [(HISTORICAL, f"historical:guild:{G1}:2026-11-04"),
                                               (HISTORICAL, "historical:dm:9:2026-11-03")]
    assert jobs[1].item == {"partition": "dm:9", "guild_id": None, "day1": "2026-11-03", "force": True}


def test_merges_are_grouped_by_guild_then_user_and_a_users_merges_stay_together():
    pairs = [(f"guild:{G1}", 3), (f"guild:{G1}", 1), ("channel:7", 1), ("channel:7", 2), (f"guild:{G2}", 1),
             ("dm:9", 1), ("dm:10", 2)]
    groups = merge_groups(pairs, GUILD_OF.get)
    assert groups == [("dm", [("dm:9", 1), ("dm:10", 2)]),
                      (f"guild:{G1}", [(f"guild:{G1}", 1), ("channel:7", 1), ("channel:7", 2), (f"guild:{G1}", 3)]),
                      (f"guild:{G2}", [(f"guild:{G2}", 1)])]
    small = merge_groups(pairs, GUILD_OF.get, size=2)
    assert small == [("dm", [("dm:9", 1), ("dm:10", 2)]),
                     (f"guild:{G1}", [(f"guild:{G1}", 1), ("channel:7", 1)]),  # user 1's two merges together
                     (f"guild:{G1}", [("channel:7", 2), (f"guild:{G1}", 3)]),
                     (f"guild:{G2}", [(f"guild:{G2}", 1)])]
    assert merge_groups([(f"guild:{G1}", 1), ("channel:7", 1), ("channel:7", 2)], GUILD_OF.get, size=1) == [
        (f"guild:{G1}", [(f"guild:{G1}", 1), ("channel:7", 1)]),  # one user over the size: still one job
        (f"guild:{G1}", [("channel:7", 2)])]
    every = [p for _g, ps in small for p in ps]
    assert sorted(every) == sorted(pairs) and len(every) == len(set(every))  # each merge exactly once


def test_a_merge_job_carries_the_day_1s_zones_kind_and_only_its_folds():
    groups = merge_groups([(f"guild:{G1}", 1), ("dm:9", 2)], GUILD_OF.get)
    asked = []

    def folds(pairs):
        asked.append(pairs)
        return [["dm:9", "2026-11-04", "abc"]] if ("dm:9", 2) in pairs else []

    jobs = merge_jobs(groups, day1s={D, D - dt.timedelta(days=1), D}, zones={"UTC": D}, force=False, kind="refresh",
                      folds=folds)
    assert [j.task for j in jobs] == [MERGES, MERGES] and asked == [ps for _g, ps in groups]
    dm, guild = jobs
    assert dm.item == {"pairs": [["dm:9", 2]], "day1s": ["2026-11-03", "2026-11-04"], "zones": {"UTC": "2026-11-04"},
                       "force": False, "kind": "refresh", "folds": [["dm:9", "2026-11-04", "abc"]]}
    assert guild.item["folds"] == [] and guild.key.startswith(f"merges:guild:{G1}:")
    assert guild.label == f"1 context(s) of guild:{G1} from guild:{G1} user 1"
    [same] = merge_jobs(groups[1:], day1s={D}, zones={"UTC": D}, force=True, kind="run", folds=lambda _p: [])
    assert same.key == guild.key  # the same merges: one lock, whatever they get


def test_a_worker_finds_a_guilds_day_1_by_its_zone():
    tz = Timezones(default="UTC", guilds={G1: "Pacific/Kiritimati", G2: "Etc/GMT+12"})
    now = dt.datetime(2026, 11, 4, 11, 30, tzinfo=UTC)  # Kiritimati (UTC+14) is on Nov 5, GMT+12 on Nov 3

    def day1(guild):
        return now.astimezone(tz.for_guild(guild)).date()

    zones = zone_days(tz, day1)
    assert zones == {"UTC": D, "Pacific/Kiritimati": D + dt.timedelta(days=1), "Etc/GMT+12": D - dt.timedelta(days=1)}
    found = day1_by_zone({z: d.isoformat() for z, d in zones.items()}, tz.for_guild)
    assert [found(g) for g in (G1, G2, None, 42)] == [day1(g) for g in (G1, G2, None, 42)]
    with pytest.raises(ConfigError, match="Europe/Lisbon"):
        day1_by_zone({"UTC": "2026-11-04"}, Timezones(default="Europe/Lisbon").for_guild)(None)
