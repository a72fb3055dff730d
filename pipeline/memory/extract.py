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
moderation or feelings (phrasing.sensitive).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

from pipeline.memory import dates
from pipeline.memory.model import Candidate
from pipeline.memory.phrasing import (ADV, ADVERBS, BAD_OBJECT, CHATTER, EPHEMERAL_NUMBER, EPHEMERAL_OBJECT, EVENT,
                                      GOING_TO_VERB, ILL, IM, IMPLIED, INSTRUMENT, IVE, JOB, LANG, LANGS, NOT_THINGS,
                                      NUMBER_WORDS, OPINION, OTHER_PERSON, PET, REL, REPORTING, SAFE_THINGS,
                                      SKIP_WORDS, TECH, TIME_AMOUNT, TRIGGERS, TRIVIAL_PLACE, TZ, article, capitalise,
                                      clauses, cut, implied_subject, is_past, object_end, possessive, sensitive,
                                      straight, third_person, tidy)

if TYPE_CHECKING:
    from pipeline.summarize.base import PartitionDay

SPECIFIC, GENERIC = 0.9, 0.75


def _r(pattern: str) -> re.Pattern:
    return re.compile(pattern, re.IGNORECASE)


_TZ_WORD = _r(TZ + "$")

# Per line / sentence gates.
_MASK = re.compile(r"```.*?```|`[^`]*`|\"[^\"]*\"?|“[^”]*”?|«[^»]*»?|„[^“”]*[“”]?", re.DOTALL)
_QUOTE_LINE = re.compile(r"^\s*>.*$", re.MULTILINE)
_FIRST = _r(r"\b(?:i|my|im|ive)\b")
_IMPLIED = _r(r"(?:^|[.!?]\s+)(?:just )?(?:" + "|".join(sorted(IMPLIED)) + r")\b")
_WORD, _DIGIT, _FIRST_WORDS = re.compile(r"[a-z0-9'+#/]+"), re.compile(r"\d"), frozenset("i my i'm i've i'll".split())
_OWN_START = _r(r"(?:i|i'm|i've|i'll|my)\b")

