"""An in-process summarizer that answers at once: the pipeline's own cost with the model's
taken away.

It returns tiny strings (and one proposed fact per speaker, so the stages' fact handling is
measured too), but not constant ones: each is a short digest of the operation's
input (`Ana d#1a2b3c4d`). A constant answer would make every merge's input hash equal across
days and hide work the pipeline must do when a real model answers; a digest changes exactly
when the input does, like a model's answer would.
"""

from __future__ import annotations

import datetime as dt
import zlib

from pipeline.memory.model import Candidate
from pipeline.summarize.base import Outcome, PartitionDay, Usage


def _proposals(pd: PartitionDay) -> list[Candidate]:
    """One fact per speaker, as a model would propose some: the first words of their first
    message (grounded, so the stages validate, de-duplicate and store it like a real one)."""
    first: dict[int, int] = {}
    for i, ln in enumerate(pd.lines):
        first.setdefault(ln.user_id, i)
    return [Candidate(user_id=u, text=" ".join(pd.lines[i].text.split()[:8]) or "Wrote", category="other",
                      confidence=0.8, sources=(i,)) for u, i in first.items()]


def _digest(*parts: object) -> str:
    return f"{zlib.crc32(repr(parts).encode()):08x}"


class InstantSummarizer:
    """cheap=False (the default) stands in for a model: the pipeline writes each item when it is
    done, as it does after a model call. cheap=True lets it batch writes, as it does for the
    extractive summarizer (`pipeline/stages/writes.py`)."""

    kind = "instant"

    def __init__(self, *, cheap: bool = False) -> None:
        self.cheap = cheap
        self.calls: dict[str, int] = {"daily": 0, "fold": 0, "historical": 0, "merge": 0, "forget": 0}

    def fingerprint(self, operation: str) -> str:
        return f"instant-1:{operation}"

    def _count(self, operation: str) -> Usage:
        self.calls[operation] += 1
        return Usage(calls=1)

    async def daily(self, partition_day: PartitionDay) -> Outcome[dict[int, str]]:
        said: dict[int, list] = {}
        for ln in partition_day.lines:
            said.setdefault(ln.user_id, []).append(ln.message_id)
        out = {uid: f"{name} d#{_digest(partition_day.day, said.get(uid))}"
               for uid, name in partition_day.speakers.items()}
        return Outcome(out, self._count("daily"), facts=_proposals(partition_day))

    async def fold(self, new: PartitionDay, previous: dict[int, str]) -> Outcome[dict[int, str]]:
        said: dict[int, list] = {}
        for ln in new.lines:
            said.setdefault(ln.user_id, []).append(ln.message_id)
        out = {uid: f"{name} d#{_digest(previous.get(uid), said.get(uid))}" for uid, name in new.speakers.items()}
        return Outcome(out, self._count("fold"), facts=_proposals(new))

    async def historical(self, name: str, dailies: list[tuple[dt.date, str]]) -> Outcome[str]:
        return Outcome(f"{name} h#{_digest(dailies)}", self._count("historical"))

    async def merge(self, name: str, day1: str, historical: str) -> Outcome[str]:
        return Outcome(f"{name} c#{_digest(day1, historical)}", self._count("merge"))

    async def forget(self, facts: list[str], fact: str, subject: str = "") -> Outcome[list[int]]:
        found = [i for i, text in enumerate(facts) if fact.lower() in text.lower()]
        return Outcome(found, self._count("forget"))
