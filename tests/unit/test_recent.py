"""pipeline/stages/recent.py: the renders, the week's room, and the same-day re-merge rule."""

from __future__ import annotations

import datetime as dt

from pipeline.config import SummaryLengths
from pipeline.stages.recent import (REMERGE_NOVEL_SHARE, keeps_stored, novel_share, render_recent,
                                    render_recent_within, render_week, week_room, word_marks)

D1 = dt.date(2026, 11, 4)
TODAY = "Ana said: the west wall rose another course; stones were cut, hauled and set in fresh mortar."


def test_a_week_renders_one_dated_line_a_day_newest_first():
    week = render_week([(dt.date(2026, 11, 1), "Ana adopted\n a cat."), (dt.date(2026, 11, 3), "Ana: bread.")])
    assert week == "Past week: 2026-11-03: Ana: bread.\n2026-11-01: Ana adopted a cat."
    assert render_week([(dt.date(2026, 11, 2), " ")]) == "Past week: active on 2026-11-02"


def test_the_recent_part_labels_today_and_the_past_week_once():
    text = render_recent(["Ana: today here.", "Ana: and in the channel."], ["Past week: 2026-11-03: x", "Condensed y."])
    assert text == "Today: Ana: today here.\nAna: and in the channel.\nPast week: 2026-11-03: x\nCondensed y."
    assert render_recent([], ["Past week (2 active days): z"]) == "Past week: z"
    assert render_recent([], []) == ""


def test_a_context_of_one_partition_fits_when_its_day_fits():
    lengths = SummaryLengths()
    room = week_room(lengths)
    text = render_recent(["x" * lengths.daily_chars], [render_week([(D1, "y" * (room - 23))])])
    assert len(render_week([(D1, "y" * (room - 23))])) == room and len(text) == lengths.context_chars
    assert week_room(lengths.model_copy(update={"context_chars": 100})) == lengths.historical_chars


def test_novel_share_counts_new_content_words_not_their_order():
    basis = word_marks(TODAY)
    assert novel_share(TODAY, basis) == 0.0
    assert novel_share("Set in fresh mortar, the stones were cut and hauled.", basis) == 0.0
    assert 0 < novel_share(TODAY + " He thanked everyone.", basis) < REMERGE_NOVEL_SHARE
    assert novel_share("Ana said: the harbour crane arrived by barge.", basis) >= REMERGE_NOVEL_SHARE
    assert all(len(m) == 4 for m in basis)  # marks, not words


def _stored(**inputs) -> dict:
    made = {"terms": "t", "day1": [["guild:1", D1.isoformat(), "h1"]], "day1_words": word_marks(TODAY)} | inputs
    return {"as_of_day": D1, "recent": "Merged text.", "inputs": made}


def _keeps(stored, *, terms="t", rows=None, folds=None, day1=TODAY + " He thanked everyone.") -> bool:
    rows = rows if rows is not None else [{"partition": "guild:1", "day": D1, "input_hash": "h2"}]
    return keeps_stored(stored, as_of=D1, terms=terms, day1_rows=rows,
                        folds={("guild:1", D1): "h1"} if folds is None else folds, day1=day1)


def test_a_small_growth_by_a_fold_keeps_the_stored_recent_part():
    assert _keeps(_stored())


def test_what_is_not_small_growth_by_a_fold_re_merges():
    assert not _keeps(None)
    assert not _keeps(_stored() | {"as_of_day": D1 - dt.timedelta(days=1)})  # a new day 1: the rollover
    assert not _keeps(_stored(), terms="other")  # name, fingerprint, past week or forgotten facts changed
    assert not _keeps(_stored(), folds={})  # changed but not folded in this run: a rewrite (a deletion, an edit)
    assert not _keeps(_stored(), folds={("guild:1", D1): "h0"})  # folded from another row than the one seen
    two = [{"partition": "guild:1", "day": D1, "input_hash": "h2"}, {"partition": "channel:2", "day": D1,
                                                                     "input_hash": "c1"}]
    assert not _keeps(_stored(), rows=two)  # a new source partition
    assert not _keeps(_stored(), rows=[])  # a day-1 summary gone
    assert not _keeps(_stored(), day1="Ana said: the harbour crane arrived by barge with new timber beams.")


def test_without_stored_marks_the_stored_text_is_the_basis():
    stored = _stored(day1_words=None) | {"recent": "Today: " + TODAY}
    assert _keeps(stored) and not _keeps(stored, day1="Ana said: the harbour crane arrived by barge.")


def test_a_cut_render_fits_cuts_the_past_week_first_and_leaves_out_what_says_nothing():
    today = ["Bo said: built the west wall and talked about harbour cranes all afternoon."]
    weeks = ["Past week: 2026-11-02: Bo: " + "stone " * 60, "Past week: 2026-11-01: Bo in the channel: " + "crane " * 50]
    whole = render_recent(today, weeks)
    assert render_recent_within(today, weeks, len(whole)) == whole  # fits: unchanged
    for limit in (400, 250, 160):
        cut = render_recent_within(today, weeks, limit)
        assert len(cut) <= limit and cut.startswith("Today: " + today[0])  # today whole
        assert "Past week: 2026-11-02: Bo:" in cut and "…" in cut  # each week cut at a word, labelled
    # no room for a useful piece of the week: today alone; then today cut at a word
    assert render_recent_within(today, weeks, len("Today: ") + len(today[0]) + 20) == "Today: " + today[0]
    short = render_recent_within(today, weeks, 50)
    assert len(short) <= 50 and short.startswith("Today: Bo said:") and short.endswith("…")