# (regex at a clause's start, category, key, global_safe). The fact is the clause up to the
# regex's end — or, with a group "x", to the end of that object — in the third person.
# category "episodic": plan or event by its date (no date: event when past tense, else plan).
# global_safe "tech": only a technical object matches; True on a preference: safe when technical.
_STARTS = [(_r(p), c, k, g) for p, c, k, g in (
    (rf"^(?:i {ADV}live|{IM} {ADV}(?:living|based|located)|{IVE} {ADV}(?:been living|lived)) "
     r"(?:in|near|outside(?: of)?|close to|just outside(?: of)?) (?P<x>)", "identity", "home city", False),
    (rf"^(?:i|{IVE}) {ADV}(?:moved|relocated)(?: back| over| out)? to (?P<x>)", "identity", "home city", False),
    (rf"^(?:{IM} {ADV}(?:moving|relocating)|{ILL} {ADV}(?:be )?(?:moving|move|relocate)|{IM} going to move) "
     r"(?:back )?to (?P<x>)", "episodic", None, False),
    (rf"^(?:{IM} {ADV}(?:originally )?from|i {ADV}grew up in|i was born(?: and raised)? in (?!\d)) ?(?P<x>)",
     "identity", "hometown", False),
    (rf"^i was born in (?:19|20)\d\d\b", "identity", "birth year", False),
    (rf"^(?:i {ADV}work|{IM} {ADV}working|{IVE} {ADV}(?:been working|worked))(?: remotely| from home)?"
     r"(?: as an? [\w -]+?)? (?:at|for) (?P<x>)", "skill/work", "job", False),
    (rf"^(?:i {ADV}work|{IM} {ADV}working) as (?P<x>)", "skill/work", "job", False),
    (rf"^(?:i {ADV}work|{IM} {ADV}working) in (?P<x>)", "skill/work", None, False),
    (rf"^(?:i {ADV}(?:started|got|landed|accepted|took)|{IVE} {ADV}(?:got|started|landed|accepted))"
     r"(?: a| my| the)?(?: new| full-time| part-time)?(?: job| position| role| internship| gig| contract)"
     r"(?: as an? [\w -]+?)? (?:at|with|for) (?P<x>)", "skill/work", "job", False),
    (rf"^(?:{IM} {ADV}starting|{ILL} {ADV}(?:be )?start(?:ing)?|i {ADV}start)(?: a| my)?(?: new)?"
     r"(?: job| position| role| internship)?(?: as an? [\w -]+?)? (?:at|with) (?P<x>)", "episodic", None, False),
    (rf"^i {ADV}got hired (?:at|by) (?P<x>)", "skill/work", "job", False),
    (rf"^i {ADV}got promoted(?: to (?P<x>))?", "skill/work", None, False),
    (rf"^{IM} {ADV}an? (?:[\w-]+ ){{0,3}}{JOB}s?\b(?: (?:at|for|in) (?P<x>)(?=\w))?", "skill/work", "job",
     False),
    (rf"^{IM} {ADV}(?:retired|unemployed|self-employed|between jobs|a stay[- ]at[- ]home \w+)\b", "skill/work",
     "job", False),
    (rf"^(?:{IM}|{IVE} {ADV}been) {ADV}(?:a )?(?:vegetarian|vegan|pescatarian)\b", "preference", "diet", False),
    (rf"^{IM} {ADV}(?:more of )?an? (?P<x>\w+) person\b", "preference", None, False),
    (rf"^i {ADV}(?:collect|knit|crochet|paint|draw|bake|brew|surf|skate|climb|garden|sew|dance|swim|hike|cycle|"
     r"sing|skateboard|snowboard|ski|fish) (?P<x>)", "preference", None, False),
    (rf"^{IM} {ADV}(?-i:(?P<x>[A-Z][a-z]+(?:an|ese|ish|ch|i)))\b(?=\s*(?:$|[,.!;]|and\b|but\b|btw\b|lol\b))",
     "identity", None, False),
    (rf"^i {ADV}use (?P<x>\w+/\w+(?:/\w+)?) pronouns\b", "identity", "pronouns", False),
    (rf"^{IM} {ADV}(?:allergic to (?P<x>)|lactose intolerant|celiac|diabetic)", "other", None, False),
    (rf"^(?:{IM} {ADV}(?:learning|studying|practi[cs]ing|teaching myself|doing an? (?:phd|masters?|master's|"
     rf"degree|bachelor'?s|apprenticeship|residency|course))|{IVE} {ADV}been (?:learning|"
     rf"studying|practi[cs]ing|coding in|programming in|working on|building)|i {ADV}(?:study|teach)) (?P<x>)",
     "skill/work", None, False),
    (rf"^i {ADV}(?:code|program|write code|develop|write) (?:mostly |mainly )?in (?P<x>)", "preference", None, "tech"),
    (rf"^i {ADV}(?:use|daily drive|run) (?P<x>)", "preference", None, "tech"),
    (rf"^(?:i {ADV}play|{IVE} {ADV}been playing|{IM} {ADV}playing) (?:the )?{INSTRUMENT}\b", "skill/work",
     None, False),
    (rf"^(?:i {ADV}(?:play|main)|{IVE} {ADV}been (?:playing|watching|reading|listening to)) (?P<x>)",
     "preference", None, False),
    (rf"^(?:i {ADV}(?:love|like|prefer|enjoy|adore|hate|dislike|can't stand)|i {ADV}(?:don't|do not) "
     rf"(?:like|enjoy)|{IM} {ADV}(?:an? (?:big |huge )?fan of|obsessed with|(?:really |super )?into)) (?P<x>)",
     "preference", None, True),
    (rf"^(?:i {ADV}(?:can )?speak|{IM} {ADV}fluent in) (?P<x>{LANGS}(?:(?:,|,? and| &) {LANGS})*)", "identity",
     "language", True),
    (rf"^{IM} {ADV}a native (?:{LANG} )speaker\b", "identity", "language", True),
    (rf"^{IM} {ADV}(?:in |on )?{TZ}(?: time)?(?=$|[\s,.;!])", "identity", "timezone", True),
    (rf"^{IM} {ADV}(?:1[3-9]|[2-9]\d)(?: ?(?:years? old|yo|y/o|yrs? old))?(?=\s*(?:$|[,.;!]|and\b|but\b|now\b|"
     r"btw\b|lol\b))", "identity", "age", False),
    (rf"^i {ADV}turned (?:1[3-9]|[2-9]\d)\b", "identity", "age", False),
    (rf"^{IM} {ADV}turning (?:1[3-9]|[2-9]\d)\b", "episodic", None, False),
    (rf"^(?:{IM} {ADV}(?:married|engaged|divorced|single|widowed)|i {ADV}got (?:married|engaged|divorced))\b",
     "relationship", "relationship status", False),
    (rf"^{IM} {ADV}getting (?:married|engaged|divorced)\b", "episodic", None, False),
    (rf"^(?:i {ADV}graduated|{IM} {ADV}graduating)(?: from (?P<x>))?", "episodic", None, False),
    (rf"^(?:{IM}|i {ADV}became|{IVE} {ADV}become) {ADV}an? (?:new )?(?:dad|mom|mum|father|mother|parent|"
     r"grandma|grandpa|grandparent)\b",
     "relationship", None, False),
    (rf"^(?:{IVE}(?: got)?|i {ADV}have) (?:a|an|one|two|three|four|five|six|\d) (?:[\w-]+ )?(?:{REL}s?|children|"
     r"siblings?|grandkids?|grandchildren)\b", "relationship", None, False),
    (rf"^(?:{IVE}(?: got)?|i {ADV}have) (?:a|an|one|two|three|four|five|six|\d) (?:[\w-]+ )?{PET}s?\b", "other",
     None, False),
)]
_TRAVEL = [(_r(p), past) for p, past in (
    (rf"^(?:{IM} {ADV}(?:flying|going|travell?ing|heading|driving|off|visiting|leaving for|taking a trip to|"
     rf"going back|coming|returning|spending \w+ \w+ in)|{ILL} {ADV}(?:be )?(?:fly|go|travel|head|drive|visit|in|at|"
     rf"flying|going|travell?ing|heading|visiting)|i {ADV}(?:fly|leave|head)(?: out)?)\s+(?:(?:back |home |over )?"
     r"(?:to|for|in|at|out to|over to)\s+)?", False),
    (rf"^(?:i {ADV}(?:went|flew|drove|travell?ed|visited|got back|came back|returned|attended|saw|spent "
     rf"(?:a|the|two|three|\d+) (?:days?|weeks?|weekend|nights?) in)|{IVE} {ADV}visited)\s+"
     r"(?:(?:back )?(?:to|in|at|from|for)\s+)?", True),
    (rf"^(?:i {ADV}was|{IVE} {ADV}(?:just )?been)\s+(?:to|in|at)\s+", True),
)]
# The word after "I" / "I'm" / "I've" / "I'll" (and adverbs) picks the patterns to try: those
# whose text has that word (phrasing.TRIGGERS), and those for a number, a time zone or a name.
_HEAD = _r(rf"i(?:'m|'ve|'ll|\s+am|\s+have|\s+will)?\s+{ADV}(?:not\s+)?([\w'+-]+)")
_ALWAYS = tuple(i for i, (rx, *_) in enumerate(_STARTS) if r"\d" in rx.pattern or "A-Z" in rx.pattern)
_BY_VERB = {v: tuple(i for i, (rx, *_) in enumerate(_STARTS) if i in _ALWAYS or v in set(re.findall(
    r"[a-z']+", rx.pattern)) | ({"a", "an"} if "an?" in rx.pattern else set())) for v in TRIGGERS}

