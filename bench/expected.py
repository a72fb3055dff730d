"""Counts computed from the corpus alone (never from the pipeline's tables): who spoke where on
which local day, and from that the fewest summarizer calls a run can make, and what an
on-demand design would make.

The minimum, for a run as of day 1 = D over days `window` (the stages in ARCHITECTURE.md):
- daily: one call per partition-day with at least one message in the window;
- historical: one call per (partition, user) with at least one daily summary in days 2-7
  (D-6 .. D-1) whose dated dailies do not fit the room a context leaves for the past week (those
  are passed through as dated lines, no call: pipeline/stages/recent.py), except where the run
  finds a historical row as of an earlier day 1 (the previous
  night's, `stored_day1`) built from the same dated dailies: the user's days in that partition
  are the same in both windows (nothing on the new day 2, nothing aged out), so the input hash is
  the same and the row is copied without a call (pipeline/stages/historical.py). A daily text
  counts as unchanged unless its partition-day is in the window: `bench/instant.py` writes a
  user's daily from the day, their name and their own messages (and a day outside the window is
  not summarised again: its input keeps the names of its time);
- merge: one call per context (scope, user) whose day-1 and historical summaries of the scope's
  source partitions (guild:G <- G; channel:C <- C + its guild; a one-to-one dm:D <- D + every
  partition the user posted in; a group DM, or one the input does not call one-to-one <- itself)
  do not fit `[summary] context_chars` rendered as "Today: …" / "Past week: …"; one that fits is
  that render, no call. Facts go to the profile, never to a merge.
With `[summary] condense = "cut"` (the default) a week or recent part over its budget is cut to fit
without a call: historical and merge need none.
Whether a text fits depends on its length, so these two counts are for the summarizer the calls
section uses, `bench/instant.py`: its daily (and fold) text is "<speaker's name that day> d#<8 hex>",
its historical text "<name> h#<8 hex>" (`instant_text`); the lengths are measured with the
pipeline's own render functions (the rule), on texts built from the corpus.

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

from pipeline.config import SummaryLengths
from pipeline.stages.recent import render_recent, render_week, render_week_within, week_room, where_labels


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
    # (partition, day, user) -> (time, name) of the user's first message there that day: the speaker's name
    first_name: dict[tuple[str, dt.date, int], tuple[dt.datetime, str]] = field(default_factory=dict)

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
        ts = dt.datetime.fromisoformat(row["ts"])
        known = act.first_name.get((p, day, user))
        if known is None or ts < known[0]:
            act.first_name[(p, day, user)] = (ts, row.get("user_name") or "")
    return act


def instant_text(name: str, kind: str = "d") -> str:
    """As long as `bench/instant.py`'s answer: "<name> d#<crc32 in hex>" (a day), "… h#…" (a week)."""
    return f"{name} {kind}#00000000"


def _sources(act: Activity, scope: str, user: int, dm_speakers: dict[str, set[int]]) -> list[str]:
    kind = act.kind[scope]
    if kind == "guild":
        return [scope]
    if kind == "channel":
        return [scope, f"guild:{act.guild[scope]}"]
    private = scope in act.one_to_one and scope not in act.group and len(dm_speakers[scope]) <= 1
    return [scope] + sorted(act.partitions_of[user] - {scope}) if private else [scope]


def _week_text(act: Activity, p: str, user: int, days: list[dt.date], room: int, cut: bool) -> tuple[str, bool]:
    """The historical text of (p, user) over these days and whether a call made it."""
    dailies = [(d, instant_text(act.first_name[(p, d, user)][1])) for d in days]
    rendered = render_week(dailies)
    if len(rendered) <= room:
        return rendered, False
    if cut:  # [summary] condense = "cut": the week cut to fit, no call
        return render_week_within(dailies, room), False
    latest = act.first_name[(p, max(days), user)][1]
    return instant_text(latest, "h"), True


def minimum(act: Activity, window: list[dt.date], day1: dt.date, *, stored_day1: dt.date | None = None,
            lengths: SummaryLengths | None = None) -> dict[str, int]:
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
    need no historical call (`same_history`).

    lengths: the [summary] length targets (default: config/default.toml's)."""
    lengths = lengths or SummaryLengths()
    room = week_room(lengths)
    history = {day1 - dt.timedelta(days=i) for i in range(1, 7)}
    window = set(window)
    daily = sum(1 for (p, d) in act.speakers if d in window)
    day1_users: dict[str, set[int]] = defaultdict(set)
    hist_users: dict[str, set[int]] = defaultdict(set)
    hist_days: dict[tuple[str, int], list[dt.date]] = defaultdict(list)
    dm_speakers: dict[str, set[int]] = defaultdict(set)
    for (p, d), us in sorted(act.speakers.items()):
        if d == day1:
            day1_users[p] |= us
        if d in history:
            hist_users[p] |= us
            for u in us:
                hist_days[(p, u)].append(d)
        if act.kind[p] == "dm":
            dm_speakers[p] |= us
    cut = lengths.condense == "cut"
    weeks = {pu: _week_text(act, *pu, days, room, cut) for pu, days in hist_days.items()}
    called = {pu for pu, (_text, call) in weeks.items() if call}
    historical = len(called)
    if stored_day1 is not None:
        historical -= same_history(act, day1, stored_day1, window, only=called)
    scopes = set(day1_users) | set(hist_users)
    merge = contexts = 0
    for scope in scopes:
        for user in day1_users[scope] | hist_users[scope]:
            contexts += 1
            sources = _sources(act, scope, user, dm_speakers)
            today_src = [s for s in sources if user in day1_users[s]]
            week_src = [s for s in sources if (s, user) in weeks]
            where = where_labels(scope, today_src + week_src)  # dated lines, labelled in DM scopes
            today = [(day1, instant_text(act.first_name[(s, day1, user)][1]), where[s]) for s in today_src]
            week = [(day1, weeks[(s, user)][0], where[s]) for s in week_src]
            merge += not cut and len(render_recent(today, week)) > lengths.context_chars  # cut: no call
    return {"daily": daily, "historical": historical, "merge": merge,
            "total": daily + historical + merge, "contexts": contexts}


def same_history(act: Activity, day1: dt.date, earlier: dt.date, window: Iterable[dt.date] = (),
                 only: set[tuple[str, int]] | None = None) -> int:
    """(partition, user) pairs with a message in days 2-7 of `day1` whose days with messages there
    are the same as in days 2-7 of `earlier` (in a steady run, as of the day before: the user
    wrote nothing in the partition on the new day 2 and nothing aged out of the old day 7), none
    of them a day the run summarises again (`window`): the historical input is the same, and the
    row as of `earlier` is copied without a call. `only`: count only these pairs (the ones whose
    week is condensed by a call; a rendered week costs none either way)."""
    hist = {day1 - dt.timedelta(days=i) for i in range(1, 7)}
    old = {earlier - dt.timedelta(days=i) for i in range(1, 7)}
    window = set(window)
    per: dict[tuple[str, int], set[dt.date]] = defaultdict(set)
    for (p, d), us in act.speakers.items():
        if d in hist | old:
            for u in us:
                per[(p, u)].add(d)
    return sum(1 for pu, days in per.items() if (only is None or pu in only)
               and days & hist and days & hist == days & old and not days & hist & window)


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
