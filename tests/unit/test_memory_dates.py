"""Dates said in chat (pipeline/memory/dates.py), resolved relative to the day they were said on."""

from __future__ import annotations

import datetime as dt

import pytest

from pipeline.memory.dates import find_date, may_have_date

WED = dt.date(2026, 3, 4)  # a Wednesday
D = dt.date


def day(text, today=WED, past=None):
    found = find_date(text, today, past)
    return found.day if found else None


@pytest.mark.parametrize("text, expected", [
    ("today", WED), ("tonight", WED), ("this morning", WED), ("this evening", WED),
    ("tomorrow", D(2026, 3, 5)), ("tmrw", D(2026, 3, 5)), ("yesterday", D(2026, 3, 3)),
    ("last night", D(2026, 3, 3)), ("the day after tomorrow", D(2026, 3, 6)),
    ("the day before yesterday", D(2026, 3, 2)),
    ("next week", D(2026, 3, 11)), ("last week", D(2026, 2, 25)),
    ("in 3 days", D(2026, 3, 7)), ("in two weeks", D(2026, 3, 18)), ("in a week", D(2026, 3, 11)),
    ("in a couple of days", D(2026, 3, 6)), ("in a fortnight", D(2026, 3, 18)),
    ("3 days ago", D(2026, 3, 1)), ("a week ago", D(2026, 2, 25)), ("a few days ago", D(2026, 3, 1)),
])
def test_relative_days(text, expected):
    assert day(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("next friday", D(2026, 3, 6)), ("on Friday", D(2026, 3, 6)), ("Friday", D(2026, 3, 6)),
    ("coming monday", D(2026, 3, 9)), ("next wed", D(2026, 3, 11)),  # "next" is after today
    ("this Wednesday", WED), ("this thu", D(2026, 3, 5)),             # "this" may be today
    ("last Monday", D(2026, 3, 2)), ("last wednesday", D(2026, 2, 25)), ("last sun", D(2026, 3, 1)),
])
def test_weekdays(text, expected):
    assert day(text) == expected


def test_a_bare_weekday_in_a_past_sentence_is_the_last_one():
    assert day("on Friday", past=True) == D(2026, 2, 27)
    assert day("on Wednesday", past=True) == D(2026, 2, 25)  # not today
    assert day("next Friday", past=True) == D(2026, 3, 6)     # "next" says it


def test_a_recurring_weekday_is_no_day():
    assert find_date("I stream every Friday", WED) is None
    assert find_date("we play on Fridays", WED) is None


def test_weekday_abbreviations_need_a_leading_word():
    assert find_date("I sat down", WED) is None
    assert find_date("the sun is out", WED) is None
    assert day("on sat") == D(2026, 3, 7)


@pytest.mark.parametrize("today, text, expected", [
    (WED, "this weekend", D(2026, 3, 7)), (WED, "next weekend", D(2026, 3, 14)),
    (WED, "last weekend", D(2026, 2, 28)),
    (D(2026, 3, 7), "this weekend", D(2026, 3, 7)), (D(2026, 3, 8), "this weekend", D(2026, 3, 8)),
    (D(2026, 3, 8), "last weekend", D(2026, 2, 28)), (D(2026, 3, 8), "next weekend", D(2026, 3, 14)),
])
def test_weekends_are_their_saturday(today, text, expected):
    assert day(text, today) == expected


@pytest.mark.parametrize("text, expected", [
    ("on the 20th", D(2026, 3, 20)), ("on the 4th", WED),
    ("on the 2nd", D(2026, 4, 2)),                 # passed this month: next month's
    ("until the 10th", D(2026, 3, 10)), ("from the 3rd", D(2026, 4, 3)),
    ("on the 12th of April", D(2026, 4, 12)),      # the month wins over "the Nth"
])
def test_the_nth(text, expected):
    assert day(text) == expected


def test_the_nth_rolls_over_the_year_and_skips_short_months():
    assert day("on the 5th", D(2026, 12, 20)) == D(2027, 1, 5)
    assert day("on the 31st", D(2026, 4, 2)) == D(2026, 5, 31)   # April has no 31st
    assert day("on the 30th", D(2026, 2, 10)) == D(2026, 3, 30)  # nor February a 30th
    assert day("on the 20th", WED, past=True) == D(2026, 2, 20)


@pytest.mark.parametrize("text, expected", [
    ("3 March 2027", D(2027, 3, 3)), ("March 3rd, 2027", D(2027, 3, 3)), ("the 3rd of March 2025", D(2025, 3, 3)),
    ("Mar 10", D(2026, 3, 10)), ("10 Mar", D(2026, 3, 10)), ("Sept 1", D(2026, 9, 1)),
    ("2026-12-03", D(2026, 12, 3)), ("2026/12/03", D(2026, 12, 3)),
])
def test_day_and_month(text, expected):
    assert day(text) == expected


def test_the_year_of_a_day_and_month_is_the_nearest_in_the_direction_of_the_tense():
    assert day("3 March", past=False) == D(2027, 3, 3)    # yesterday's date, said of a plan: next year
    assert day("3 March", past=True) == D(2026, 3, 3)
    assert day("3 March") == D(2026, 3, 3)                # no tense: the nearest
    assert day("Dec 31") == D(2025, 12, 31)
    assert day("Dec 31", past=False) == D(2026, 12, 31)
    assert day("January 2", D(2026, 12, 28)) == D(2027, 1, 2)  # over new year
    assert day("December 30", D(2027, 1, 2)) == D(2026, 12, 30)
    assert day("Feb 29", D(2027, 1, 10), past=False) == D(2028, 2, 29)  # the next leap year


def test_impossible_dates_are_no_dates():
    assert find_date("2026-02-30", WED) is None
    assert find_date("on the 32nd", WED) is None
    assert find_date("at 10:30", WED) is None
    assert find_date("May 2:30", WED) is None


def test_span_and_text():
    found = find_date("I'm flying to Tokyo next week for work", WED)
    assert (found.start, found.end, found.text) == (20, 29, "next week")
    assert found.day == D(2026, 3, 11)


def test_the_first_date_wins():
    assert day("tomorrow, then on the 20th") == D(2026, 3, 5)


def test_cheap_gate():
    assert not may_have_date("lol same")
    assert may_have_date("see you Friday") and may_have_date("2026") and may_have_date("tonight")
