"""Dates said in chat, resolved to absolute days relative to the day they were said on.

`find_date(text, today, past=None)` finds the first date expression of the text and returns its
day and its span. Forms: today / tonight / this morning (afternoon, evening) / tomorrow /
yesterday / last night / the day after tomorrow / the day before yesterday; next week (+7) /
last week (-7); this / next / last weekend (its Saturday); this / next / last / coming / on
<weekday> (abbreviations only after one of those words; "every Friday", "on Fridays" are none);
in N days / weeks, N days / weeks ago (N a number, a number word, "a", "a couple of", "a few" =
3); on (from, until, by) the Nth (this month, or the next when it has passed); <day> <month> and
<month> <day>, with an optional year (month names full or three-letter, "Sept" too); ISO dates
(2026-12-03, also with slashes).

Conventions, where chat is ambiguous:
- "this <weekday>" is the first such day on or after today; "next <weekday>", "coming
  <weekday>" and a bare weekday the first one after today — or, when `past` is true (the
  sentence is in the past tense), a bare weekday is the last one before today; "last
  <weekday>" the last one before today.
- "this weekend" is today on a Saturday or Sunday, else the coming Saturday; "next weekend" is
  the Saturday seven days after this weekend's; "last weekend" the Saturday seven days before
  it (weeks run Monday to Sunday).
- Without a year, a date is the nearest one in the direction of the tense: `past` true -> the
  latest such day on or before today, false -> the first on or after today, None -> the nearest
  (a tie goes to the future). "On the Nth" works the same way with months, except that
  without a tense it is this month's, or the next month's when this one's has passed.
Pure, deterministic; regexes are compiled once.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

_MONTHS = {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
           "oct": 10, "nov": 11, "dec": 12}
_MONTH = (r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
          r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_ABBREV = {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4,
           "sat": 5, "sun": 6}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
            "fourteen": 14, "twenty": 20, "thirty": 30, "a couple of": 2, "a few": 3, "couple": 2,
            "a couple": 2}
_ORD = r"(?:st|nd|rd|th)?"
_COUNT = (r"(?P<n>\d{1,3}|a couple of|a couple|couple|a few|an?|one|two|three|four|five|six|seven|eight|nine|"
          r"ten|eleven|twelve|fourteen|twenty|thirty)")
_MONTH_AHEAD = r"(?!\s+(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))"

_FORMS = (  # most specific first: at one position the first form that matches wins
    ("iso", r"\b(?P<iso_y>\d{4})[-/](?P<iso_m>\d{1,2})[-/](?P<iso_d>\d{1,2})\b"),
    ("daymonth", rf"\b(?:the )?(?P<dm_d>\d{{1,2}}){_ORD}(?: of)? {_MONTH.replace('mon>', 'dm_mon>')}"
                 r"(?:,? (?P<dm_y>\d{4}))?\b"),
    ("monthday", rf"\b{_MONTH.replace('mon>', 'md_mon>')} (?:the )?(?P<md_d>\d{{1,2}}){_ORD}(?!\d|:|\.\d)"
                 r"(?:,? (?P<md_y>\d{4}))?\b"),
    ("ago", rf"\b{_COUNT.replace('n>', 'ago_c>')} (?P<ago_unit>days?|weeks?) ago\b"),
    ("in", rf"\bin {_COUNT.replace('n>', 'in_c>')} (?P<in_unit>days?|weeks?|fortnight)\b"),
    ("nth", rf"\b(?:on|from|until|till|by|since) the (?P<nth_d>\d{{1,2}})(?:st|nd|rd|th)\b{_MONTH_AHEAD}"),
    ("week", r"\b(?P<week_rel>next|last|this|coming) (?P<week_unit>week(?:end)?)\b"),
    ("weekday", r"\b(?<!every )(?<!each )(?:(?P<wd_rel>next|this|last|coming|on)\s+)?"  # "every Friday": no day
                r"(?P<wd_wd>(?:mon|tues|wednes|thurs|fri|satur|sun)day)\b"),
    ("abbr", r"\b(?P<ab_rel>next|this|last|coming|on)\s+(?P<ab_wd>mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)\b\.?"),
    ("relday", r"\b(?P<rd_w>the day after tomorrow|the day before yesterday|today|tonight|tomorrow|tmrw|tmr|"
               r"yesterday|last night|this (?:morning|afternoon|evening))\b"),
)
# One regex; every form starts at a word boundary, tested once per position.
_ALL = re.compile(r"\b(?:" + "|".join(f"(?P<{name}>{rx.removeprefix(chr(92) + 'b')})" for name, rx in _FORMS) + ")",
                  re.IGNORECASE)
_DIGIT = re.compile(r"\d")
_WORD = re.compile(r"[a-z]+")
_HINTS = frozenset("""today tonight tomorrow tmrw tmr yesterday night morning afternoon evening week weekend
days weeks fortnight""".split()) | frozenset(_WEEKDAYS) | frozenset(d + "s" for d in _WEEKDAYS) | frozenset(_ABBREV)


@dataclass(frozen=True)
class DateMatch:
    day: dt.date
    start: int
    end: int
    text: str


def _count(word: str) -> int:
    word = " ".join(word.lower().split())
    return int(word) if word.isdigit() else _NUMBERS.get(word, 0)


def _weekday(name: str) -> int:
    name = name.lower().rstrip("s") if name.lower().endswith("days") else name.lower()
    for i, full in enumerate(_WEEKDAYS):
        if name == full:
            return i
    return _ABBREV[name.rstrip(".")]


def _saturday(today: dt.date) -> dt.date:
    """The Saturday of "this weekend" (on a Sunday, yesterday)."""
    return today + dt.timedelta(days=5 - today.weekday())


def _date(y: int, m: int, d: int) -> dt.date | None:
    try:
        return dt.date(y, m, d)
    except ValueError:
        return None


def _nearest(options: list[dt.date], today: dt.date, past: bool | None) -> dt.date | None:
    if past is True:
        before = [o for o in options if o <= today]
        return max(before) if before else None
    if past is False:
        after = [o for o in options if o >= today]
        return min(after) if after else None
    return min(options, key=lambda o: (abs((o - today).days), o < today)) if options else None


def _resolve(form: str, g: dict, today: dt.date, past: bool | None) -> dt.date | None:
    if form == "relday":
        w = " ".join(g["rd_w"].lower().split())
        offset = {"the day after tomorrow": 2, "the day before yesterday": -2, "yesterday": -1,
                  "tomorrow": 1, "tmrw": 1, "tmr": 1, "last night": -1}.get(w, 0)
        return today + dt.timedelta(days=offset)
    if form == "week":
        rel, unit = g["week_rel"].lower(), g["week_unit"].lower()
        if unit == "week":
            return {"next": today + dt.timedelta(days=7), "last": today - dt.timedelta(days=7)}.get(rel)
        if rel in ("this", "coming") and today.weekday() >= 5:
            return today
        return _saturday(today) + dt.timedelta(days={"next": 7, "last": -7}.get(rel, 0))
    if form in ("weekday", "abbr"):
        target = _weekday(g["wd_wd"] or g["ab_wd"])
        rel = (g["wd_rel"] or g["ab_rel"] or "").lower()
        if rel == "last" or (rel in ("", "on") and past):
            return today - dt.timedelta(days=(today.weekday() - target) % 7 or 7)
        ahead = (target - today.weekday()) % 7
        return today + dt.timedelta(days=ahead if rel == "this" else ahead or 7)
    if form in ("in", "ago"):
        n, unit = _count(g[form + "_c"]), g[form + "_unit"].lower()
        days = 14 * n if unit == "fortnight" else n * (7 if unit.startswith("week") else 1)
        if not n or days > 3660:
            return None
        return today + dt.timedelta(days=days if form == "in" else -days)
    if form == "iso":
        return _date(int(g["iso_y"]), int(g["iso_m"]), int(g["iso_d"]))
    if form in ("daymonth", "monthday"):
        p = "dm_" if form == "daymonth" else "md_"
        month, day = _MONTHS[g[p + "mon"].lower()[:3]], int(g[p + "d"])
        if g[p + "y"]:
            return _date(int(g[p + "y"]), month, day)
        options = [d for d in (_date(today.year + k, month, day) for k in (-1, 0, 1, 2, 3, 4)) if d]
        return _nearest(options, today, past)
    if form == "nth":
        day, options = int(g["nth_d"]), []
        for k in range(-12, 13):
            y, mo = divmod(today.month - 1 + k, 12)
            d = _date(today.year + y, mo + 1, day)
            if d:
                options.append(d)
        return _nearest(options, today, False if past is None else past)
    return None


def may_have_date(text: str) -> bool:
    """False when the text surely has no date expression (a cheap test)."""
    return _DIGIT.search(text) is not None or not _HINTS.isdisjoint(_WORD.findall(text.lower()))


def find_date(text: str, today: dt.date, past: bool | None = None) -> DateMatch | None:
    """The first date expression of the text that resolves, or None."""
    if not may_have_date(text):
        return None
    for m in _ALL.finditer(text):
        day = _resolve(m.lastgroup, m.groupdict(), today, past)  # the form: the outer group closes last
        if day is not None:
            return DateMatch(day, m.start(), m.end(), m.group(0))
    return None

