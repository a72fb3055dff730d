"""The patterns a first-person clause may start with (extract.py reads a clause through them):
home, job, diet, hobbies, nationality, pronouns, allergies, skills, tools, preferences,
languages, time zones, age, relationship status, graduation, parenthood, children and pets
owned (`STARTS`), and trips (`TRAVEL`). `started` tries those the verb after "I" can start.
Pure; regexes are compiled once."""

from __future__ import annotations

import datetime as dt
import re

from pipeline.memory import dates
from pipeline.memory.fragments import place_like
from pipeline.memory.phrasing import capitalise, is_past, object_end, third_person
from pipeline.memory.vocab import (ADV, ADVERBS, BAD_OBJECT, CHATTER, EPHEMERAL_NUMBER, EPHEMERAL_OBJECT, EVENT,
                                   GOING_TO_VERB, ILL, IM, INSTRUMENT, IVE, JOB, LANG, LANGS, NUMBER_WORDS, PET, REL,
                                   TECH, TIME_AMOUNT, TRIGGERS, TRIVIAL_PLACE, TZ)

SPECIFIC, GENERIC = 0.9, 0.75
LOOSE = 0.8  # what "we" say, what a fragment without a subject says, an answer to a question


def r(pattern: str) -> re.Pattern:
    return re.compile(pattern, re.IGNORECASE)


_TZ_WORD = r(TZ + "$")
_WORD, _DIGIT = re.compile(r"[a-z0-9'+#/]+"), re.compile(r"\d")

# "a dog toy", "a cat person": no pet.
_PET_THING = (r"(?![ -](?:toy|bed|food|treat|leash|collar|crate|cage|tank|sitter|walker|groomer|park|hair|bowl|door|"
              r"house|show|costume|sweater|meme|video|pic|plushie|plush|sticker|shirt|mug|skin|emote|filter|cafe|"
              r"breed|person|lover|mom|dad)s?\b)")

