"""Dates said in chat, resolved to absolute days relative to the day they were said on.

`find_date(text, today, past=None)` finds the first date expression of the text and returns its
day and its span. Forms: today / tonight / tomorrow / yesterday / the day after tomorrow / the day
before yesterday; next week (+7) / last week (-7); this / next / last weekend (its Saturday);
this / next / last / coming / on <weekday> (abbreviations only after one of those words); in N
days / weeks, N days / weeks ago (N a number, a number word, "a", "a couple of", "a few" = 3);
on the Nth (this month, or the next when it has passed); <day> <month> and <month> <day>, with
an optional year (month names full or three-letter, "Sept" too); ISO dates (2026-12-03, also
with slashes).

Conventions, where chat is ambiguous:
- "this <weekday>" is the first such day on or after today; "next <weekday>", "coming
  <weekday>" and a bare weekday the first one after today — or, when `past` is true (the
  sentence is in the past tense), a bare weekday is the last one before today; "last
  <weekday>" the last one before today.
- "this weekend" is today on a Saturday or Sunday, else the coming Saturday; "next weekend" is
  seven days after that Saturday; "last weekend" the Saturday of the weekend before it.
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
_COUNT = r"(?P<n>\d{1,3}|a couple of|a couple|couple|a few|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fourteen|twenty|thirty)"

_FORMS: list[tuple[str, re.Pattern]] = [(name, re.compile(rx, re.IGNORECASE)) for name, rx in (
    ("relday", r"\b(?P<w>the day after tomorrow|the day before yesterday|today|tonight|tomorrow|tmrw|tmr|yesterday)\b"),
    ("week", r"\b(?P<rel>next|last|this|coming) (?P<unit>week(?:end)?)\b"),
    ("weekday", r"\b(?:(?P<rel>next|this|last|coming|on)\s+)?(?P<wd>(?:mon|tues|wednes|thurs|fri|satur|sun)days?)\b"),
    ("weekday_abbr", r"\b(?P<rel>next|this|last|coming|on)\s+(?P<wd>mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)\b\.?"),
    ("in", rf"\bin (?P<c>{_COUNT}) (?P<unit>days?|weeks?|fortnight)\b"),
    ("ago", rf"\b(?P<c>{_COUNT}) (?P<unit>days?|weeks?) ago\b"),
    ("iso", r"\b(?P<y>\d{4})[-/](?P<m>\d{1,2})[-/](?P<d>\d{1,2})\b"),
    ("daymonth", rf"\b(?:the )?(?P<d>\d{{1,2}}){_ORD}(?: of)? {_MONTH}(?:,? (?P<y>\d{{4}}))?\b"),
    ("monthday", rf"\b{_MONTH} (?:the )?(?P<d>\d{{1,2}}){_ORD}(?!\d|:|\.\d)(?:,? (?P<y>\d{{4}}))?\b"),
    ("nth", r"\bon the (?P<d>\d{1,2})(?:st|nd|rd|th)\b"),
)]
_ANY = re.compile(r"\d|today|tonight|tom|tmr|yesterday|week|day|\b(?:mon|tue|wed|thu|fri|sat|sun)", re.IGNORECASE)


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
    """The Saturday of "this weekend"."""
    wd = today.weekday()
    if wd == 5:
        return today
    if wd == 6:
        return today - dt.timedelta(days=1)
    return today + dt.timedelta(days=5 - wd)


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


def _resolve(form: str, m: re.Match, today: dt.date, past: bool | None) -> dt.date | None:
    g = m.groupdict()
    if form == "relday":
        w = g["w"].lower()
        offset = {"the day after tomorrow": 2, "the day before yesterday": -2, "yesterday": -1,
                  "tomorrow": 1, "tmrw": 1, "tmr": 1}.get(w, 0)
        return today + dt.timedelta(days=offset)
    if form == "week":
        rel, unit = g["rel"].lower(), g["unit"].lower()
        if unit == "week":
            return {"next": today + dt.timedelta(days=7), "last": today - dt.timedelta(days=7)}.get(rel)
        sat = today if today.weekday() >= 5 and rel in ("this", "coming") else _saturday(today)
        return sat + dt.timedelta(days={"next": 7, "last": -7}.get(rel, 0))
    if form in ("weekday", "weekday_abbr"):
        target = _weekday(g["wd"])
        rel = (g["rel"] or "").lower()
        ahead = (target - today.weekday()) % 7
        if rel == "last" or (rel in ("", "on") and past):
            return today - dt.timedelta(days=(today.weekday() - target) % 7 or 7)
        if rel == "this":
            return today + dt.timedelta(days=ahead)
        return today + dt.timedelta(days=ahead or 7)
    if form in ("in", "ago"):
        n = _count(g["c"])
        unit = g["unit"].lower()
        days = n * (7 if unit.startswith("week") else 1) if unit != "fortnight" else 14 * max(n, 1)
        if not n or days > 3660:
            return None
        return today + dt.timedelta(days=days if form == "in" else -days)
    if form == "iso":
        return _date(int(g["y"]), int(g["m"]), int(g["d"]))
    if form in ("daymonth", "monthday"):
        month, day = _MONTHS[g["mon"].lower()[:3]], int(g["d"])
        if g.get("y"):
            return _date(int(g["y"]), month, day)
        options = [d for d in (_date(today.year + k, month, day) for k in (-1, 0, 1, 2, 3, 4)) if d]
        return _nearest(options, today, past)
    if form == "nth":
        day = int(g["d"])
        options = []
        for k in range(-12, 13):
            y, mo = divmod(today.month - 1 + k, 12)
            d = _date(today.year + y, mo + 1, day)
            if d:
                options.append(d)
        return _nearest(options, today, False if past is None else past)
    return None


def find_date(text: str, today: dt.date, past: bool | None = None) -> DateMatch | None:
    """The first (then longest) date expression of the text that resolves, or None."""
    if not _ANY.search(text):
        return None
    best: tuple[int, int, DateMatch] | None = None
    for form, rx in _FORMS:
        for m in rx.finditer(text):
            if best is not None and m.start() > best[0]:
                break
            day = _resolve(form, m, today, past)
            if day is None:
                continue
            key = (m.start(), -(m.end() - m.start()))
            if best is None or key < best[:2]:
                best = (key[0], key[1], DateMatch(day, m.start(), m.end(), m.group(0)))
            break
    return best[2] if best else None
