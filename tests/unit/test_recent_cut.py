"""pipeline/stages/recent.py, [summary] condense = "cut": a past week over its room rendered with
each day's summary cut to fit, never a model call (the stage tests are
tests/integration/test_condense_cut.py)."""

from __future__ import annotations

import datetime as dt

from pipeline.config import SummaryLengths
from pipeline.stages.recent import render_week, render_week_within, week_room
from pipeline.summarize.text import cut_text

D = dt.date(2026, 11, 10)


def _day(i: int, text: str) -> tuple[dt.date, str]:
    return D - dt.timedelta(days=i), text


def test_a_text_is_cut_at_a_sentence_end_when_one_is_near_else_at_a_word():
    text = "Ana finished the west wall. Then she argued about mortar for an hour with Bo and lost."
    assert cut_text(text, 200) == text
    assert cut_text(text, 40) == "Ana finished the west wall."  # a sentence end in the second half
    cut = cut_text(text, 20)  # none there: at a word
    assert cut.endswith("…") and len(cut) <= 20 and text.startswith(cut[:-1])
    assert len(cut_text("x" * 100, 10)) <= 10


def test_a_week_that_fits_is_the_plain_render():
    dailies = [_day(1, "Ana baked."), _day(3, "Ana ran.")]
    assert render_week_within(dailies, 1000) == render_week(dailies)


def test_a_week_over_its_room_keeps_every_day_with_its_lead():
    room = week_room(SummaryLengths())
    leads = [f"Ana spoke of topic {i} at length." for i in range(1, 7)]
    dailies = [_day(i, lead + " " + " ".join(["and then some more detail about it"] * 8)) for i, lead in
               zip(range(1, 7), leads)]
    assert len(render_week(dailies)) > room
    week = render_week_within(dailies, room)
    assert len(week) <= room
    lines = week.removeprefix("Past week: ").split("\n")
    assert [ln[:10] for ln in lines] == [(D - dt.timedelta(days=i)).isoformat() for i in range(1, 7)]  # newest first
    for line, lead in zip(lines, leads):
        assert lead in line  # each day keeps its first sentence


def test_a_tiny_room_drops_the_oldest_days_first():
    dailies = [_day(i, f"Ana did thing number {i} with great care and patience.") for i in range(1, 7)]
    week = render_week_within(dailies, 120)
    assert len(week) <= 120
    assert (D - dt.timedelta(days=1)).isoformat() in week
    assert (D - dt.timedelta(days=6)).isoformat() not in week


def test_partial_summaries_are_joined_each_keeping_its_lead():
    from pipeline.summarize.text import join_within
    parts = ["Ana opened the market stall. She sold bread all morning to the regulars and tourists.",
             "Ana closed early. In the evening she planned a trip to Porto with her cousin Rita."]
    assert join_within(parts, 1000) == "\n".join(parts)  # one piece a line
    joined = join_within(parts, 100)
    first, second = joined.split("\n")
    assert len(joined) <= 100 and first == "Ana opened the market stall." and second.startswith("Ana closed early.")
    again = join_within([*joined.split("\n"), "Ana went to bed."], 100)  # a later fold: every piece keeps a line
    assert [ln[:12] for ln in again.split("\n")] == ["Ana opened t", "Ana closed e", "Ana went to "]
    many = join_within([f"Piece {i} of a long day with much to say about it." for i in range(20)], 60)
    assert len(many) <= 60 and many.split("\n")[-1].startswith("Piece 19")  # too many for 24 characters each: the newest