# (regex at a clause's start, category, key, global_safe). The fact is the clause up to the
# regex's end — or, with a group "x", to the end of that object — in the third person.
# category "episodic": plan or event by its date (no date: event when past tense, else plan).
# global_safe "tech": only a technical object matches; True on a preference: safe when technical.
# we: the pattern also reads a "we" clause (fragments.as_i): where one lives or goes, family, pets.
STARTS = [(r(p), c, k, g, we) for p, c, k, g, we in (
    (rf"^(?:i {ADV}live|{IM} {ADV}(?:living|based|located)|{IVE} {ADV}(?:been living|lived)) "
     r"(?:in|near|outside(?: of)?|close to|just outside(?: of)?) (?P<x>)", "identity", "home city", False, True),
    (rf"^(?:i|{IVE}) {ADV}(?:moved|relocated)(?: back| over| out)? to (?P<x>)", "identity", "home city", False, True),
    (rf"^(?:i|{IM}|{IVE}) {ADV}(?:all |now |finally |got |getting )?settled (?:in|into|down in) "
     r"(?!(?:my|our|the|a|an|this|that|their|his|her|it|here|there|well|nicely|ok|fine)\b)(?P<x>)", "identity",
     "home city", False, True),
    (rf"^(?:{IM} {ADV}(?:moving|relocating)|{ILL} {ADV}(?:be )?(?:moving|move|relocate)|{IM} going to move) "
     r"(?:back )?to (?P<x>)", "episodic", None, False, True),
    (rf"^(?:{IM} {ADV}(?:originally )?from|i {ADV}grew up in|i was born(?: and raised)? in (?!\d)) ?(?P<x>)",
     "identity", "hometown", False, True),
    (r"^i was born in (?:19|20)\d\d\b", "identity", "birth year", False, False),
    (rf"^(?:i {ADV}work|{IM} {ADV}working|{IVE} {ADV}(?:been working|worked))(?: remotely| from home)?"
     r"(?: as an? [\w -]+?)? (?:at|for) (?P<x>)", "skill/work", "job", False, False),
    (rf"^(?:i {ADV}work|{IM} {ADV}working) as (?P<x>)", "skill/work", "job", False, False),
    (rf"^(?:i {ADV}work|{IM} {ADV}working) in (?P<x>)", "skill/work", None, False, False),
    (rf"^(?:i {ADV}(?:started|got|landed|accepted|took)|{IVE} {ADV}(?:got|started|landed|accepted))"
     r"(?: a| my| the)?(?: new| full-time| part-time)?(?: job| position| role| internship| gig| contract)"
     r"(?: as an? [\w -]+?)? (?:at|with|for) (?P<x>)", "skill/work", "job", False, False),
    (rf"^(?:{IM} {ADV}starting|{ILL} {ADV}(?:be )?start(?:ing)?|i {ADV}start)(?: a| my)?(?: new)?"
     r"(?: job| position| role| internship)?(?: as an? [\w -]+?)? (?:at|with) (?P<x>)", "episodic", None, False, False),
    (rf"^i {ADV}got hired (?:at|by) (?P<x>)", "skill/work", "job", False, False),
    (rf"^i {ADV}got promoted(?: to (?P<x>))?", "skill/work", None, False, False),
    (rf"^{IM} {ADV}an? (?:[\w-]+ ){{0,3}}{JOB}s?\b(?: (?:at|for|in) (?P<x>)(?=\w))?", "skill/work", "job",
     False, False),
    (rf"^{IM} {ADV}(?:retired|unemployed|self-employed|between jobs|a stay[- ]at[- ]home \w+)\b", "skill/work",
     "job", False, False),
    (rf"^(?:{IM}|{IVE} {ADV}been) {ADV}(?:a )?(?:vegetarian|vegan|pescatarian)\b", "preference", "diet", False, False),
    (rf"^{IM} {ADV}(?:more of )?an? (?P<x>\w+) person\b", "preference", None, False, False),
    (rf"^i {ADV}(?:collect|knit|crochet|paint|draw|bake|brew|surf|skate|climb|garden|sew|dance|swim|hike|cycle|"
     r"sing|skateboard|snowboard|ski|fish) (?P<x>)", "preference", None, False, False),
    (rf"^{IM} {ADV}(?-i:(?P<x>[A-Z][a-z]+(?:an|ese|ish|ch|i)))\b(?=\s*(?:$|[,.!;]|and\b|but\b|btw\b|lol\b))",
     "identity", None, False, False),
    (rf"^i {ADV}use (?P<x>\w+/\w+(?:/\w+)?) pronouns\b", "identity", "pronouns", False, False),
    (rf"^{IM} {ADV}(?:allergic to (?P<x>)|lactose intolerant|celiac|diabetic)", "other", None, False, False),
    (rf"^(?:{IM} {ADV}(?:learning|studying|practi[cs]ing|teaching myself|doing an? (?:phd|masters?|master's|"
     rf"degree|bachelor'?s|apprenticeship|residency|course))|{IVE} {ADV}been (?:learning|"
     rf"studying|practi[cs]ing|coding in|programming in|working on|building)|i {ADV}(?:study|teach)) (?P<x>)",
     "skill/work", None, False, False),
    (rf"^i {ADV}(?:code|program|write code|develop|write) (?:mostly |mainly )?in (?P<x>)", "preference", None, "tech",
     False),
    (rf"^i {ADV}(?:use|daily drive|run) (?P<x>)", "preference", None, "tech", False),
    (rf"^(?:i {ADV}play|{IVE} {ADV}been playing|{IM} {ADV}playing) (?:the )?{INSTRUMENT}\b", "skill/work",
     None, False, False),
    (rf"^(?:i {ADV}(?:play|main)|{IVE} {ADV}been (?:playing|watching|reading|listening to)) (?P<x>)",
     "preference", None, False, False),
    (rf"^(?:i {ADV}(?:love|like|prefer|enjoy|adore|hate|dislike|can't stand)|i {ADV}(?:don't|do not) "
     rf"(?:like|enjoy)|{IM} {ADV}(?:an? (?:big |huge )?fan of|obsessed with|(?:really |super )?into)) (?P<x>)",
     "preference", None, True, False),
    (rf"^(?:i {ADV}(?:can )?speak|{IM} {ADV}fluent in) (?P<x>{LANGS}(?:(?:,|,? and| &) {LANGS})*)", "identity",
     "language", True, False),
    (rf"^{IM} {ADV}a native (?:{LANG} )speaker\b", "identity", "language", True, False),
    (rf"^{IM} {ADV}(?:in |on )?{TZ}(?: time)?(?=$|[\s,.;!])", "identity", "timezone", True, False),
    (rf"^{IM} {ADV}(?:1[3-9]|[2-9]\d)(?: ?(?:years? old|yo|y/o|yrs? old))?(?=\s*(?:$|[,.;!]|and\b|but\b|now\b|"
     r"btw\b|lol\b))", "identity", "age", False, False),
    (rf"^i {ADV}turned (?:1[3-9]|[2-9]\d)\b", "identity", "age", False, False),
    (rf"^{IM} {ADV}turning (?:1[3-9]|[2-9]\d)\b", "episodic", None, False, False),
    (rf"^(?:{IM} {ADV}(?:married|engaged|divorced|single|widowed)|i {ADV}got (?:married|engaged|divorced))\b",
     "relationship", "relationship status", False, True),
    (rf"^{IM} {ADV}getting (?:married|engaged|divorced)\b", "episodic", None, False, True),
    (rf"^(?:i {ADV}graduated|{IM} {ADV}graduating)(?: from (?P<x>))?", "episodic", None, False, False),
    (rf"^(?:{IM}|i {ADV}became|{IVE} {ADV}become) {ADV}an? (?:new )?(?:dad|mom|mum|father|mother|parent|"
     r"grandma|grandpa|grandparent)\b",
     "relationship", None, False, True),
    (rf"^(?:{IVE}(?: got)?|i {ADV}have) (?:a|an|one|two|three|four|five|six|\d) (?:[\w-]+ )?(?:{REL}s?|children|"
     r"siblings?|grandkids?|grandchildren)\b", "relationship", None, False, True),
    (rf"^(?:{IVE}(?: got)?|i {ADV}have) (?:a|an|one|two|three|four|five|six|\d) (?:[\w-]+ )?{PET}s?\b"
     rf"{_PET_THING}", "other", None, False, True),
    (rf"^i {ADV}(?:got|adopted|rescued|bought|brought home) (?:a|an|one|two|three|\d) (?:new |little |baby |"
     rf"tiny |rescue )?(?:[\w-]+ )?{PET}s?\b{_PET_THING}", "other", None, False, True),
)]
TRAVEL = [(r(p), past) for p, past in (
    (rf"^(?:{IM} {ADV}(?:flying|going|travell?ing|heading|driving|off|visiting|leaving for|taking a trip to|"
     rf"going back|coming|returning|spending \w+ \w+ in)|{ILL} {ADV}(?:be )?(?:fly|go|travel|head|drive|visit|in|at|"
     rf"flying|going|travell?ing|heading|visiting)|i {ADV}(?:fly|leave|head)(?: out)?)\s+(?:(?:back |home |over )?"
     r"(?:to|for|in|at|out to|over to)\s+)?", False),
    (rf"^(?:i {ADV}(?:went|flew|drove|travell?ed|visited|got back|came back|returned|attended|saw|spent "
     rf"(?:a|the|two|three|\d+) (?:days?|weeks?|weekend|nights?) in)|{IVE} {ADV}visited)\s+"
     r"(?:(?:back )?(?:to|in|at|from|for)\s+)?", True),
    (rf"^(?:i {ADV}was|{IVE} {ADV}(?:just )?been)\s+(?:to|in|at)\s+", True),
    (rf"^i {ADV}booked (?:(?:my|our|the|a|some|two|2) )?(?:(?:plane|train|bus|return|cheap|last-minute|concert) )?"
     r"(?:tickets?|flights?|trips?|trains?|hotels?|airbnbs?|holidays?|vacations?)\s+(?:to|for|in)\s+", False),
)]
# The word after "I" / "I'm" / "I've" / "I'll" (and adverbs) picks the patterns to try: those
# whose text has that word (vocab.TRIGGERS), and those for a number, a time zone or a name.
_HEAD = r(rf"i(?:'m|'ve|'ll|\s+am|\s+have|\s+will)?\s+{ADV}(?:not\s+)?([\w'+-]+)")
_ALWAYS = tuple(i for i, (rx, *_) in enumerate(STARTS) if r"\d" in rx.pattern or "A-Z" in rx.pattern)
_BY_VERB = {v: tuple(i for i, (rx, *_) in enumerate(STARTS) if i in _ALWAYS or v in set(re.findall(
    r"[a-z']+", rx.pattern)) | ({"a", "an"} if "an?" in rx.pattern else set())) for v in TRIGGERS}
