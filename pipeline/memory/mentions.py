"""Facts said anywhere in a first-person clause, not only at its start: pets and relatives by
name, native language, time zone, name, pronouns, birthday, a new home, dated events.

A name is a capitalised word after "my cat" / "my sister"; after a word that marks a name
("named", "called", "name is") or in apposition in brackets ("Miso (my rabbit)") a lower-case
word is one too ("my cat is called miso"), kept as spelled. A pet's key is "pet <name>": two
cats are two facts, and "a kitten named Miso" grows into "a cat named Miso" (a new value of the
same key). Pure; regexes are compiled once."""

from __future__ import annotations

import datetime as dt

from pipeline.memory import dates
from pipeline.memory.fragments import place_like
from pipeline.memory.patterns import r as _r
from pipeline.memory.phrasing import third_person
from pipeline.memory.vocab import ADV, CHATTER, EVENT, IVE, LANG, PET, REL, TZ, article

_NAME = r"(?-i:[A-Z][\w'-]*)"
_LOWER = r"[a-zA-Z][\w'-]+"
_MARK = r"(?:'s name is|'s name's| (?:is|are) (?:called|named)| (?:called|named))"
_PET_NAMED = _r(rf"\bmy (?:little |new |old |two |three |\w+ )?(?P<kind>{PET})(?P<pl>s)?(?:{_MARK}|,)? "
                rf"(?P<name>{_NAME}(?:(?:,| and| &) {_NAME})*)")
_PET_MARKED = _r(rf"\bmy (?:little |new |old |two |three |\w+ )?(?P<kind>{PET})(?P<pl>s)?{_MARK} "
                 rf"(?P<name>{_LOWER}(?:(?:,| and| &) {_LOWER})*)")
_PET_PAREN = _r(rf"(?P<name>\b{_LOWER}) \(my (?:little |new |old |\w+ )?(?P<kind>{PET})\)")
_PET_HAVE = _r(rf"\b(?:a|an|two|three|\d) (?:new |little )?(?P<mod>[\w-]+ )?(?P<kind>{PET})(?P<pl>s)? (?:named|called) "
               r"(?P<name>[\w'-]+(?:(?:,| and| &) [\w'-]+)*)")
_HAVE_START = _r(rf"(?:i {ADV}(?:have|adopted|got|rescued|own|bought)|{IVE}(?: got| adopted| rescued)?)\b")
_REL_NAMED = _r(rf"\bmy (?:little |big |older |younger |baby |twin |)(?P<rel>{REL})(?:(?:'s name is|,)? "
                rf"(?:is called |named )?(?P<name>(?-i:[A-Z][a-z][\w'-]*))\b|{_MARK} (?P<low>{_LOWER}))")
# Words after "named" / "name is" that are no name: "my name is not important", "named after".
NOT_NAME = frozenset("""not on in the a an after literally just also actually spelled spelt pronounced weird long short
she he i we you they common unique different same mine there here what so too very really kinda from based like is was
his her their its him them it this that my your our because cause lol haha something someone whatever unknown secret
private""".split()
                     ) | CHATTER
_LIST = _r(r",\s*(?:and\s+)?|\s+and\s+|\s*&\s*")
_HOME = _r(r"\bmy (?P<what>(?:new |own |first |current )*(?:place|flat|apartment|apt|house|condo|home))"
           r"(?: is)? in (?P<x>(?-i:[A-Z][\w'-]*(?: [A-Z][\w'-]*){0,2})|[a-z][\w'-]+(?: [a-z][\w'-]+)?"
           r"(?=\s*(?:$|[,.;!]|is\b|was\b|has\b|and\b|but\b|with\b|lol\b|now\b|tho\b|though\b)))")
_NATIVE = _r(rf"\bmy (?:native|first|mother) (?:language|tongue) is (?P<x>{LANG})")
_NAME_MY = _r(rf"\bmy (?:real |actual |first )?name is (?P<x>{_NAME}(?: {_NAME})?|[a-z][\w'-]+)")
_TZ_MY = _r(rf"\bmy (?:time ?zone|tz) is (?P<x>{TZ})")
_GLOBAL_KEYS, _PRONOUNS = ("language", "timezone"), _r(r"\bmy pronouns are (?P<x>\w+/\w+(?:/\w+)?)")
_SAID_AS = ((_NATIVE, "", "language"), (_TZ_MY, "Is in ", "timezone"), (_NAME_MY, "Name is ", "name"),
            (_PRONOUNS, "Pronouns are ", "pronouns"))