_NAME = r"(?-i:[A-Z][\w'-]*)"
_PET_NAMED = _r(rf"\bmy (?:little |new |old |two |three |\w+ )?(?P<kind>{PET})(?P<pl>s)?(?:'s name is| (?:is|are) "
                rf"(?:called|named)| (?:called|named)|,)? (?P<name>{_NAME}(?:(?:,| and| &) {_NAME})*)")
_PET_HAVE = _r(rf"\b(?:a|an|two|three|\d) (?:new |little )?(?P<mod>[\w-]+ )?(?P<kind>{PET})(?P<pl>s)? (?:named|called) "
               r"(?P<name>[\w'-]+(?:(?:,| and| &) [\w'-]+)*)")
_HAVE_START = _r(rf"(?:i {ADV}(?:have|adopted|got|rescued|own|bought)|{IVE}(?: got| adopted| rescued)?)\b")
_REL_NAMED = _r(rf"\bmy (?:little |big |older |younger |baby |twin |)(?P<rel>{REL})(?:'s name is|,)? "
                r"(?:is called |named )?"
                r"(?P<name>(?-i:[A-Z][a-z][\w'-]*))\b")
_HEDGE = r"(?:(?:probably|definitely|honestly|easily|still|currently|hands down|by far|literally|always|now|also) )*"
_FAVOURITE = r"(?P<fav>favou?rite|fave|fav) (?P<thing>[\w-]+(?: (?!ever\b|of\b)[\w-]+)?)(?: of all time| ever)?"
_FAV = _r(rf"\bmy (?:all[- ]time |current |new )?{_FAVOURITE} (?:is|are|has to be|has always been|=) {_HEDGE}(?P<x>)")
_FAV_REV = _r(rf"^(?P<x>[^,;]{{1,60}}?) (?:is|are|has to be|'s) {_HEDGE}my (?:all[- ]time |current |new )?"
              rf"{_FAVOURITE}\s*(?:$|[,.;!])")
