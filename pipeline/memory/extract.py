"""The offline fact extractor: durable facts about the speakers of one partition-day, from their
own first-person statements. No model, no I/O, deterministic; the extractive summarizer's facts.

A fact comes only from a speaker's own sentence (text.sentences) that is no question, quotation
(quoted spans, code, "> " lines), reported speech, conditional, wish or joke. Sentences split
into clauses before a new "I" / "my"; a clause starting (after filler such as "lol", or a time
phrase) with I / I'm / I've / I'll / my is restated in the third person without the person
(phrasing.third_person): the fact reuses the speaker's words, grounded in the line it cites.

Specific patterns (home, job, pets, family, favourites, preferences, languages, time zones, age,
birthday, skills, trips, events, plans) give confidence 0.9 and a `key` when a newer value
replaces an older one; dated ones get `event_day` (dates.py): a plan when after the day, else an
event. Other first-person statements with a proper noun, a number or an explicit date give
0.75; the rest nothing. `global_safe` only for technical preferences, favourite media / food /
games, languages and time zones, never when the text touches health, money, relationships,
moderation or feelings (vocab.sensitive).

Modules: patterns.py (what a clause starts with), mentions.py (what it says anywhere), phrasing.py
(the person changed, clauses, objects), vocab.py (the words), dates.py (days).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

from pipeline.memory import dates
from pipeline.memory.mentions import anywhere
from pipeline.memory.model import Candidate
from pipeline.memory.patterns import GENERIC, ING, SPECIFIC, anchored, proper, r, started, tense
from pipeline.memory.phrasing import IMPLIED, capitalise, clauses, cut, implied_subject, straight, third_person, tidy
from pipeline.memory.vocab import (ADV, EPHEMERAL_OBJECT, ILL, IM, OPINION, OTHER_PERSON, REL, REPORTING, SKIP_WORDS,
                                   sensitive)

if TYPE_CHECKING:
    from pipeline.summarize.base import PartitionDay
# Per line / sentence gates.
_MASK = re.compile(r"```.*?```|`[^`]*`|\"[^\"]*\"?|“[^”]*”?|«[^»]*»?|„[^“”]*[“”]?", re.DOTALL)
_QUOTE_LINE = re.compile(r"^\s*>.*$", re.MULTILINE)
_FIRST = r(r"\b(?:i|my|im|ive)\b")
_IMPLIED = r(r"(?:^|[.!?]\s+)(?:just )?(?:" + "|".join(sorted(IMPLIED)) + r")\b")
_WORD, _DIGIT, _FIRST_WORDS = re.compile(r"[a-z0-9'+#/]+"), re.compile(r"\d"), frozenset("i my i'm i've i'll".split())
_OWN_START = r(r"(?:i|i'm|i've|i'll|my)\b")

_NOT_DURABLE = frozenset("you your u ur y'all we us our it this that these those rn atm".split())
_MOMENT = r(rf"(?:{IM}|{ILL} be) {ADV}(?:at|on|in|back|level|lvl|done|here|there|online|offline|afk|out|late)\b")
_PRESENT = r(rf"{IM} {ADV}\w+ing\b")
_MY_REL = r(rf"my (?:[\w-]+ )?(?:{REL}s?|parents|grandparents|children|family|in-laws)\b")
_ON_LEFT = r(r"\s+on\s*$|\s+on(?=\s*[,.;!])")


def _is_date(text: str) -> bool:
    """The whole text is a date ("Last week", "On Saturday")."""
    found = dates.find_date(text, dt.date(2000, 1, 1))
    return found is not None and found.start == 0 and found.end >= len(text.rstrip(" ,"))


def _when(clause: str, lead: str, today: dt.date, past: bool | None) -> dates.DateMatch | None:
    if (when := dates.find_date(clause, today, past)) is None and (when := dates.find_date(lead, today, past)):
        when = replace(when, start=len(clause), end=len(clause))  # "Tomorrow I'm …": the lead's date, no span
    return when


def _generic(clause: str, when, today: dt.date, add) -> None:
    """Any other first-person statement with an anchor (proper noun, number, explicit date) that
    is not about the moment: not "I'm watching …" (unless dated later), "I'm on page 200", "I got
    2 kills", nor about "it" / "this" or the people addressed."""
    if OPINION.match(clause) or OTHER_PERSON.match(clause) or (_PRESENT.match(clause) and not (
            when and when.day > today)) or (_MOMENT.match(clause) and not proper(clause)) \
            or not anchored(clause, when) or EPHEMERAL_OBJECT.search(clause) or len(content_tokens(clause)) < 2 \
            or not _NOT_DURABLE.isdisjoint(_WORD.findall(tidy(clause).lower())):  # "this week" is no "this"
        return
    text, day, category = clause, None, "relationship" if _MY_REL.match(clause) else "other"
    if when is not None:
        if when.end <= len(clause) and when.start < when.end:
            text = _ON_LEFT.sub("", clause[:when.start] + clause[when.end:]).strip()
        category, day = ("plan" if when.day > today else "event"), when.day
    text = third_person(tidy(text))
    add(capitalise(ING.sub("", text)) if category == "plan" else text, category, None, False, GENERIC, day)


