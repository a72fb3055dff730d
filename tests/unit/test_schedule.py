"""Scheduling logic, tested with `trigger.get_next_fire_time` and a given `now` (no sleeping):
hourly refresh, one rollover per local date per timezone (UTC+14, UTC−12, DST changes, midnight
gaps), the catch-up rule, job options, timezone groups; plus the log formats."""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import json
import logging
import os
import pickle
from collections import Counter
from zoneinfo import ZoneInfo

import pytest
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.util import ref_to_obj

from pipeline.config import Settings, load_settings
from pipeline.errors import ConfigError
from pipeline.logs import JsonFormatter, TextFormatter
from pipeline.scheduler.schedule import (
    LocalMidnightTrigger,
    build_triggers,
    catch_up_due,
    fire_times,
    in_zone,
    job_options,
    job_specs,
    missed_while_away,
    timezone_groups,
    zones_in_use,
)

UTC = dt.timezone.utc
LISBON_G, KIRITIMATI_G, GMT12_G, OTHER_G = 101, 102, 103, 104


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    """Settings unaffected by the developer's own MEMPIPE_* environment."""
    for name in list(os.environ):
        if name.startswith("MEMPIPE_"):
            monkeypatch.delenv(name)


def _settings(**scheduler) -> Settings:
    return load_settings(timezones={"default": "UTC", "guilds": {
        LISBON_G: "Europe/Lisbon", KIRITIMATI_G: "Pacific/Kiritimati", GMT12_G: "Etc/GMT+12"}},
        scheduler=scheduler)


def _defaults() -> Settings:
    return load_settings()


def _at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def _local_dates(trigger, start: dt.datetime, end: dt.datetime) -> Counter:
    tz = trigger.timezone
    return Counter(f.astimezone(tz).date() for f in fire_times(trigger, start, end))


# ---------------------------------------------------------------- timezone groups

def test_timezone_groups_put_unlisted_guilds_and_dms_under_the_default():
    s = _settings()
    groups = timezone_groups(s, [LISBON_G, KIRITIMATI_G, GMT12_G, OTHER_G, None])
    assert groups == {"UTC": {None, OTHER_G}, "Europe/Lisbon": {LISBON_G},
                      "Pacific/Kiritimati": {KIRITIMATI_G}, "Etc/GMT+12": {GMT12_G}}
    assert timezone_groups(s, []) == {"UTC": {None}}  # DMs always roll over with the default zone
    for zone, members in groups.items():  # the rollover job's predicate selects exactly its group
        pick = in_zone(s, zone)
        assert {g for g in (LISBON_G, KIRITIMATI_G, GMT12_G, OTHER_G, None) if pick(g)} == members


def test_one_rollover_job_per_zone_in_use_with_fixed_ids():
    s = _settings()
    assert zones_in_use(s) == ["Etc/GMT+12", "Europe/Lisbon", "Pacific/Kiritimati", "UTC"]
    assert list(build_triggers(s)) == ["refresh", "rollover:Etc/GMT+12", "rollover:Europe/Lisbon",
                                       "rollover:Pacific/Kiritimati", "rollover:UTC", "retention"]
    assert list(build_triggers(_defaults())) == ["refresh", "rollover:UTC", "retention"]


# ---------------------------------------------------------------- refresh and retention

def test_refresh_fires_every_hour_at_its_minute_in_utc():
    trigger = build_triggers(_settings(refresh_minute=7))["refresh"]
    now = _at("2026-11-22T00:55:00+00:00")
    assert trigger.get_next_fire_time(None, now) == _at("2026-11-22T01:07:00+00:00")
    fires = list(fire_times(trigger, now, now + dt.timedelta(days=1)))
    assert len(fires) == 24 and all(f.minute == 7 for f in fires)
    assert {b - a for a, b in zip(fires, fires[1:])} == {dt.timedelta(hours=1)}


def test_retention_fires_once_a_day():
    trigger = build_triggers(_settings(retention_hour=3, retention_minute=30))["retention"]
    now = _at("2026-11-22T04:00:00+00:00")
    assert trigger.get_next_fire_time(None, now) == _at("2026-11-23T03:30:00+00:00")
    assert len(list(fire_times(trigger, now, now + dt.timedelta(days=10)))) == 10


# ---------------------------------------------------------------- rollover: one per local midnight

