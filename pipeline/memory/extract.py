"""The offline fact extractor: durable facts about the speakers of one partition-day, from their
own statements. No model, no I/O, deterministic; the extractive summarizer's facts.

A fact comes only from a speaker's own sentence (text.sentences) that is no question, quotation
(quoted spans, code, "> " lines), reported speech, conditional, wish or joke; a statement before a
question to others in one sentence stands ("going to Porto on Friday, any tips?",
fragments.statement_part). Sentences split into clauses before a new "I" / "my" / "we" / "our"
and between verbs of one dropped subject ("packed everything and moved to Utrecht"); a clause
starting (after filler such as "lol", or a time phrase) with I / I'm / I've / I'll / my is
restated in the third person without the person (phrasing.third_person): the fact reuses the
speaker's words. A "we" / "our" clause is read as the speaker's (fragments.as_i) for where they
live or go, family and pets only, at 0.8 (LOOSE).

Specific patterns (home, job, pets, family, favourites, preferences, languages, time zones, age,
birthday, skills, trips, events, plans) give confidence 0.9 and a `key` when a newer value
replaces an older one; dated ones get `event_day` (dates.py): a plan when after the day, else an
event. Fragments without a subject ("qa tester at spotify", "trip to Oslo on Aug 23"), pets named
in another message and answers to the question just before give 0.8. Other first-person
statements with a proper noun, a number or an explicit date give 0.75; the rest nothing.
`global_safe` only for technical preferences, favourite media / food / games, languages and time
zones, never when the text touches health, money, relationships, moderation or feelings
(vocab.sensitive). Every fact is grounded as the validator measures it (MIN_GROUNDING of its
content words in the lines it cites) or not proposed.

Modules: patterns.py (what a clause starts with), mentions.py (what it says anywhere),
favourites.py, fragments.py (questions' heads, "we", fragments), context.py (across clauses and
messages, answers), phrasing.py (the person changed, clauses, objects), vocab.py (the words),
dates.py (days).
"""

from __future__ import annotations

import datetime as dt
import re
from collections import deque
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

from pipeline.config import MemorySettings
from pipeline.memory import dates
from pipeline.memory.context import answer, dated_place, moved_here, pet_facts
from pipeline.memory.favourites import favourites
from pipeline.memory.fragments import FIRST_DAY, TRIP, as_i, fragment, is_we, statement_part
from pipeline.memory.mentions import anywhere
from pipeline.memory.model import Candidate
from pipeline.memory.patterns import GENERIC, ING, LOOSE, SPECIFIC, anchored, proper, r, started, tense
from pipeline.memory.phrasing import IMPLIED, capitalise, clauses, cut, straight, third_person, tidy, unfilled
from pipeline.memory.vocab import (ADV, EPHEMERAL_OBJECT, ILL, IM, JOB, OPINION, OTHER_PERSON, PET, REL,
                                   REPORTING, SKIP_WORDS, sensitive)

if TYPE_CHECKING:
    from pipeline.summarize.base import PartitionDay

# A fact keeps at least this share of its content words in the lines it cites (the validator's
# `grounding`; [memory] min_grounding's default): below it the fact is not proposed.
MIN_GROUNDING: float = MemorySettings.model_fields["min_grounding"].default

# Per line / sentence gates.
_MASK = re.compile(r"```.*?```|`[^`]*`|\"[^\"]*\"?|“[^”]*”?|«[^»]*»?|„[^“”]*[“”]?", re.DOTALL)
_QUOTE_LINE = re.compile(r"^\s*>.*$", re.MULTILINE)
# A line is read when it may say something of the speaker: a first-person word, a verb chat says
# without "I", a favourite, a trip, a pet's or a person's name; a new job, a first day, a role
# ("qa tester at spotify", "nurse here"), a pet said to be one ("Miso! she's a cat"). Sets of
# words: one findall per line, not a regex per kind. (An answer is read whatever it says.)
_PETS, _JOBS = (frozenset(w for alt in rx[3:-1].split("|") for w in alt.split("\\s+")) for rx in (PET, JOB))
_GATE_WORDS = frozenset("""i my im ive i'm i've i'll we our we're we've we'll fav fave favs faves favourite favorite
favourites favorites goat beats tops trip trip's trips flight flights tickets holiday vacation vacay getaway name
named called""".split())
# A verb chat says without "I" opens a sentence or follows "and" ("packed everything and moved to …").
_IMPLIED = r(r"(?:^|[.!?,;]\s*|\s(?:and|then|&)\s+)(?:(?:just|finally|officially|now|recently|also|then|all) ){0,2}(?:"
             + "|".join(sorted(IMPLIED)) + r")\b")
