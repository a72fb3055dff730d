"""Pure functions for local days, partitions and scopes. No database, no clock."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from .errors import IdError, ScopeError
from .ids import parse_id

UTC = dt.timezone.utc
VISIBILITIES = ("public", "restricted", "dm")
HISTORY_DAYS = 6  # days 2-7 before day 1


def partition_for(visibility: str, guild_id: int | None, channel_id: int) -> str:
    """The audience a message belongs to (ARCHITECTURE.md, "partition")."""
    if visibility == "public":
        if guild_id is None:
            raise ValueError("a public message needs a guild id")
        return f"guild:{guild_id}"
    if visibility == "restricted":
        if guild_id is None:
            raise ValueError("a restricted message needs a guild id")
        return f"channel:{channel_id}"
    if visibility == "dm":
        return f"dm:{channel_id}"
    raise ValueError(f"unknown visibility {visibility!r} (use public, restricted or dm)")


@dataclass(frozen=True)
class Scope:
    kind: str  # guild | channel | dm
    id: int

    def __str__(self) -> str:
        return f"{self.kind}:{self.id}"


def parse_scope(text: str) -> Scope:
    """A scope from its text; ScopeError (an IdError) when malformed or its id is not a 64-bit id."""
    kind, _, ident = text.partition(":") if isinstance(text, str) else ("", "", "")
    shown = repr(text) if len(repr(text)) <= 60 else repr(text)[:59] + "…"
    # ASCII digits only: str.isdigit() also accepts "²" and Arabic-Indic digits
    if kind not in ("guild", "channel", "dm") or not re.fullmatch(r"0|[1-9][0-9]*", ident):
        # one spelling per scope (no leading zeros): a scope is a key of stored rows
        raise ScopeError(f"bad scope {shown}: use guild:<guild_id>, channel:<channel_id> or dm:<channel_id>")
    try:
        return Scope(kind, parse_id(ident))
    except IdError as exc:  # checked here, before a fact row is written under this scope
        raise ScopeError(f"bad scope {shown}: {exc}") from None


def day_bounds(day: dt.date, tz: ZoneInfo) -> tuple[dt.datetime, dt.datetime]:
    """[start, end) of a local calendar day, in UTC. DST days are 23 or 25 hours long."""
    start = dt.datetime.combine(day, dt.time(0), tzinfo=tz)
    end = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(0), tzinfo=tz)
    return start.astimezone(UTC), end.astimezone(UTC)


# Item keys (pipeline/stages/refresh.py `Item.key`): an item's claim, its worker job's lock, and
# the mark on the batch requests it records (pipeline/llm/batch.py), by which a message deletion
# finds the requests that may quote it (pipeline/store/batches.py `drop_batch_requests`).
def daily_item_key(partition: str, day: dt.date) -> str:
    """A partition-day's: "daily:guild:1:2026-11-01"."""
    return f"daily:{partition}:{day.isoformat()}"


def historical_item_key(partition: str, user_id: int | str, day1: dt.date | str) -> str:
    """A past week's: "historical:guild:1:<user>:<day 1>" ("%" as user and day: a LIKE pattern for
    every past week of the partition)."""
    return f"historical:{partition}:{user_id}:{day1 if isinstance(day1, str) else day1.isoformat()}"


def merge_item_key(scope: str, user_id: int | str) -> str:
    """A context's: "merge:guild:1:<user>"."""
    return f"merge:{scope}:{user_id}"


def local_day(ts: dt.datetime, tz: ZoneInfo) -> dt.date:
    return ts.astimezone(tz).date()


def history_days(day1: dt.date) -> tuple[dt.date, dt.date]:
    """First and last of days 2-7 for a given day 1."""
    return day1 - dt.timedelta(days=HISTORY_DAYS), day1 - dt.timedelta(days=1)


def days_between(first: dt.date, last: dt.date) -> list[dt.date]:
    if last < first:
        raise ValueError(f"--to {last} is before --from {first}")
    return [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]