_NATIVE = _r(rf"\bmy (?:native|first|mother) (?:language|tongue) is (?P<x>{LANG})")
_NAME_MY = _r(rf"\bmy (?:real |actual |first )?name is (?P<x>{_NAME}(?: {_NAME})?)")
_TZ_MY = _r(rf"\bmy (?:time ?zone|tz) is (?P<x>{TZ})")
_GLOBAL_KEYS, _PRONOUNS = ("language", "timezone"), _r(r"\bmy pronouns are (?P<x>\w+/\w+(?:/\w+)?)")
_SAID_AS = ((_NATIVE, "", "language"), (_TZ_MY, "Is in ", "timezone"), (_NAME_MY, "Name is ", "name"),
            (_PRONOUNS, "Pronouns are ", "pronouns"))
_BIRTHDAY = _r(r"\b(?:my (?P<word>birthday|bday|b-day) (?:is|was)|it's my (?P<w2>birthday|bday|b-day))\b(?P<rest>.*)$")
_EVENT_HAVE = _r(rf"^(?:{IVE}(?: got)?|i {ADV}(?:have|got)) (?P<x>(?:an?|my) (?:[\w-]+ ){{0,3}}{EVENT}s?|"
                 rf"(?:[\w-]+ )?{EVENT}s)\b")
_EVENT_MY = _r(rf"\bmy (?P<x>(?:[\w-]+ ){{0,2}}{EVENT}s?) (?:is|was) ")
_PROPER = re.compile(r"(?<=\s)[A-Z][\w'&.+-]*")
_NEAR = _r(r"today|tonight|now|tomorrow|tmrw?|yesterday|the day")
_PAST, _FUTURE = frozenset(("ago", "last", "yesterday")), frozenset(("next", "tomorrow", "tmrw", "coming", "in"))
_ABSOLUTE_DATE = _r(r"(?!(?:today|tonight|tomorrow|tmr|yesterday|next|this|last|coming|on |in |\w+day))(?:\d|[a-z]{3})")
_ING = re.compile(r"^(?:Is|Will be|Will) (?=\w+ing\b|off\b)")
_NOT_DURABLE = frozenset("you your u ur y'all we us our it this that these those rn atm".split())
_MOMENT = _r(rf"(?:{IM}|{ILL} be) {ADV}(?:at|on|in|back|level|lvl|done|here|there|online|offline|afk|out|late)\b")
_PRESENT = _r(rf"{IM} {ADV}\w+ing\b")
_MY_REL = _r(rf"my (?:[\w-]+ )?(?:{REL}s?|parents|grandparents|children|family|in-laws)\b")
_TECH_WORD, _EVENT_WORD, _ON_LEFT = re.compile(r"[\w+#]+"), _r(rf"\b{EVENT}s?\b"), _r(r"\s+on\s*$|\s+on(?=\s*[,.;!])")


def _is_date(text: str) -> bool:
    """The whole text is a date ("Last week", "On Saturday")."""
    found = dates.find_date(text, dt.date(2000, 1, 1))
    return found is not None and found.start == 0 and found.end >= len(text.rstrip(" ,"))


