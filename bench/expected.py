"""Counts computed from the corpus alone (never from the pipeline's tables): who spoke where on
which local day, and from that the fewest summarizer calls a run can make, and what an
on-demand design would make.

The minimum, for a run as of day 1 = D over days `window` (the stages in ARCHITECTURE.md):
- daily: one call per partition-day with at least one message in the window;
- historical: one call per (partition, user) with at least one daily summary in days 2-7
  (D-6 .. D-1), except where the run finds a historical row as of an earlier day 1 (the previous
  night's, `stored_day1`) built from the same dated dailies: the user's days in that partition
  are the same in both windows (nothing on the new day 2, nothing aged out), so the input hash is
  the same and the row is copied without a call (pipeline/stages/historical.py). A daily text
  counts as unchanged unless its partition-day is in the window: `bench/instant.py` writes a
  user's daily from the day, their name and their own messages (and a day outside the window is
  not summarised again: its input keeps the names of its time);
- merge: one call per context (scope, user) with at least two non-empty inputs among facts,
  day-1 summaries and historical summaries of the scope's source partitions (guild:G <- G;
  channel:C <- C + its guild; a one-to-one dm:D <- D + every partition the user posted in;
  a group DM, or one the input does not call one-to-one <- itself). A context with one non-empty
  input is that input: no call.
The corpus has no facts, so a merge is needed exactly when the user has a day-1 daily and a
historical summary among the sources.

On-demand (summarise per user per read, the field's common practice): every (partition, user)
active in the week is read once a day; each read summarises each of that user's active days
(one call per day) and merges them (one more call, none when only one day has messages). This
is the floor of such a design: more reads per day cost that much again.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable
from zoneinfo import ZoneInfo


@dataclass
class Activity:
    kind: dict[str, str] = field(default_factory=dict)              # partition -> guild|channel|dm
    guild: dict[str, int | None] = field(default_factory=dict)      # partition -> guild id
    group: set[str] = field(default_factory=set)                    # group-DM partitions
    one_to_one: set[str] = field(default_factory=set)               # DMs the input says are one-to-one
    speakers: dict[tuple[str, dt.date], set[int]] = field(default_factory=lambda: defaultdict(set))
    chars: dict[dt.date, int] = field(default_factory=lambda: defaultdict(int))  # chat characters per local day
    messages: dict[dt.date, int] = field(default_factory=lambda: defaultdict(int))
    partitions_of: dict[int, set[str]] = field(default_factory=lambda: defaultdict(set))  # all-time, per user

    def users(self, days: Iterable[dt.date]) -> set[int]:
        days = set(days)
        return {u for (_p, d), us in self.speakers.items() if d in days for u in us}


def in_slice(row: dict, k: int, offset: int) -> bool:
    """Guild number offset, offset + k, … (guild 0 is the busiest), their restricted channels,
    and every k-th DM conversation."""
    from .corpus import CHANNEL_BASE, GUILD_BASE

    if row["guild_id"]:
        return (int(row["guild_id"]) - GUILD_BASE - 1) % k == offset
    return (int(row["channel_id"]) - CHANNEL_BASE) % k == offset


def partition_of(row: dict) -> str:
    vis = row["visibility"]
    if vis == "public":
        return f"guild:{int(row['guild_id'])}"
    return f"{'channel' if vis == 'restricted' else 'dm'}:{int(row['channel_id'])}"


def local_day_of(row: dict, timezones: dict[int, str], zones: dict[str, ZoneInfo]) -> dt.date:
    tz = timezones.get(int(row["guild_id"]), "UTC") if row["guild_id"] else "UTC"
    zone = zones.get(tz) or zones.setdefault(tz, ZoneInfo(tz))
    return dt.datetime.fromisoformat(row["ts"]).astimezone(zone).date()


def activity(rows: Iterable[dict], timezones: dict[int, str]) -> Activity:
    act = Activity()
    zones: dict[str, ZoneInfo] = {}
    for row in rows:
        p = partition_of(row)
        user = int(row["user_id"])
        day = local_day_of(row, timezones, zones)
        act.kind[p] = p.split(":")[0]
        act.guild[p] = int(row["guild_id"]) if row["guild_id"] else None
        if row.get("is_group"):
            act.group.add(p)
        elif row.get("is_group") is False:
            act.one_to_one.add(p)
        act.speakers[(p, day)].add(user)
        act.chars[day] += len(row["text"])
        act.messages[day] += 1
        act.partitions_of[user].add(p)
    return act


def _sources(act: Activity, scope: str, user: int, dm_speakers: dict[str, set[int]]) -> list[str]:
    kind = act.kind[scope]
    if kind == "guild":
        return [scope]
    if kind == "channel":
        return [scope, f"guild:{act.guild[scope]}"]
    private = scope in act.one_to_one and scope not in act.group and len(dm_speakers[scope]) <= 1
    return [scope] + sorted(act.partitions_of[user] - {scope}) if private else [scope]


def minimum(act: Activity, window: list[dt.date], day1: dt.date, *, stored_day1: dt.date | None = None) -> dict[str, int]:
    """Fewest calls of a run as of `day1` whose daily stage must compute the partition-days of
    `window` (the others are already up to date).

    stored_day1: an earlier day 1 whose historical rows the run finds stored (a steady nightly
    run: the previous night's); the (partition, user) pairs whose input is the same as of both
    need no historical call (`same_history`).

    A partition-day outside the window never needs its call again: its input keeps the names of
    its time (each message's author_name; a mention as the name stood then: issue 14, item 1), so
    a member's first post or a rename on a later day changes no earlier day's input hash.
    stored_day1: an earlier day 1 whose historical rows the run finds stored (a steady nightly
    run: the previous night's); the (partition, user) pairs whose input is the same as of both
    need no historical call (`same_history`)."""
    history = {day1 - dt.timedelta(days=i) for i in range(1, 7)}
    window = set(window)
    daily = sum(1 for (p, d) in act.speakers if d in window)
    day1_users: dict[str, set[int]] = defaultdict(set)
    hist_users: dict[str, set[int]] = defaultdict(set)
    dm_speakers: dict[str, set[int]] = defaultdict(set)
    for (p, d), us in act.speakers.items():
        if d == day1:
            day1_users[p] |= us
        if d in history:
            hist_users[p] |= us
        if act.kind[p] == "dm":
            dm_speakers[p] |= us
    historical = sum(len(us) for us in hist_users.values())
    if stored_day1 is not None:
        historical -= same_history(act, day1, stored_day1, window)
    scopes = set(day1_users) | set(hist_users)
    merge = contexts = 0
    for scope in scopes:
        for user in day1_users[scope] | hist_users[scope]:
            contexts += 1
            sources = _sources(act, scope, user, dm_speakers)
            has_day1 = any(user in day1_users[s] for s in sources)
            has_hist = any(user in hist_users[s] for s in sources)
            merge += has_day1 and has_hist
    return {"daily": daily, "historical": historical, "merge": merge,
            "total": daily + historical + merge, "contexts": contexts}


def same_history(act: Activity, day1: dt.date, earlier: dt.date, window: Iterable[dt.date] = ()) -> int:
    """(partition, user) pairs with a message in days 2-7 of `day1` whose days with messages there
    are the same as in days 2-7 of `earlier` (in a steady run, as of the day before: the user
    wrote nothing in the partition on the new day 2 and nothing aged out of the old day 7), none
    of them a day the run summarises again (`window`): the historical input is the same, and the
    row as of `earlier` is copied without a call."""
    hist = {day1 - dt.timedelta(days=i) for i in range(1, 7)}
    old = {earlier - dt.timedelta(days=i) for i in range(1, 7)}
    window = set(window)
    per: dict[tuple[str, int], set[dt.date]] = defaultdict(set)
    for (p, d), us in act.speakers.items():
        if d in hist | old:
            for u in us:
                per[(p, u)].add(d)
    return sum(1 for days in per.values()
               if days & hist and days & hist == days & old and not days & hist & window)


def on_demand(act: Activity, window: list[dt.date]) -> dict[str, int]:
    window = set(window)
    days: dict[tuple[str, int], int] = defaultdict(int)
    for (p, d), us in act.speakers.items():
        if d in window:
            for u in us:
                days[(p, u)] += 1
    summaries = sum(days.values())
    merges = sum(1 for n in days.values() if n > 1)
    return {"reads": len(days), "day_summaries": summaries, "merges": merges, "total": summaries + merges}
