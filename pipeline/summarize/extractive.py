"""The offline summarizer: no network, deterministic. It quotes each user's most salient
sentences within the configured length budget (extractive summarisation), so nothing is
invented and nothing crosses users. Its daily and fold facts come from the offline extractor
(pipeline/memory/extract.py).

Quoted chat is data (issue 15): each quotation is one sentence in “ ”, after its speaker's name
(a name that reads as an instruction or a role marker shows as "this member"), with markup made
plain (safe_text.as_data); a sentence that reads as an instruction to the bot or carries a secret
(pipeline/safety.py) is never chosen — counted in `left_out` and logged."""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections import defaultdict

from ..hashing import input_hash
from ..memory.extract import extract_facts
from ..memory.requests import find_requests
from .base import Outcome, PartitionDay, Usage
from ..safety import safe_name
from .prompts import template_hash
from .safe_text import as_data, clean_line, piece_unsafe
from .text import mentions_fact, pick, salience, sentences, shorten

log = logging.getLogger(__name__)
# 2: daily/fold facts, merge without facts, forget -> positions; 3: quotes safe to paste (instruction-
# like and secret sentences left out, markup plain), safe names, the week's quotes attributed
ALGORITHM_VERSION = "extractive-3"
# daily and fold only: in-chat memory requests (pipeline/memory/requests.py) found and never quoted
DAILY_VERSION = "requests-1"
SEP = " · "


def _placeholder(sentence: str) -> bool:
    """Our own "was present (…)" / "wrote N messages" notes: not something the user said."""
    return sentence.startswith("was present (") or re.fullmatch(r"wrote \d+ messages?", sentence) is not None


def _quote(s: str) -> str:
    return f"“{s}”"


def _quoted_list(candidates: list[str], budget: int) -> tuple[str, int]:
    """The most salient sentences, quoted, within `budget`; and how many that would have been
    chosen were left out because they read as an instruction to the bot or carry a secret (as
    written, or as cut to fit). Only the chosen are checked (the check is the costly part): one
    that fails is dropped and the choice made again."""
    # Every sentence costs its two quotation marks; every one after the first also a separator.
    room = budget - 2
    if room < 8:
        return "", 0
    # a code fence made plain (three ') says nothing: only sentences with a letter or digit
    cut = [(q, c) for q, c in ((shorten(as_data(c), room), c) for c in candidates) if any(ch.isalnum() for ch in q)]
    left_out = 0
    while True:
        idx = pick([q for q, _c in cut], room, sep_len=len(SEP) + 2)
        unsafe = {i for i in idx if piece_unsafe(cut[i][1]) or piece_unsafe(cut[i][0])}
        if not unsafe:
            return SEP.join(_quote(cut[i][0]) for i in idx), left_out
        left_out += len(unsafe)
        cut = [qc for i, qc in enumerate(cut) if i not in unsafe]


class ExtractiveSummarizer:
    kind = "extractive"
    cheap = True  # in-process and instant: results may be written in batches

    def __init__(self, lengths):
        self.lengths = lengths
        self.left_out = 0  # sentences never quoted: instruction-like or secret (pipeline/safety.py)

    def _count(self, left_out: int, what: str) -> None:
        if left_out:
            self.left_out += left_out
            log.info("%s: left out %d sentence(s) that read as an instruction to the bot or carry a secret",
                     what, left_out)

    def fingerprint(self, operation: str) -> str:
        version = [ALGORITHM_VERSION, DAILY_VERSION] if operation == "daily" else ALGORITHM_VERSION
        return input_hash(version, operation, template_hash(operation), self.lengths.text_key())[:24]

    @staticmethod
    def _usage() -> Usage:
        return Usage(calls=1)

    async def daily(self, partition_day: PartitionDay) -> Outcome[dict[int, str]]:
        per_user: dict[int, list[str]] = defaultdict(list)
        requests = find_requests(partition_day)
        asked = {r.position for r in requests}  # a request to the bot is not what the day was about
        for i, line in enumerate(partition_day.lines):
            if i not in asked:
                per_user[line.user_id].extend(sentences(line.text))
        out: dict[int, str] = {}
        for uid, name in sorted(partition_day.speakers.items()):
            count = sum(1 for ln in partition_day.lines if ln.user_id == uid)
            plural = "s" if count != 1 else ""
            informative = any(salience(s) > 0 for s in per_user.get(uid, []))
            # only chatter, or no room to quote: still record that they were there
            absent = f"wrote {count} message{plural}" if informative else f"was present ({count} short message{plural})"
            where = f"daily {partition_day.partition} {partition_day.day}"
            out[uid] = self._labelled(name, per_user.get(uid, []), absent, where)
        return Outcome(out, self._usage(), facts=extract_facts(partition_day), requests=requests)

    async def fold(self, new: PartitionDay, previous: dict[int, str]) -> Outcome[dict[int, str]]:
        """The running summary's quotes compete with the new sentences for the same budget."""
        per_user: dict[int, list[str]] = defaultdict(list)
        for uid, name in new.speakers.items():
            old = previous.get(uid, "")
            body = old.split(": ", 1)[1] if old.startswith(f"{safe_name(name)}: ") else ""
            per_user[uid].extend(s for s in sentences(body) if not _placeholder(s))
        requests = find_requests(new)
        asked = {r.position for r in requests}
        for i, line in enumerate(new.lines):
            if i not in asked:
                per_user[line.user_id].extend(sentences(line.text))
        out = {uid: self._labelled(name, per_user[uid], previous.get(uid, "x: was present").split(": ", 1)[-1],
                                   f"fold {new.partition} {new.day}")
               for uid, name in sorted(new.speakers.items())}
        return Outcome(out, self._usage(), facts=extract_facts(new), requests=requests)  # the new messages only

    def _labelled(self, name: str, candidates: list[str], absent: str, what: str) -> str:
        """ "Name: “…” · “…”" within the daily budget, or "Name: <absent>" when nothing fits."""
        budget = self.lengths.daily_chars
        label = shorten(f"{safe_name(name)}: ", max(budget // 3, 8))
        quoted, left_out = _quoted_list(candidates, budget - len(label))
        self._count(left_out, what)
        if not quoted:  # `absent` may be a model's running summary (a fold after the model failed)
            quoted = clean_line(absent).text or "was present"
        return shorten(label + quoted, budget)

    async def historical(self, name: str, dailies: list[tuple[dt.date, str]]) -> Outcome[str]:
        candidates: list[str] = []
        shown = safe_name(name)
        for _day, text in sorted(dailies, key=lambda d: d[0], reverse=True):  # newest first wins ties
            body = text.split(": ", 1)[1] if text.startswith(f"{shown}: ") else text
            candidates.extend(s for s in sentences(body) if not _placeholder(s))
        label = f"Past week ({len(dailies)} active day{'s' if len(dailies) != 1 else ''}): {shown}: "
        quoted, left_out = _quoted_list(candidates, self.lengths.historical_chars - len(label))
        self._count(left_out, "historical")
        return Outcome(shorten(label + (quoted or "only brief chatter"), self.lengths.historical_chars), self._usage())

    async def merge(self, name: str, day1: str, historical: str) -> Outcome[str]:
        """Today, then the past week, each cut to what is left of `context_chars`. The merge stage
        gives both as lines that already say when (pipeline/stages/recent.py): they are kept."""
        budget = self.lengths.context_chars
        parts: list[str] = []
        if day1:
            parts.append(day1 if day1.startswith("Today") else "Today: " + "\n".join(day1.splitlines()))
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