_PROPER = re.compile(r"(?<=\s)[A-Z][\w'&.+-]*")
_NEAR = r(r"today|tonight|now|tomorrow|tmrw?|yesterday|the day")
_PAST, _FUTURE = frozenset(("ago", "last", "yesterday")), frozenset(("next", "tomorrow", "tmrw", "coming", "in"))
_FAR = r(r"\b(?:fl[yie]\w*|flew|travel\w*|relocat\w*|booked)\b")  # a lower-case place is one after these
ING = re.compile(r"^(?:Is|Will be|Will) (?=\w+ing\b|off\b)")
_TECH_WORD, _EVENT_WORD = re.compile(r"[\w+#]+"), r(rf"\b{EVENT}s?\b")


def tense(clause: str) -> bool | None:
    """True for a past-tense clause, False for a future one, None when it does not say: by its
    verb ("I went", "I'm going", "I'll go"), else by its time words ("ago", "next")."""
    words = _WORD.findall(clause.lower())
    if "booked" in words:
        return False  # "I booked tickets to Oslo for the 4th": the trip is ahead
    if "will" in words or "gonna" in words or "i'll" in words or (words[:1] == ["i'm"] and "ing" in "".join(
            w[-3:] for w in words[1:3])) or "going to" in " ".join(words):
        return False
    if words[:2] != ["i've", "got"] and ((len(words) > 1 and is_past(words[1])) or (
            len(words) > 2 and words[1] in ADVERBS and is_past(words[2])) or not _PAST.isdisjoint(words)):
        return True
    return False if not _FUTURE.isdisjoint(words) or any(w.endswith("ing") for w in words) else None