_GATE_PAIRS = ((frozenset("new".split()), frozenset("job position role gig".split())),
               (frozenset("first 1st second 2nd".split()), frozenset("day week shift month".split())),
               (_JOBS | {j + "s" for j in _JOBS}, frozenset("at here for with".split())),
               (_PETS, frozenset("she's he's she he they're".split())))


def _gated(text: str) -> bool:
    if "(" in text or "@" in text:
        return True
    words = set(_WORD.findall(text.lower().replace("’", "'")))
    return not _GATE_WORDS.isdisjoint(words) or any(
        not a.isdisjoint(words) and not b.isdisjoint(words) for a, b in _GATE_PAIRS) or (
        not IMPLIED.isdisjoint(words) and _IMPLIED.search(text) is not None)


_WORD = re.compile(r"[a-z0-9'+#/]+")
_FIRST_WORDS = frozenset("i my i'm i've i'll we we're we've we'll our".split())
_FRAGMENT_WORDS = frozenset("at @ here with for".split())  # fragments.fragment needs one
_TRIP_WORDS = frozenset("trip flight holiday vacation vacay getaway day shift week".split())  # TRIP, FIRST_DAY
_SKIP_LINE = SKIP_WORDS | REPORTING | {"want"}  # no pet across clauses from "if I got a cat I'd call her Miso"
_TRIP_END = re.compile(r"^\s*(?:(?:lol|yay|finally|booked|woo+|let'?s go+|can't wait|cant wait)\b\s*)*[!.\s:)(😊🎉✈️]*$",
                       re.IGNORECASE)
_OWN_START = r(r"(?:i|i'm|i've|i'll|my)\b")

_NOT_DURABLE = frozenset("you your u ur y'all we us our it this that these those rn atm".split())
_MOMENT = r(rf"(?:{IM}|{ILL} be) {ADV}(?:at|on|in|back|level|lvl|done|here|there|online|offline|afk|out|late)\b")
_PRESENT = r(rf"{IM} {ADV}\w+ing\b")
_MY_REL = r(rf"my (?:[\w-]+ )?(?:{REL}s?|parents|grandparents|children|family|in-laws)\b")
_FAV_WORD = r(r"\b(?:fav\w*|fave|goat)\b")
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
def _facts_of_clause(clause: str, lead: str, today: dt.date, we: bool = False) -> tuple[tuple, ...]:
    """(text, category, key, global_safe, confidence, event_day) for every fact of one clause; of
    a "we" clause (already in the first person singular) only what patterns marked for it give,
    at most LOOSE sure."""
    out: list[tuple] = []

    def add(text, category, key=None, safe=False, confidence=SPECIFIC, day=None):
        text = cut(capitalise(text.strip()))
        if content_tokens(text):
            out.append((text, category, key, safe and not sensitive(text), min(confidence, LOOSE) if we
                        else confidence, day))

    when = _when(clause, lead, today, tense(clause)) if dates.may_have_date(f"{clause} {lead}") else None
    anywhere(clause, when, today, add, we)
    decided = started(clause, when, today, add, we)
    if not out and not decided and not we and _OWN_START.match(clause):
        _generic(clause, when, today, add)
    if len(out) > 1:  # "Has a golden retriever" says less than "Has a golden retriever named Max"
        words = [set(content_tokens(f[0])) for f in out]
        named = {w for f, ws in zip(out, words) if (f[2] or "").startswith("pet ") for w in ws}
        out = [f for i, f in enumerate(out) if not any(j != i and words[i] < words[j] for j in range(len(out)))
               and not (f[2] is None and f[1] == "other" and content_tokens(f[0])[-1:] and
                        content_tokens(f[0])[-1] in named)]  # "Adopted a kitten" next to "… a kitten named Mochi"
    return tuple(out)