def test_rollover_fires_at_each_zones_own_midnight_utc_plus_14_and_minus_12():
    triggers = build_triggers(_settings(rollover_minute=5))
    now = _at("2026-11-04T00:00:00+00:00")
    kiritimati, gmt12 = triggers["rollover:Pacific/Kiritimati"], triggers["rollover:Etc/GMT+12"]
    # Local 2026-11-05 00:05 comes 26 hours apart at the two ends of the world.
    assert kiritimati.get_next_fire_time(None, now) == _at("2026-11-04T10:05:00+00:00")
    assert gmt12.get_next_fire_time(None, now) == _at("2026-11-04T12:05:00+00:00")  # its 11-04
    for trigger in (kiritimati, gmt12, triggers["rollover:UTC"], triggers["rollover:Europe/Lisbon"]):
        fires = list(fire_times(trigger, now, now + dt.timedelta(days=30)))
        local = [f.astimezone(trigger.timezone) for f in fires]
        assert all((t.hour, t.minute) == (0, 5) for t in local), trigger
        dates = Counter(t.date() for t in local)
        assert set(dates.values()) == {1} and len(dates) == 30, trigger  # once per local date, none skipped


@pytest.mark.parametrize("day,gap_hours", [("2027-03-28", 23), ("2026-10-25", 25)])
def test_rollover_lisbon_dst_days_fire_exactly_once(day, gap_hours):
    """Spring forward (23-hour day) and fall back (25-hour day): one rollover per local date."""
    trigger = build_triggers(_settings())["rollover:Europe/Lisbon"]
    d = dt.date.fromisoformat(day)
    start = dt.datetime.combine(d - dt.timedelta(days=3), dt.time(12), UTC)
    dates = _local_dates(trigger, start, start + dt.timedelta(days=6))
    assert sorted(dates) == [d + dt.timedelta(days=i) for i in range(-2, 4)] and set(dates.values()) == {1}
    this = trigger.get_next_fire_time(None, dt.datetime.combine(d, dt.time(0), ZoneInfo("Europe/Lisbon")))
    following = trigger.get_next_fire_time(this, this)
    assert following.astimezone(UTC) - this.astimezone(UTC) == dt.timedelta(hours=gap_hours)  # elapsed time
    assert following.astimezone(trigger.timezone).time() == dt.time(0, 5)


@pytest.mark.parametrize("zone,day", [("America/Santiago", "2026-09-06"), ("America/Havana", "2027-03-14"),
                                      ("Asia/Beirut", "2027-03-28")])
def test_rollover_fires_on_days_whose_midnight_does_not_exist(zone, day):
    """Where DST skips midnight itself, the day starts at 01:00: the rollover fires at 01:05."""
    trigger = LocalMidnightTrigger(zone, 5)
    d = dt.date.fromisoformat(day)
    start = dt.datetime.combine(d - dt.timedelta(days=2), dt.time(12), UTC)
    fires = [f.astimezone(trigger.timezone) for f in fire_times(trigger, start, start + dt.timedelta(days=4))]
    assert [f.date() for f in fires] == [d - dt.timedelta(days=1), d, d + dt.timedelta(days=1), d + dt.timedelta(days=2)]
    assert [f.time() for f in fires] == [dt.time(0, 5), dt.time(1, 5), dt.time(0, 5), dt.time(0, 5)]


def test_canary_crontrigger_skips_a_day_without_midnight():
    """Why LocalMidnightTrigger exists: CronTrigger(hour=0) finds no 00:05 on America/Santiago's
    2026-09-06 and skips that day's rollover. If this fails, APScheduler fixed it."""
    cron = CronTrigger(hour=0, minute=5, timezone=ZoneInfo("America/Santiago"))
    first = cron.get_next_fire_time(None, _at("2026-09-05T03:00:00+00:00"))  # 23:00 on 09-04 there
    second = cron.get_next_fire_time(first, first)
    assert first.astimezone(cron.timezone).date() == dt.date(2026, 9, 5)
    assert second.astimezone(cron.timezone).date() == dt.date(2026, 9, 7)  # 09-06 skipped


@pytest.mark.parametrize("zone", ["UTC", "Europe/Lisbon", "Pacific/Kiritimati", "Etc/GMT+12", "America/Santiago",
                                  "America/Havana", "Asia/Beirut", "Australia/Lord_Howe", "Asia/Kathmandu",
                                  "America/St_Johns", "Pacific/Chatham"])
