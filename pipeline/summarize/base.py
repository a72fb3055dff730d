"""What the stages hand a summarizer and what they get back."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

T = TypeVar("T")

OPERATIONS = ("daily", "historical", "merge", "forget")


@dataclass(frozen=True)
class ChatLine:
    """One message as the summarizer sees it: names, never raw ids, in its text."""

    message_id: int
    user_id: int
    name: str
    text: str
    ts: dt.datetime
    reply_to_name: str | None = None
    # Never shown to a model: the message's channel (provenance of a fact is (channel, message))
    # and the author of the message it replies to (a fact may rest on a reply to its subject).
    channel_id: int | None = None
    reply_to_user: int | None = None


@dataclass(frozen=True)
class PartitionDay:
    partition: str
    day: dt.date
    lines: tuple[ChatLine, ...]
    speakers: dict[int, str]  # user_id -> display name


@dataclass
class Usage:
    calls: int = 0          # summarizer operations performed
    llm_calls: int = 0      # requests sent to a model (0 for extractive)
    prompt_tokens: int = 0
    output_tokens: int = 0
    retries: int = 0
    fallbacks: int = 0
    cost: float = 0.0       # estimated, from configured prices

    def add(self, other: "Usage") -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class Outcome(Generic[T]):
    value: T
    usage: Usage = field(default_factory=lambda: Usage(calls=1))
    degraded_reason: str | None = None  # set when a fallback produced the value
    dropped_user_ids: int = 0
    # daily / fold only: facts proposed about the speakers (pipeline/memory/model.py Candidate),
    # with sources = 0-based positions in the lines of the PartitionDay the summarizer was given
    # (for fold: the `new` one)
    facts: list = field(default_factory=list)
    # why no model was asked although the summarizer has one (PASSED_FITS), else None; counted
    # per run as a pass-through (pipeline_runs.passed_fits)
    passthrough: str | None = None
    # daily / fold only: in-chat memory requests of the speakers (pipeline/memory/requests.py
    # Request, position = as for facts); the stages apply them (pipeline/stages/requests.py)
    requests: list = field(default_factory=list)


# daily / fold: every speaker's text already fits the length target, so it is kept as written
PASSED_FITS = "fits"


class Summarizer(Protocol):
    kind: str

    def fingerprint(self, operation: str) -> str:
        """Identifies everything besides the data that shapes an operation's output
        (kind, model, prompt template hash, length targets). Part of every input hash."""

    async def daily(self, partition_day: PartitionDay) -> Outcome[dict[int, str]]:
        """A summary for every speaker, and (Outcome.facts) the facts they stated that day."""

    async def fold(self, new: PartitionDay, previous: dict[int, str]) -> Outcome[dict[int, str]]:
        """Update running day summaries with messages that arrived since: returns a summary for
        every speaker of `new` (the others keep theirs), and the facts stated in `new`."""

    async def historical(self, name: str, dailies: list[tuple[dt.date, str]]) -> Outcome[str]: ...

    async def merge(self, name: str, day1: str, historical: str) -> Outcome[str]:
        """The recent part of a context: today, then the past week, within summary.context_chars
        (the merge stage puts the long-term profile in front of it)."""

    async def forget(self, facts: list[str], fact: str, subject: str = "") -> Outcome[list[int]]:
        """The 0-based positions of the facts (one per item) that state `fact`; `subject` is the
        person's name (words of it need not appear in a fact)."""