def anchored(clause: str, when: dates.DateMatch | None) -> bool:
    """A proper noun (a capitalised word not at the start), a number, or a date other than
    today / tomorrow / yesterday ("I'm off to the gym tomorrow" is chatter)."""
    return (when is not None and not _NEAR.match(when.text)) or not NUMBER_WORDS.isdisjoint(_WORD.findall(
        clause.lower())) or bool(_DIGIT.search(TIME_AMOUNT.sub("", clause)) and not EPHEMERAL_NUMBER.search(clause)) \
        or proper(clause)


def proper(clause: str) -> bool:
    return any(w.lower().rstrip(".'") not in CHATTER and w != "I" and not w.startswith("I'")
               for w in _PROPER.findall(clause))


def started(clause: str, when, today: dt.date, add, we: bool = False) -> bool:
    """The first pattern of STARTS / TRAVEL that matches the clause's start; True when one
    decided the clause (with or without a fact). Of a "we" clause (`we`) only the patterns
    marked for it, and only to a place that looks like one (fragments.place_like)."""
    head = _HEAD.match(clause)
    if head is None:
        return False
    verb, stop = head.group(1).lower(), when.start if when else None
    for rx, category, key, safe, for_we in (STARTS[i] for i in _BY_VERB.get(verb, _ALWAYS)):
        m = rx.match(clause) if for_we or not we else None
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
            if (we or key == "home city" and "settled" in m.group(0).lower()) and not place_like(x):
                return True  # "we moved to the new server", "settled in for the night"
        tech = any(w in TECH for w in _TECH_WORD.findall(x.lower())[:3])
        if safe == "tech" and not tech:
            continue  # "I use a standing desk": no preference this pattern knows
        text = third_person(clause[:end])
        safe = tech if category == "preference" else bool(safe)
        if key == "home city" and _TZ_WORD.match(x):
            key, safe = "timezone", True  # "I live in UTC-5"
        day = None
        if category == "episodic":
            past = tense(clause[:end]) is True
            category = ("plan" if when.day > today else "event") if when else ("event" if past else "plan")
            day = when.day if when else None
            text = capitalise(ING.sub("", text))
        add(text, category, key, safe, SPECIFIC, day)
        return True
    for rx, past in TRAVEL if verb in TRIGGERS else ():
        m = rx.match(clause)
        if m is None:
            continue
        if not past and m.group(0).lower().rstrip().endswith("going to") and GOING_TO_VERB.match(clause[m.end():]):
            return False  # "I'm going to visit Japan": a plan the generic rule states as said
        end = object_end(clause, m.end(), stop, 6)
        x = clause[m.end():end]
        if not x or BAD_OBJECT.match(x) or TRIVIAL_PLACE.match(x) or (we and not place_like(x)):
            return True  # "I'm going to bed", "I'm off to the gym tomorrow", "we're heading to the nether"
        named = anchored(" " + x, None) or _EVENT_WORD.search(x) or (_FAR.search(m.group(0)) and place_like(x))
        if when is None and not named:
            return True
        text = capitalise(ING.sub("", third_person(clause[:end])))
        if when is not None:
            add(text, "plan" if when.day > today else "event", day=when.day)
        else:
            add(text, "event" if past else "plan", confidence=GENERIC)
        return True
    return False
