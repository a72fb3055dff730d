"""Facts said anywhere in a first-person clause, not only at its start: pets and relatives by
name, favourites, native language, time zone, name, pronouns, birthday, dated events.
Pure; regexes are compiled once."""

from __future__ import annotations

import datetime as dt

from pipeline.memory import dates
from pipeline.memory.patterns import r as _r
from pipeline.memory.phrasing import capitalise, object_end, possessive, third_person
from pipeline.memory.vocab import ADV, BAD_OBJECT, EVENT, IVE, LANG, NOT_THINGS, PET, REL, SAFE_THINGS, TZ, article

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
_ABSOLUTE_DATE = _r(r"(?!(?:today|tonight|tomorrow|tmr|yesterday|next|this|last|coming|on |in |\w+day))(?:\d|[a-z]{3})")


def anywhere(clause: str, when, today: dt.date, add) -> None:
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