@lru_cache(maxsize=16384)  # chat repeats itself ("I'm going to bed"); pure, so a cache is safe
def _facts_of_clause(clause: str, lead: str, today: dt.date) -> tuple[tuple, ...]:
    """(text, category, key, global_safe, confidence, event_day) for every fact of one clause."""
    out: list[tuple] = []

    def add(text, category, key=None, safe=False, confidence=SPECIFIC, day=None):
        text = cut(capitalise(text.strip()))
        if content_tokens(text):
            out.append((text, category, key, safe and not sensitive(text), confidence, day))

    when = _when(clause, lead, today, tense(clause)) if dates.may_have_date(f"{clause} {lead}") else None
    anywhere(clause, when, today, add)
    decided = started(clause, when, today, add)
    if not out and not decided and _OWN_START.match(clause):
        _generic(clause, when, today, add)
    if len(out) > 1:  # "Has a golden retriever" says less than "Has a golden retriever named Max"
        words = [set(content_tokens(f[0])) for f in out]
        out = [f for i, f in enumerate(out) if not any(j != i and words[i] < words[j] for j in range(len(out)))]
    return tuple(out)


def _stems(text: str) -> set[str]:
    """Content words (text.content_tokens), lightly stemmed: "moved", "moves", "moving" -> "mov"."""
    out = set()
    for word in content_tokens(text):
        end = next((e for e in ("ing", "ies", "ied", "es", "ed", "s", "e") if word.endswith(e)
                    and len(word) - len(e) >= 3), "")
        out.add(word[:len(word) - len(end)])
    return out


def extract_facts(pd: PartitionDay) -> list[Candidate]:
    """Facts about the speakers of one partition-day, from their own first-person statements."""
    found: dict[tuple[int, str], Candidate] = {}
    for position, line in enumerate(pd.lines):
        if not line.text or not (_FIRST.search(line.text) or _IMPLIED.search(line.text)):
            continue
        own, have = _MASK.sub(" … ", _QUOTE_LINE.sub("", straight(line.text))), None
        for sentence in sentences(own):
            low = sentence.lower()
            listed = _WORD.findall(low)
            words = set(listed)
            if "?" in sentence or "…" in sentence or "want to" in low or not words.isdisjoint(SKIP_WORDS):
                continue  # a question, a quotation, a wish, a conditional, a joke
            if words.isdisjoint(_FIRST_WORDS) and implied_subject(sentence) is sentence:
                continue
            if not words.isdisjoint(REPORTING) and not _FIRST_WORDS.isdisjoint(
                    listed[next(i for i, w in enumerate(listed) if w in REPORTING):]):
                continue  # reported speech: "she said I'm a nurse", "I told him I live in Rome"
            for clause, lead in clauses(sentence, _is_date):
                for text, category, key, safe, confidence, day in _facts_of_clause(clause, lead, pd.day):
                    have, wanted = have if have is not None else _stems(straight(line.text)), _stems(text)
                    if len(wanted & have) < 0.5 * len(wanted) or not wanted:
                        continue  # grounding, a safety net: the phrasing keeps the speaker's words
                    norm = " ".join(text.lower().split()).rstrip(".!")
                    old = found.get((line.user_id, norm))
                    if old is None:
                        found[(line.user_id, norm)] = Candidate(
                            user_id=line.user_id, text=text, category=category, confidence=confidence,
                            global_safe=safe, sources=(position,), event_day=day, key=key)
                    elif position not in old.sources:
                        found[(line.user_id, norm)] = replace(
                            old, confidence=max(old.confidence, confidence), sources=old.sources + (position,),
                            event_day=old.event_day or day, key=old.key or key)
    return sorted(found.values(), key=lambda c: (c.sources[0], c.text, c.user_id))


# Last: pipeline.summarize imports this module (the extractive summarizer's facts), so its names
# are bound once extract_facts exists, whichever package is imported first.
from pipeline.summarize.text import content_tokens, sentences  # noqa: E402
