"""What a run hands to workers, planned without a database: one job per item kind — a partition-
day's daily, a partition's historical rows, a group of (scope, user) merges — each carrying what
the in-process item gets (its day 1, --force, the run's kind, its recompute-queue entry, the
folds a refresh's merges consult), as JSON.

A job's `key` names its item (`daily:guild:1:2026-11-01`); it is procrastinate's `lock`, so two
jobs of one item never run at once. Its queueing lock is the key plus a digest of what the item
gets (not the run's id): a run that defers an item another run has waiting with the same inputs
waits for that job instead of queueing a second one, while an item asked for differently (say
with --force) gets its own job, run after the first (same lock).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Callable, Iterable

from ..calendar import daily_item_key
from ..errors import ConfigError
from ..hashing import input_hash

DAILY, HISTORICAL, MERGES = "mempipe.daily", "mempipe.historical", "mempipe.merges"
MERGE_PAIRS = 200  # at most this many (scope, user) merges per job; one user's merges stay in one job
Pair = tuple[str, int]  # (scope, user id)


@dataclass(frozen=True)
class JobSpec:
    task: str    # DAILY | HISTORICAL | MERGES
    key: str     # the item: the job's lock
    item: dict   # what the item gets (JSON values only)
    label: str   # how errors and logs name it

    @property
    def queueing_lock(self) -> str:
        return f"{self.key}#{input_hash(self.task, self.item)[:16]}"

    def kwargs(self, run: dict) -> dict:
        """The task's arguments: the run (its id, where counts go; its kind) and the item."""
        return {"run": run, "item": self.item}


def daily_jobs(work: Iterable[tuple[str, int | None, dt.date]], *, force: bool,
               queued: dict[tuple[str, dt.date], dt.datetime], day1: dict[str, dt.date],
               may_wait: Callable[[str, dt.date], bool] = lambda _p, _d: False) -> list[JobSpec]:
    """One job per partition-day of a RunPlan's `work`; a day from the recompute queue also gets
    when it was queued and its partition's day 1 (it leaves the queue when done); today's in a
    run as of now, that its fold may wait (RunPlan.may_wait)."""
    out = []
    for partition, guild_id, day in work:
        item = {"partition": partition, "guild_id": guild_id, "day": day.isoformat(), "force": force}
        if may_wait(partition, day):
            item["may_wait"] = True
        if (partition, day) in queued:
            item |= {"queued_at": queued[(partition, day)].isoformat(), "day1": day1[partition].isoformat()}
        out.append(JobSpec(DAILY, daily_item_key(partition, day), item,
                           f"partition-day {partition} {day.isoformat()}"))
    return out


def historical_jobs(parts: Iterable[dict], day1: Callable[[int | None], dt.date], *, force: bool) -> list[JobSpec]:
    """One job per partition: its users' past weeks as of its day 1."""
    out = []
    for p in parts:
        d1 = day1(p["guild_id"]).isoformat()
        item = {"partition": p["partition"], "guild_id": p["guild_id"], "day1": d1, "force": force}
        out.append(JobSpec(HISTORICAL, f"historical:{p['partition']}:{d1}", item,
                           f"past weeks of {p['partition']} as of {d1}"))
    return out


def merge_groups(pairs: Iterable[Pair], guild_of: Callable[[str], int | None],
                 size: int = MERGE_PAIRS) -> list[tuple[str, list[Pair]]]:
    """The merges in groups: by the scope's guild ("guild:<id>"; "dm" for DM scopes), then by
    user, at most `size` merges a group unless one user alone has more (a user's merges read the
    same facts: one job reads them once)."""
    by_group: dict[str, dict[int, list[Pair]]] = {}
    for scope, user in pairs:
        guild = guild_of(scope)
        name = f"guild:{guild}" if guild is not None else "dm"
        by_group.setdefault(name, {}).setdefault(user, []).append((scope, user))
    out: list[tuple[str, list[Pair]]] = []
    for name in sorted(by_group):
        users, chunk = by_group[name], []
        for user in sorted(users):
            if chunk and len(chunk) + len(users[user]) > size:
                out.append((name, chunk))
                chunk = []
            chunk.extend(users[user])
        if chunk:
            out.append((name, chunk))
    return out


def merge_jobs(groups: list[tuple[str, list[Pair]]], *, day1s: Iterable[dt.date], zones: dict[str, dt.date],
               force: bool, kind: str, folds: Callable[[list[Pair]], list[list]]) -> list[JobSpec]:
    """One job per group. `day1s`: the day 1s the run's merge inputs were read for; `zones`: each
    timezone in use -> its day 1 (a worker finds a guild's day 1 by its zone); `folds(pairs)`: the
    run's folds ([partition, day, input hash folded from]) these merges may consult."""
    days = sorted(d.isoformat() for d in set(day1s))
    zone_days = {z: d.isoformat() for z, d in sorted(zones.items())}
    out = []
    for name, pairs in groups:
        item = {"pairs": [[s, u] for s, u in pairs], "day1s": days, "zones": zone_days, "force": force,
                "kind": kind, "folds": folds(pairs)}
        digest = input_hash(item["pairs"])[:16]
        out.append(JobSpec(MERGES, f"merges:{name}:{digest}", item,
                           f"{len(pairs)} context(s) of {name} from {pairs[0][0]} user {pairs[0][1]}"))
    return out


def zone_days(timezones, day1: Callable[[int | None], dt.date]) -> dict[str, dt.date]:
    """Each timezone in use (the default, DMs' and unlisted guilds', and each guild's own) -> its
    day 1 by the run's `day1`."""
    out = {timezones.for_guild(None).key: day1(None)}
    for guild in sorted(timezones.guilds):
        out[timezones.for_guild(guild).key] = day1(guild)
    return out


def day1_by_zone(zones: dict[str, str], tz_for_guild) -> Callable[[int | None], dt.date]:
    """A worker's day 1 of a guild: its zone's day in the run's `zones`. A zone the run did not
    have (the worker's [timezones] differ from the run's) is a ConfigError."""
    days = {z: dt.date.fromisoformat(d) for z, d in zones.items()}

    def day1(guild: int | None) -> dt.date:
        zone = tz_for_guild(guild).key
        if zone not in days:
            raise ConfigError(f"this worker puts guild {guild} in timezone {zone}, which the run that queued the job "
                              f"does not use ({', '.join(sorted(days))}): give runs and workers the same [timezones]")
        return days[zone]

    return day1
