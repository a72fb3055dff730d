"""What runs when: pure functions of the settings and a given `now` (no sleeping, no clock).

Jobs (fixed ids):

| id                  | trigger                                   | does                                   |
|---------------------|-------------------------------------------|----------------------------------------|
| `refresh`           | every hour at `refresh_minute`            | days 1-7 of every partition, merges    |
| `rollover:<zone>`   | `rollover_minute` after each local midnight | the same for that zone's guilds (DMs and unlisted guilds: the default zone) |
| `retention`         | daily at `retention_hour:retention_minute` | deletes data past its window          |

Job options, on purpose (APScheduler's defaults are a 1 s grace and would skip a late run):

- `coalesce=True`: runs missed while the process or machine slept collapse into one. A run
  brings days 1-7 up to date as of *now*, so one run does the work of all the missed ones.
- `max_instances=1`: a job never overlaps itself (a long refresh makes the next hour's skip).
- `misfire_grace_time = scheduler.misfire_grace_s` (default 24 h = one rollover period): the
  latest missed rollover is always less than a day old, so a machine asleep over midnight rolls
  over once when it wakes — not zero times (the default 1 s grace) and not seven (no coalescing).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator
from zoneinfo import ZoneInfo

from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from ..config import Settings

UTC = dt.timezone.utc
REFRESH, RETENTION, ROLLOVER = "refresh", "retention", "rollover"
BATCH_POLL = "batch_poll"  # gemini.batch: collect finished batch jobs, start their runs again
_FUNCS = {
    REFRESH: "pipeline.scheduler.jobs:refresh_job",
    ROLLOVER: "pipeline.scheduler.jobs:rollover_job",
    RETENTION: "pipeline.scheduler.jobs:retention_job",
    BATCH_POLL: "pipeline.scheduler.jobs:batch_poll_job",
}


# ---------------------------------------------------------------- timezones

def zone_of(settings: Settings, guild_id: int | None) -> str:
    """The IANA zone name a guild's local days follow (DMs and unlisted guilds: the default)."""
    tz = settings.timezones
    return tz.guilds.get(guild_id, tz.default) if guild_id is not None else tz.default


def zones_in_use(settings: Settings) -> list[str]:
    """The default zone plus every zone configured for a guild: one rollover job each."""
    return sorted({settings.timezones.default, *settings.timezones.guilds.values()})


def timezone_groups(settings: Settings, guild_ids: Iterable[int | None]) -> dict[str, set[int | None]]:
    """Guilds grouped by zone. Guilds with a configured zone go under it; every other guild, and
    the DMs (None, always present), under the default zone."""
    groups: dict[str, set[int | None]] = {settings.timezones.default: {None}}
    for guild in guild_ids:
        groups.setdefault(zone_of(settings, guild), set()).add(guild)
    return groups


def in_zone(settings: Settings, zone: str) -> Callable[[int | None], bool]:
    """The rollover of `zone` selects these partitions: a predicate, so that a guild seen for
    the first time today is included without restarting anything."""
    return lambda guild_id: zone_of(settings, guild_id) == zone


# ---------------------------------------------------------------- triggers

class LocalMidnightTrigger(BaseTrigger):
    """Fires `minute` minutes after the first instant of every local date in `timezone`.

    Not `CronTrigger(hour=0, minute=m)`: where a DST change skips midnight itself
    (America/Santiago, America/Havana, Asia/Beirut…) that trigger finds no 00:0m on that date
    and silently skips the day's rollover (APScheduler 3.11.3; tests/unit/test_schedule.py keeps
    a canary). Here the day starts at its first existing instant (01:00 after a midnight gap), so
    every local date gets exactly one fire; on other days it is the same as the cron trigger.
    """

    __slots__ = ("timezone", "minute")

    def __init__(self, timezone: str | ZoneInfo, minute: int = 0):
        if not 0 <= minute <= 59:
            raise ValueError("minute must be within 0..59")
        self.timezone = timezone if isinstance(timezone, ZoneInfo) else ZoneInfo(timezone)
        self.minute = minute

    def fire_time(self, day: dt.date) -> dt.datetime:
        """The fire of local date `day`. A nonexistent local midnight (fold=0) converts to the
        offset in force before the gap, i.e. exactly the instant the gap ends."""
        start = dt.datetime.combine(day, dt.time(0), self.timezone).astimezone(UTC)
        return (start + dt.timedelta(minutes=self.minute)).astimezone(self.timezone)

    def get_next_fire_time(self, previous_fire_time, now):
        # Same contract as CronTrigger: the first fire at or after `now` when there was none
        # before, otherwise the first one after the previous fire (or at `now`, if earlier).
        if previous_fire_time is not None:
            threshold = min(now, previous_fire_time + dt.timedelta(microseconds=1))
            if threshold <= previous_fire_time:  # `now` at (or before) the previous fire
                threshold = previous_fire_time + dt.timedelta(microseconds=1)
        else:
            threshold = now
        day = threshold.astimezone(self.timezone).date() - dt.timedelta(days=1)
        while True:
            fire = self.fire_time(day)
            if fire >= threshold:
                return fire
            day += dt.timedelta(days=1)

    def __getstate__(self):
        return {"version": 1, "timezone": self.timezone.key, "minute": self.minute}

    def __setstate__(self, state):
        self.timezone, self.minute = ZoneInfo(state["timezone"]), state["minute"]

    def __str__(self):
        return f"local midnight + {self.minute} min [{self.timezone.key}]"

    def __repr__(self):
        return f"<LocalMidnightTrigger (timezone='{self.timezone.key}', minute={self.minute})>"