def _tense(clause: str) -> bool | None:
    """True for a past-tense clause, False for a future one, None when it does not say: by its
    verb ("I went", "I'm going", "I'll go"), else by its time words ("ago", "next")."""
    words = _WORD.findall(clause.lower())
    if "will" in words or "gonna" in words or "i'll" in words or (words[:1] == ["i'm"] and "ing" in "".join(
            w[-3:] for w in words[1:3])) or "going to" in " ".join(words):
        return False
    if words[:2] != ["i've", "got"] and ((len(words) > 1 and is_past(words[1])) or (
            len(words) > 2 and words[1] in ADVERBS and is_past(words[2])) or not _PAST.isdisjoint(words)):
        return True
    return False if not _FUTURE.isdisjoint(words) or any(w.endswith("ing") for w in words) else None


def _anchored(clause: str, when: dates.DateMatch | None) -> bool:
    """A proper noun (a capitalised word not at the start), a number, or a date other than
    today / tomorrow / yesterday ("I'm off to the gym tomorrow" is chatter)."""
    return (when is not None and not _NEAR.match(when.text)) or not NUMBER_WORDS.isdisjoint(_WORD.findall(
        clause.lower())) or bool(_DIGIT.search(TIME_AMOUNT.sub("", clause)) and not EPHEMERAL_NUMBER.search(clause)) \
        or _proper(clause)


def _proper(clause: str) -> bool:
    return any(w.lower().rstrip(".'") not in CHATTER and w != "I" and not w.startswith("I'")
               for w in _PROPER.findall(clause))


def _when(clause: str, lead: str, today: dt.date, past: bool | None) -> dates.DateMatch | None:
    if (when := dates.find_date(clause, today, past)) is None and (when := dates.find_date(lead, today, past)):
        when = replace(when, start=len(clause), end=len(clause))  # "Tomorrow I'm …": the lead's date, no span
    return when


def _anywhere(clause: str, when, today: dt.date, add) -> None:
    """Patterns found anywhere in a first-person clause: pets, family, favourites, time zone,
    birthday, dated events."""
    low = clause.lower()
    for m in (*(_PET_NAMED.finditer(clause) if "my " in low else ()),
              *(_PET_HAVE.finditer(clause) if _HAVE_START.match(clause) else ())):
        kind, said = m.group("kind").lower(), ((m.groupdict().get("mod") or "") + m.group("kind")).lower()
        add(f"Has {article(said) if not m.group('pl') else said + 's'} named {m.group('name')}", "other",
            f"pet {kind} name")
    if "my " in low:
        for m in _REL_NAMED.finditer(clause):
            add(f"Has {article(m.group('rel').lower())} named {m.group('name')}", "relationship")
        m = _FAV.search(clause) or _FAV_REV.search(clause)
        if m and m.group("thing").lower() not in NOT_THINGS:
            thing = m.group("thing").lower()
            end = object_end(clause, m.start("x"), when.start if when else None) if m.re is _FAV else m.end("x")
            x = clause[m.start("x"):end].strip()
            if x and not BAD_OBJECT.match(x):
                add(f"{capitalise(m.group('fav').lower())} {thing} is {possessive(x)}", "preference",
                    f"favourite {thing}", thing.split()[-1] in SAFE_THINGS)
        for rx, said, key in _SAID_AS:
            m = rx.search(clause)
            if m:
                add(said + m.group("x") if said else third_person(m.group(0)), "identity", key, key in _GLOBAL_KEYS)
        m = _BIRTHDAY.search(clause)
        if m:
            told, word = dates.find_date(m.group("rest"), today), (m.group("word") or m.group("w2")).capitalize()
            if told and _ABSOLUTE_DATE.match(told.text):
                add(f"{word} is {told.text}", "identity", "birthday")
            elif told or low.startswith("it's my"):
                day = told.day if told else today
                add(word, "plan" if day > today else "event", day=day)
    m = _EVENT_HAVE.match(clause) or (_EVENT_MY.search(clause) if "my " in low else None)
    if m and when is not None:
        x = m.group("x")
        x = x if m.re is _EVENT_HAVE and not x.lower().startswith("my ") else article(x.split(" ", 1)[-1])
        add(f"Has {x}", "plan" if when.day > today else "event", day=when.day)