def _trip(sentence: str, today: dt.date) -> tuple | None:
    """"trip to Oslo on Aug 23", "first day at Canonical tomorrow": a plan (or event) when the rest
    of the sentence is its date."""
    m = TRIP.match(sentence) or FIRST_DAY.match(sentence)
    if m is None or not dates.may_have_date(sentence):
        return None
    rest = sentence[m.end("x"):]
    when = dates.find_date(rest, today, False)
    if when is None or rest[:when.start].strip().lower() not in ("", "on", "in", "this", "for") \
            or not _TRIP_END.match(rest[when.end:]):
        return None
    text = f"{m.group('what').capitalize()} {m.group('to').lower() if m.re is TRIP else 'at'} {m.group('x')}"
    return text, "plan" if when.day > today else "event", None, False, LOOSE, when.day


@lru_cache(maxsize=16384)
def _facts_of_sentence(sentence: str, today: dt.date) -> tuple[tuple, ...]:
    """The facts of one statement (a question after it already cut off): favourites, fragments
    without a subject, and every clause's."""
    low = sentence.lower()
    listed = _WORD.findall(low)
    words = set(listed)
    if "…" in sentence:
        return ()  # a quotation
    if not words.isdisjoint(REPORTING) and not _FIRST_WORDS.isdisjoint(
            listed[next(i for i, w in enumerate(listed) if w in REPORTING):]):
        return ()  # reported speech: "she said I'm a nurse", "I told him I live in Rome"
    plain = unfilled(sentence)
    hypothetical = "want to" in low or not words.isdisjoint(SKIP_WORDS)
    out = [(text, "preference", key, safe and not sensitive(text), SPECIFIC, None)
           for text, key, safe in favourites(plain, hypothetical) if words.isdisjoint(REPORTING)]
    if hypothetical:
        return tuple(out)  # a wish, a conditional, a joke ("if I had to pick one game, it'd be …" is a favourite)
    if (not _FRAGMENT_WORDS.isdisjoint(words) or "@" in sentence) and (said := fragment(plain)) is not None:
        return (*out, (*said, False, LOOSE, None))
    first = not words.isdisjoint(_FIRST_WORDS)
    parts = clauses(sentence, _is_date) if first or not IMPLIED.isdisjoint(words) else []  # a verb without "I"
    if not first and not any(_OWN_START.match(c) or is_we(c) for c, _ in parts):
        trip = _trip(plain, today) if not _TRIP_WORDS.isdisjoint(words) else None
        return (*out, trip) if trip else tuple(out)
    favourite = bool(out) or _FAV_WORD.search(low) is not None  # "my favourite game is not Hades": nothing
    for i, (clause, lead) in enumerate(parts):
        we = is_we(clause)
        carried = i > 0 and clause not in sentence  # "woke up late and moved my meeting …": patterns only
        out += [f for f in _facts_of_clause(as_i(clause) if we else clause, lead, today, we)
                if not ((favourite or carried) and f[4] == GENERIC)]  # nor the generic rule restating a favourite
    return tuple(out)


def _line_facts(statements: list[str], earlier: list[tuple[int, str]], today: dt.date):
    """(text, category, key, confidence, day, earlier positions) said across the clauses of a line."""
    text = " . ".join(statements)
    low = text.lower()
    if "name" in low or "call" in low or not _PETS.isdisjoint(_WORD.findall(low)):
        for said, key, confidence, cited in pet_facts(text, earlier):
            yield said, "other", key, confidence, None, cited
    if " come" in low and (moved := moved_here(text)) is not None:
        yield moved, "identity", "home city", LOOSE, None, ()
    if len(statements) > 1 and " on " in text and (dated := dated_place(statements, today)) is not None:
        yield dated[0], dated[1], None, LOOSE, dated[2], ()


