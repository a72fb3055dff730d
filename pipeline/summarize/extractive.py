"""The offline summarizer: no network, deterministic. It quotes each user's most salient
sentences within the configured length budget (extractive summarisation), so nothing is
invented and nothing crosses users. Its daily and fold facts come from the offline extractor
(pipeline/memory/extract.py)."""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict

from ..hashing import input_hash
from ..memory.extract import extract_facts
from .base import Outcome, PartitionDay, Usage
from .prompts import template_hash
from .text import mentions_fact, pick, salience, sentences, shorten

ALGORITHM_VERSION = "extractive-2"  # 2: daily/fold facts, merge without facts, forget -> positions
SEP = " · "


def _placeholder(sentence: str) -> bool:
    """Our own "was present (…)" / "wrote N messages" notes: not something the user said."""
    return sentence.startswith("was present (") or re.fullmatch(r"wrote \d+ messages?", sentence) is not None


def _quote(s: str) -> str:
    return f"“{s}”"


def _quoted_list(candidates: list[str], budget: int) -> str:
    # Every sentence costs its two quotation marks; every one after the first also a separator.
    room = budget - 2
    if room < 8:
        return ""
    cut = [shorten(c, room) for c in candidates]
    idx = pick(cut, room, sep_len=len(SEP) + 2)
    return SEP.join(_quote(cut[i]) for i in idx)


class ExtractiveSummarizer:
    kind = "extractive"
    cheap = True  # in-process and instant: results may be written in batches

    def __init__(self, lengths):
        self.lengths = lengths

    def fingerprint(self, operation: str) -> str:
        return input_hash(ALGORITHM_VERSION, operation, template_hash(operation), self.lengths.model_dump())[:24]

    @staticmethod
    def _usage() -> Usage:
        return Usage(calls=1)

    async def daily(self, partition_day: PartitionDay) -> Outcome[dict[int, str]]:
        per_user: dict[int, list[str]] = defaultdict(list)
        for line in partition_day.lines:
            per_user[line.user_id].extend(sentences(line.text))
        out: dict[int, str] = {}
        for uid, name in sorted(partition_day.speakers.items()):
            count = sum(1 for ln in partition_day.lines if ln.user_id == uid)
            plural = "s" if count != 1 else ""
            informative = any(salience(s) > 0 for s in per_user.get(uid, []))
            # only chatter, or no room to quote: still record that they were there
            absent = f"wrote {count} message{plural}" if informative else f"was present ({count} short message{plural})"
            out[uid] = self._labelled(name, per_user.get(uid, []), absent)
        return Outcome(out, self._usage(), facts=extract_facts(partition_day))

    async def fold(self, new: PartitionDay, previous: dict[int, str]) -> Outcome[dict[int, str]]:
        """The running summary's quotes compete with the new sentences for the same budget."""
        per_user: dict[int, list[str]] = defaultdict(list)
        for uid, name in new.speakers.items():
            old = previous.get(uid, "")
            body = old.split(": ", 1)[1] if old.startswith(f"{name}: ") else ""
            per_user[uid].extend(s for s in sentences(body) if not _placeholder(s))
        for line in new.lines:
            per_user[line.user_id].extend(sentences(line.text))
        out = {uid: self._labelled(name, per_user[uid], previous.get(uid, f"{name}: was present").split(": ", 1)[-1])
               for uid, name in sorted(new.speakers.items())}
        return Outcome(out, self._usage(), facts=extract_facts(new))  # the new messages only

    def _labelled(self, name: str, candidates: list[str], absent: str) -> str:
        """ "Name: “…” · “…”" within the daily budget, or "Name: <absent>" when nothing fits."""
        budget = self.lengths.daily_chars
        label = shorten(f"{name}: ", max(budget // 3, 8))
        quoted = _quoted_list(candidates, budget - len(label)) or absent
        return shorten(label + quoted, budget)

    async def historical(self, name: str, dailies: list[tuple[dt.date, str]]) -> Outcome[str]:
        candidates: list[str] = []
        for _day, text in sorted(dailies, key=lambda d: d[0], reverse=True):  # newest first wins ties
            body = text.split(": ", 1)[1] if text.startswith(f"{name}: ") else text
            candidates.extend(s for s in sentences(body) if not _placeholder(s))
        label = f"Past week ({len(dailies)} active day{'s' if len(dailies) != 1 else ''}): "
        quoted = _quoted_list(candidates, self.lengths.historical_chars - len(label))
        return Outcome(shorten(label + (quoted or "only brief chatter"), self.lengths.historical_chars), self._usage())

    async def merge(self, name: str, day1: str, historical: str) -> Outcome[str]:
        budget = self.lengths.context_chars
        parts: list[str] = []
        if day1:
            parts.append("Today: " + "\n".join(day1.splitlines()))
        if historical:
            parts.append(historical if historical.startswith("Past week") else "Past week: " + historical)
        text = ""
        for part in parts:  # today, then history, each cut to what is left
            room = budget - len(text) - (1 if text else 0)
            if room < 24:
                break
            text += ("\n" if text else "") + shorten(part, room)
        return Outcome(text, self._usage())

    async def forget(self, facts: list[str], fact: str, subject: str = "") -> Outcome[list[int]]:
        """The positions of the facts that state `fact` (text.mentions_fact: every content word of
        it as a whole word, the subject's own name not required)."""
        return Outcome([i for i, text in enumerate(facts) if mentions_fact(text, fact, subject)], self._usage())


__all__ = ["ExtractiveSummarizer", "salience"]