def test_rollover_fires_once_per_local_date_for_two_years(zone):
    trigger = LocalMidnightTrigger(zone, 5)
    start, end = _at("2026-01-01T00:00:00+00:00"), _at("2028-01-01T00:00:00+00:00")
    dates = _local_dates(trigger, start, end)
    first, last = min(dates), max(dates)
    assert set(dates.values()) == {1}
    assert len(dates) == (last - first).days + 1  # no local date without its rollover


def test_missed_rollovers_are_enumerated_like_apscheduler_does():
    """APScheduler's catch-up calls get_next_fire_time(previous, now) with a later `now`."""
    trigger = LocalMidnightTrigger("Europe/Lisbon", 5)
    previous = _at("2026-11-01T00:05:00+00:00")
    now = _at("2026-11-04T09:00:00+00:00")
    missed = []
    fire = trigger.get_next_fire_time(previous, now)
    while fire <= now:
        missed.append(fire)
        fire = trigger.get_next_fire_time(fire, now)
    assert [m.date() for m in missed] == [dt.date(2026, 11, 2), dt.date(2026, 11, 3), dt.date(2026, 11, 4)]


def test_local_midnight_trigger_pickles():
    trigger = LocalMidnightTrigger("Pacific/Kiritimati", 5)
    clone = pickle.loads(pickle.dumps(trigger))
    now = _at("2026-11-04T00:00:00+00:00")
    assert clone.get_next_fire_time(None, now) == trigger.get_next_fire_time(None, now)
    assert "Kiritimati" in str(clone) and "Kiritimati" in repr(clone)
    with pytest.raises(ValueError):
        LocalMidnightTrigger("UTC", 60)


# ---------------------------------------------------------------- catch-up and job options

def test_catch_up_after_three_days_down_is_one_run():
    trigger = build_triggers(_settings())["rollover:UTC"]
    last_ok = _at("2026-11-04T00:05:02+00:00")
    now = _at("2026-11-07T09:00:00+00:00")
    assert len(list(fire_times(trigger, last_ok, now))) == 3  # three midnights missed...
    assert catch_up_due(trigger, last_ok, now, 86400) == _at("2026-11-07T00:05:00+00:00")  # ...one run
    assert catch_up_due(trigger, now - dt.timedelta(hours=1), now, 86400) is None  # ran since the last fire
    assert catch_up_due(trigger, None, now, 86400) is None  # never ran: the trigger decides
    assert catch_up_due(trigger, last_ok, now, 3600) is None  # the latest fire is 9 h old: past a 1 h grace
    refresh = build_triggers(_settings())["refresh"]
    assert catch_up_due(refresh, last_ok, now, 86400) == _at("2026-11-07T08:07:00+00:00")


def test_a_job_that_never_ended_ok_is_retried_when_a_leader_starts():
    trigger = build_triggers(_settings())["rollover:UTC"]
    now = _at("2026-11-07T09:00:00+00:00")
    latest = _at("2026-11-07T00:05:00+00:00")
    assert missed_while_away(trigger, None, now, 86400) is None  # never ran: wait for midnight
    killed = {"last_ok_at": None, "last_started_at": _at("2026-11-07T00:05:01+00:00"), "last_outcome": "running"}
    assert missed_while_away(trigger, killed, now, 86400) == latest  # its leader died mid-run
    failed = {"last_ok_at": _at("2026-11-06T00:05:01+00:00"), "last_started_at": latest, "last_outcome": "failed"}
    assert missed_while_away(trigger, failed, now, 86400) == latest
    fine = {"last_ok_at": _at("2026-11-07T00:05:01+00:00"), "last_started_at": _at("2026-11-07T00:05:01+00:00")}
    assert missed_while_away(trigger, fine, now, 86400) is None


def test_job_options_are_set_on_purpose():
    s = _settings(misfire_grace_s=7200)
    assert job_options(s) == {"coalesce": True, "max_instances": 1, "misfire_grace_time": 7200,
                               "replace_existing": True}
    assert job_options(_defaults())["misfire_grace_time"] == 86400  # one rollover period