def _started(clause: str, when, today: dt.date, add) -> bool:
    """The first pattern of _STARTS / _TRAVEL that matches the clause's start; True when one
    decided the clause (with or without a fact)."""
    head = _HEAD.match(clause)
    if head is None:
        return False
    verb, stop = head.group(1).lower(), when.start if when else None
    for rx, category, key, safe in (_STARTS[i] for i in _BY_VERB.get(verb, _ALWAYS)):
        m = rx.match(clause)
        if m is None:
            continue
        end, x = m.end(), ""
        if "x" in rx.groupindex and m.group("x") is not None:
            open_ended = m.end("x") == m.start("x")  # the object runs to the next boundary
            end = object_end(clause, m.start("x"), stop) if open_ended else m.end()
            x = clause[m.start("x"):end]
            if not x or (open_ended and BAD_OBJECT.match(x)) or (
                    category == "preference" and EPHEMERAL_OBJECT.search(x)):
                return True  # "I love this", "I like Sam's idea": decided, and no fact
        tech = any(w in TECH for w in _TECH_WORD.findall(x.lower())[:3])
        if safe == "tech" and not tech:
            continue  # "I use a standing desk": no preference this pattern knows
        text = third_person(clause[:end])
        safe = tech if category == "preference" else bool(safe)
        if key == "home city" and _TZ_WORD.match(x):
            key, safe = "timezone", True  # "I live in UTC-5"
        day = None
        if category == "episodic":
            past = _tense(clause[:end]) is True
            category = ("plan" if when.day > today else "event") if when else ("event" if past else "plan")
            day = when.day if when else None
            text = capitalise(_ING.sub("", text))
        add(text, category, key, safe, SPECIFIC, day)
        return True
    for rx, past in _TRAVEL if verb in TRIGGERS else ():
        m = rx.match(clause)
        if m is None:
            continue
        if not past and m.group(0).lower().rstrip().endswith("going to") and GOING_TO_VERB.match(clause[m.end():]):
            return False  # "I'm going to visit Japan": a plan the generic rule states as said
        end = object_end(clause, m.end(), stop, 6)
        x = clause[m.end():end]
        if not x or BAD_OBJECT.match(x) or TRIVIAL_PLACE.match(x):
            return True  # "I'm going to bed", "I'm off to the gym tomorrow": chatter
        proper = _anchored(" " + x, None) or _EVENT_WORD.search(x)
        if when is None and not proper:
            return True
        text = capitalise(_ING.sub("", third_person(clause[:end])))
        if when is not None:
            add(text, "plan" if when.day > today else "event", day=when.day)
        else:
            add(text, "event" if past else "plan", confidence=GENERIC)
        return True
    return False


def _generic(clause: str, when, today: dt.date, add) -> None:
    """Any other first-person statement with an anchor (proper noun, number, explicit date) that
    is not about the moment: not "I'm watching …" (unless dated later), "I'm on page 200", "I got
    2 kills", nor about "it" / "this" or the people addressed."""
    if OPINION.match(clause) or OTHER_PERSON.match(clause) or (_PRESENT.match(clause) and not (
            when and when.day > today)) or (_MOMENT.match(clause) and not _proper(clause)) \
            or not _anchored(clause, when) or EPHEMERAL_OBJECT.search(clause) or len(content_tokens(clause)) < 2 \
            or not _NOT_DURABLE.isdisjoint(_WORD.findall(tidy(clause).lower())):  # "this week" is no "this"
        return
    text, day, category = clause, None, "relationship" if _MY_REL.match(clause) else "other"
    if when is not None:
        if when.end <= len(clause) and when.start < when.end:
            text = _ON_LEFT.sub("", clause[:when.start] + clause[when.end:]).strip()
        category, day = ("plan" if when.day > today else "event"), when.day
    text = third_person(tidy(text))
    add(capitalise(_ING.sub("", text)) if category == "plan" else text, category, None, False, GENERIC, day)


@lru_cache(maxsize=16384)  # chat repeats itself ("I'm going to bed"); pure, so a cache is safe
def _facts_of_clause(clause: str, lead: str, today: dt.date) -> tuple[tuple, ...]:
    """(text, category, key, global_safe, confidence, event_day) for every fact of one clause."""
    out: list[tuple] = []

    def add(text, category, key=None, safe=False, confidence=SPECIFIC, day=None):
        text = cut(capitalise(text.strip()))
        if content_tokens(text):
            out.append((text, category, key, safe and not sensitive(text), confidence, day))

    when = _when(clause, lead, today, _tense(clause)) if dates.may_have_date(f"{clause} {lead}") else None
    _anywhere(clause, when, today, add)
    decided = _started(clause, when, today, add)
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