_BIRTHDAY = _r(r"\b(?:my (?P<word>birthday|bday|b-day) (?:is|was)|it's my (?P<w2>birthday|bday|b-day))\b(?P<rest>.*)$")
_EVENT_HAVE = _r(rf"^(?:{IVE}(?: got)?|i {ADV}(?:have|got)) (?P<x>(?:an?|my) (?:[\w-]+ ){{0,3}}{EVENT}s?|"
                 rf"(?:[\w-]+ )?{EVENT}s)\b")
_EVENT_MY = _r(rf"\bmy (?P<x>(?:[\w-]+ ){{0,2}}{EVENT}s?) (?:is|was) ")
_ABSOLUTE_DATE = _r(r"(?!(?:today|tonight|tomorrow|tmr|yesterday|next|this|last|coming|on |in |\w+day))(?:\d|[a-z]{3})")


def _names(m) -> str | None:
    """The name(s) of a match, or None when a marked lower-case word is no name."""
    kept = []
    for part in _LIST.split(m.group("name")):
        if part.lower() in NOT_NAME:
            break  # "my cat is called miso and she …": the list ends at "she"
        kept.append(part)
    return None if not kept else kept[0] if len(kept) == 1 else ", ".join(kept[:-1]) + " and " + kept[-1]


def pets(clause: str, add) -> None:
    """Pets by name: "my cat Miso", "my cat is called miso", "a kitten named Mochi", "Miso (my
    rabbit)"."""
    low = clause.lower()
    found = []
    if "my " in low:
        found += [*_PET_NAMED.finditer(clause), *_PET_MARKED.finditer(clause), *_PET_PAREN.finditer(clause)]
    if _HAVE_START.match(clause):
        found += _PET_HAVE.finditer(clause)
    for m in found:
        name = _names(m)
        if name:
            kind = ((m.groupdict().get("mod") or "") + m.group("kind")).lower()
            plural = m.groupdict().get("pl")
            add(f"Has {article(kind) if not plural else kind + 's'} named {name}", "other", pet_key(name))


def pet_key(name: str) -> str:
    return "pet " + " ".join(name.lower().split())


def anywhere(clause: str, when, today: dt.date, add, we: bool = False) -> None:
    """Patterns found anywhere in a first-person clause: pets, family, a new home, time zone,
    birthday, dated events. Of a "we" clause only pets, family and a home."""
    low = clause.lower()
    pets(clause, add)
    if "my " in low:
        for m in _REL_NAMED.finditer(clause):
            name = m.group("name") or (m.group("low") if m.group("low").lower() not in NOT_NAME else None)
            if name:
                add(f"Has {article(m.group('rel').lower())} named {name}", "relationship")
        m = _HOME.search(clause)
        if m and place_like(m.group("x")):
            add(f"Has {article(m.group('what').lower())} in {m.group('x')}", "identity", "home city")
        if we:
            return
        for rx, said, key in _SAID_AS:
            m = rx.search(clause)
            if m and m.group("x").lower() not in NOT_NAME:
                add(said + m.group("x") if said else third_person(m.group(0)), "identity", key, key in _GLOBAL_KEYS)
        m = _BIRTHDAY.search(clause)
        if m:
            told, word = dates.find_date(m.group("rest"), today), (m.group("word") or m.group("w2")).capitalize()
            if told and _ABSOLUTE_DATE.match(told.text):
                add(f"{word} is {told.text}", "identity", "birthday")
            elif told or low.startswith("it's my"):
                day = told.day if told else today
                add(word, "plan" if day > today else "event", day=day)
    m = None if we else _EVENT_HAVE.match(clause) or (_EVENT_MY.search(clause) if "my " in low else None)
    if m and when is not None:
        x = m.group("x")
        x = x if m.re is _EVENT_HAVE and not x.lower().startswith("my ") else article(x.split(" ", 1)[-1])
        add(f"Has {x}", "plan" if when.day > today else "event", day=when.day)