def build_triggers(settings: Settings) -> dict[str, BaseTrigger]:
    """Job id -> trigger: `refresh`, one `rollover:<zone>` per zone in use, `retention`, and with
    gemini.batch `batch_poll`."""
    s = settings.scheduler
    zone = ZoneInfo(s.timezone)
    triggers: dict[str, BaseTrigger] = {REFRESH: CronTrigger(minute=s.refresh_minute, timezone=zone)}
    for name in zones_in_use(settings):
        triggers[f"{ROLLOVER}:{name}"] = LocalMidnightTrigger(name, s.rollover_minute)
    triggers[RETENTION] = CronTrigger(hour=s.retention_hour, minute=s.retention_minute, timezone=zone)
    if settings.gemini.batch:  # every gemini.batch_poll_s (pipeline/llm/batch_jobs.py)
        triggers[BATCH_POLL] = IntervalTrigger(seconds=settings.gemini.batch_poll_s, timezone=zone)
    return triggers


def job_options(settings: Settings) -> dict:
    """The options every job gets (see the module docstring for why)."""
    return {"coalesce": True, "max_instances": 1, "misfire_grace_time": settings.scheduler.misfire_grace_s,
            "replace_existing": True}


@dataclass(frozen=True)
class JobSpec:
    id: str
    func: str                 # "module:function": importable, as a persistent job store needs
    trigger: BaseTrigger
    kwargs: dict = field(default_factory=dict)


def job_specs(settings: Settings) -> list[JobSpec]:
    specs = []
    for job_id, trigger in build_triggers(settings).items():
        kind, _, zone = job_id.partition(":")
        specs.append(JobSpec(job_id, _FUNCS[kind], trigger, {"zone": zone} if zone else {}))
    return specs


def kind_of(job_id: str) -> tuple[str, str | None]:
    """`rollover:Europe/Lisbon` -> ("rollover", "Europe/Lisbon"); `refresh` -> ("refresh", None)."""
    kind, _, zone = job_id.partition(":")
    return kind, zone or None


# ---------------------------------------------------------------- fires and catch-up

def fire_times(trigger: BaseTrigger, after: dt.datetime, until: dt.datetime) -> Iterator[dt.datetime]:
    """Every fire in (after, until], in order."""
    fire = trigger.get_next_fire_time(None, after + dt.timedelta(microseconds=1))
    while fire is not None and fire <= until:
        yield fire
        fire = trigger.get_next_fire_time(fire, fire)


def catch_up_due(trigger: BaseTrigger, last_ok: dt.datetime | None, now: dt.datetime,
                 grace_s: float) -> dt.datetime | None:
    """The catch-up rule when a leader starts (the in-memory job store remembers nothing across
    a restart): if the job fired at least once since `last_ok` (the start of its last run that
    ended ok — a run covers every fire before it began) and the latest such fire is at most
    `grace_s` old, that one fire is due now. Several missed fires coalesce into this one run:
    a run brings every partition's days 1-7 up to date, so after a 3-day outage one rollover per
    timezone fills every missing day. None: nothing to catch up (or never ran: the trigger decides).
    """
    if last_ok is None:
        return None
    latest = None
    for fire in fire_times(trigger, max(last_ok, now - dt.timedelta(seconds=grace_s, microseconds=1)), now):
        latest = fire
    return latest


def missed_while_away(trigger: BaseTrigger, state: dict | None, now: dt.datetime,
                      grace_s: float) -> dt.datetime | None:
    """catch_up_due for a job's `scheduler_state` row: after its last ok run; a job that started
    but never ended ok (killed, failed, cancelled) retries its latest fire within the grace; a
    job that never ran waits for its trigger."""
    state = state or {}
    if state.get("last_ok_at") is not None:
        return catch_up_due(trigger, state["last_ok_at"], now, grace_s)
    if state.get("last_started_at") is not None:
        return catch_up_due(trigger, now - dt.timedelta(seconds=grace_s, microseconds=1), now, grace_s)
    return None
