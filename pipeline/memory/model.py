"""What a fact is. ARCHITECTURE.md, "facts", is the contract; this module is its vocabulary."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

# Privacy levels, most private first. A fact's level is the level of the partition it was said
# in (level_of); `global` only by promotion (promote.py), and only from `guild_public`.
LEVELS = ("dm", "channel_restricted", "guild_public", "global")
CATEGORIES = ("identity", "preference", "relationship", "event", "plan", "skill/work", "other")
EPISODIC = frozenset({"event", "plan"})  # facts that happen on a date: shown with it
STATUSES = ("active", "superseded")  # a forgotten fact's rows are deleted, never kept (field.md)
MANUAL = "manual"  # the origin of a `facts remember` fact (else "extracted")


def level_of(partition: str) -> str:
    """The privacy level of a fact said in this partition: guild:G -> guild_public,
    channel:C -> channel_restricted, dm:D -> dm. Anything else is refused."""
    kind = partition.partition(":")[0]
    try:
        return {"guild": "guild_public", "channel": "channel_restricted", "dm": "dm"}[kind]
    except KeyError:
        raise ValueError(f"not a partition: {partition!r}") from None


@dataclass(frozen=True)
class Candidate:
    """A fact a summarizer proposes about one speaker of a partition-day, before validation.

    `text` is third person without the person's name ("Lives in Lisbon", "Has a cat named
    Miso"); `sources` are positions in the `lines` of the PartitionDay the summarizer was given
    (the messages the fact rests on); `key` names the attribute a fact sets when a newer value
    replaces an older one ("favourite game", "home city"), or is None; `event_day` is the
    absolute date of an episodic fact."""

    user_id: int
    text: str
    category: str = "other"
    confidence: float = 0.0
    global_safe: bool = False
    sources: tuple[int, ...] = ()
    event_day: dt.date | None = None
    key: str | None = None