def test_scheduler_jobs_have_fixed_ids_importable_functions_and_the_options(monkeypatch):
    from pipeline.scheduler import jobs
    from pipeline.scheduler.service import make_scheduler

    s = _settings()
    rt = jobs.Runtime(None, s, key="test")
    now = _at("2026-11-22T00:00:00+00:00")
    scheduler = make_scheduler(rt, s, now=now, states={
        "rollover:UTC": {"last_ok_at": now - dt.timedelta(days=3)},   # missed: due at once
        "refresh": {"last_ok_at": now - dt.timedelta(minutes=5)}})    # ran after the last fire
    by_id = {j.id: j for j in scheduler.get_jobs()}
    assert set(by_id) == set(build_triggers(s))
    for spec in job_specs(s):
        job = by_id[spec.id]
        assert (job.coalesce, job.max_instances, job.misfire_grace_time) == (True, 1, 86400)
        assert job.func_ref == spec.func and inspect.iscoroutinefunction(ref_to_obj(job.func_ref))
        assert job.kwargs["service"] == "test"
        assert all(isinstance(v, str) for v in job.kwargs.values())  # picklable by a persistent store
    assert by_id["rollover:Europe/Lisbon"].kwargs["zone"] == "Europe/Lisbon"
    due_now = {j.id for j in scheduler.get_jobs() if getattr(j, "next_run_time", None) is not None}
    assert due_now == {"rollover:UTC"}
    again = make_scheduler(rt, s, now=now, run_now=True)
    assert {j.id for j in again.get_jobs() if getattr(j, "next_run_time", None) is not None} == {"refresh"}


async def _asleep_for_three_days(**options) -> int:
    """A real AsyncIOScheduler whose rollover was due three days ago (the machine slept)."""
    runs = []

    async def rollover():
        runs.append(dt.datetime.now(UTC))

    scheduler = AsyncIOScheduler(timezone=UTC)
    scheduler.start()
    logging.getLogger("apscheduler").setLevel(logging.ERROR)  # its "missed" warning is expected here
    scheduler.add_job(rollover, trigger=LocalMidnightTrigger("UTC", 5), id="rollover:UTC",
                      next_run_time=dt.datetime.now(UTC) - dt.timedelta(days=3), **options)
    await asyncio.sleep(0.3)
    scheduler.shutdown(wait=False)
    await asyncio.sleep(0)
    return len(runs)


def test_asleep_over_midnight_rolls_over_once_not_zero_or_seven_times():
    chosen = {k: v for k, v in job_options(_defaults()).items() if k != "replace_existing"}
    assert asyncio.run(_asleep_for_three_days(**chosen)) == 1
    # APScheduler's default grace (1 s) would skip it; no coalescing would run every missed fire.
    assert asyncio.run(_asleep_for_three_days(coalesce=True, misfire_grace_time=1)) == 0
    assert asyncio.run(_asleep_for_three_days(coalesce=False, misfire_grace_time=7 * 86400)) == 4


# ---------------------------------------------------------------- config

def test_scheduler_config_defaults_match_default_toml():
    from pipeline.config import SchedulerSettings

    assert load_settings().scheduler == SchedulerSettings()


@pytest.mark.parametrize("text,needle", [
    ("[scheduler]\nrefresh_minte = 5\n", "refresh_minte"),
    ("[scheduler]\nrefresh_minute = 60\n", "refresh_minute"),
    ('[scheduler]\ntimezone = "Mars/Olympus"\n', "Mars/Olympus"),
    ("[scheduler]\ntakeover_s = 0\n", "takeover_s"),
])
def test_scheduler_config_is_validated(tmp_path, text, needle):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=needle):
        load_settings(path)


# ---------------------------------------------------------------- log formats

def _record(**fields) -> logging.LogRecord:
    record = logging.LogRecord("pipeline.scheduler", logging.INFO, __file__, 1, "job %s %s", ("refresh", "ok"), None)
    record.fields = fields
    return record


def test_json_log_line_carries_the_fields():
    line = JsonFormatter().format(_record(job="refresh", partitions=3, tokens=120, duration_s=1.5, outcome="ok"))
    data = json.loads(line)
    assert "\n" not in line
    assert data["msg"] == "job refresh ok" and data["level"] == "info" and data["ts"].endswith("Z")
    assert (data["job"], data["partitions"], data["tokens"], data["outcome"]) == ("refresh", 3, 120, "ok")


def test_text_log_line_is_key_value():
    line = TextFormatter().format(_record(job="rollover:Europe/Lisbon", error="a b", jobs=["x", "y"]))
    assert line == 'INFO pipeline.scheduler: job refresh ok job=rollover:Europe/Lisbon error="a b" jobs=x,y'