def _grounded(text: str, sources: tuple[int, ...], pd: PartitionDay, user_id: int, name: str) -> bool:
    """validate.grounding(text, cited lines, the speaker's name) >= MIN_GROUNDING. The words a
    fact shares with its lines as they are come first (each is a hit of the validator's too);
    their forms only when those are too few."""
    wanted = wanted_words(text, pd.speakers.get(user_id, name))
    if not wanted:
        return False
    texts = [pd.lines[s].text for s in sources]
    if len(wanted & frozenset().union(*map(line_words, texts))) / len(wanted) >= MIN_GROUNDING:
        return True
    found = frozenset().union(*map(line_forms, texts))
    return sum(1 for w in wanted if forms_of(w) & found) / len(wanted) >= MIN_GROUNDING


def extract_facts(pd: PartitionDay) -> list[Candidate]:
    """Facts about the speakers of one partition-day, from their own statements."""
    found: dict[tuple[int, str], Candidate] = {}
    earlier: dict[int, deque] = {}  # the speaker's last lines (position, text), newest first

    def add(line, position, text, category, key, safe, confidence, day, cited=()):
        sources = tuple(sorted({*cited, position}))
        if not all(pd.lines[s].user_id == line.user_id for s in sources):
            return
        if not _grounded(text, sources, pd, line.user_id, line.name):
            return  # the validator's grounding, a safety net: the phrasing keeps the speaker's words
        norm = " ".join(text.lower().split()).rstrip(".!")
        old = found.get((line.user_id, norm))
        if old is None:
            found[(line.user_id, norm)] = Candidate(
                user_id=line.user_id, text=text, category=category, confidence=confidence,
                global_safe=safe, sources=sources, event_day=day, key=key)
        elif position not in old.sources:
            found[(line.user_id, norm)] = replace(
                old, confidence=max(old.confidence, confidence), sources=tuple(sorted({*old.sources, *sources})),
                event_day=old.event_day or day, key=old.key or key)

    for position, line in enumerate(pd.lines):
        prev = pd.lines[position - 1] if position else None
        mine = earlier.setdefault(line.user_id, deque(maxlen=3))
        if not line.text:
            continue
        if prev is not None and prev.user_id != line.user_id and prev.text.rstrip().endswith("?") and (
                said := answer(prev, line)) is not None:
            add(line, position, *said, LOOSE, None)
        if _gated(line.text):
            own = _MASK.sub(" … ", _QUOTE_LINE.sub("", straight(line.text)))
            statements = [s for s in map(statement_part, sentences(own)) if s]
            for sentence in statements:
                for fact in _facts_of_sentence(sentence, pd.day):
                    add(line, position, *fact)
            low = own.lower()
            told = [s for s in statements if "…" not in s and _SKIP_LINE.isdisjoint(_WORD.findall(s.lower()))] \
                if "name" in low or "call" in low or " come" in low or " on " in low or not _PETS.isdisjoint(
                    _WORD.findall(low)) else None  # what _line_facts reads needs one of these words
            for text, category, key, confidence, day, cited in _line_facts(told, list(mine), pd.day) if told else ():
                add(line, position, text, category, key, False, confidence, day, cited)
        mine.appendleft((position, line.text))
    named = {(c.user_id, s, w) for c in found.values() if (c.key or "").startswith("pet ")
             for s in c.sources for w in content_tokens(c.text)}
    kept = [c for c in found.values() if not (  # "Got a kitten" beside "Has a kitten named Miso" of its line
        named and c.key is None and c.category == "other" and (last := content_tokens(c.text)[-1:])
        and any((c.user_id, s, last[0]) in named for s in c.sources))]
    return sorted(kept, key=lambda c: (c.sources[0], c.text, c.user_id))


# Last: pipeline.summarize imports this module (the extractive summarizer's facts), so its names
# are bound once extract_facts exists, whichever package is imported first.
from pipeline.memory.validate import forms_of, line_forms, line_words, wanted_words  # noqa: E402  (the validator's own, for parity)
from pipeline.summarize.text import content_tokens, sentences, tokens  # noqa: E402
