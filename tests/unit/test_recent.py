"""pipeline/stages/recent.py: the renders, the week's room, and the same-day re-merge rule."""

from __future__ import annotations

import datetime as dt

from pipeline.config import SummaryLengths
from pipeline.stages.recent import (REMERGE_NOVEL_SHARE, dated, keeps_stored, novel_share, recent_parts,
                                    render_recent, render_recent_within, render_week, week_room, where_labels,
                                    word_marks)

D1 = dt.date(2026, 11, 4)
TODAY = "Ana said: the west wall rose another course; stones were cut, hauled and set in fresh mortar."


def test_a_week_renders_one_dated_line_a_day_newest_first():
    week = render_week([(dt.date(2026, 11, 1), "Ana adopted\n a cat."), (dt.date(2026, 11, 3), "Ana: bread.")])
    assert week == "Past week: 2026-11-03: Ana: bread.\n2026-11-01: Ana adopted a cat."
    assert render_week([(dt.date(2026, 11, 2), " ")]) == "Past week: active on 2026-11-02"


def test_every_line_of_the_recent_part_says_which_day_it_is_from():
    text = render_recent([(D1, "Ana: today here.", ""), (D1 - dt.timedelta(days=1), "Ana: and in\nthe channel.", "")],
                         [(D1, "Past week: 2026-11-03: x\n2026-11-01: w", ""), (D1, "Condensed y.", "")])
    assert text.split("\n") == [
        "Today, 2026-11-04: Ana: today here.",
        "Today, 2026-11-03: Ana: and in the channel.",  # a partition in another timezone: its own day 1
        "Past week: 2026-11-03: x", "2026-11-01: w",  # a rendered week keeps its dated lines
        "2026-10-29–2026-11-03: Condensed y.",  # a condensed week: the days it covers
    ]
    assert render_recent([], [(D1, "Past week (2 active days): Ana: “z”", "")]) == \
        "Past week: 2026-10-29–2026-11-03: Ana: “z”"
    assert render_recent([], []) == ""


def test_in_a_dm_scope_each_line_says_where_by_kind_never_by_name():
    labels = where_labels("dm:9", ["dm:9", "guild:1", "channel:5", "guild:2", "dm:7"])
    assert labels == {"dm:9": "this DM", "guild:1": "server 1", "guild:2": "server 2",
                      "channel:5": "private channel", "dm:7": "other DM"}
    assert where_labels("dm:9", ["dm:9"]) == {"dm:9": ""}  # a DM that reads only itself
    assert where_labels("channel:5", ["channel:5", "guild:1"]) == {"channel:5": "", "guild:1": ""}
    today, week = recent_parts([(D1, "Ana: “hi”", "this DM"), (D1, "Ana: “gm”", "server 1")],
                               [(D1, "Past week: 2026-11-02: Ana: “gg”", "server 1"), (D1, "Ana baked.", "server 2")])
    assert today == ["Today, 2026-11-04 [this DM]: Ana: “hi”", "Today, 2026-11-04 [server 1]: Ana: “gm”"]
    assert week == ["2026-11-02 [server 1]: Ana: “gg”", "2026-10-29–2026-11-03 [server 2]: Ana baked."]


def test_a_merge_answer_says_when_each_line_is_from():
    first, last = D1 - dt.timedelta(days=6), D1
    merged = "Ana spent the week building.\nShe finished the wall today."
    assert dated(merged, first, last) == \
        "2026-10-29–2026-11-04: Ana spent the week building. She finished the wall today."
    assert dated(merged, first, last, "this DM, server").startswith("2026-10-29–2026-11-04 [this DM, server]: ")
    labelled = "Today, 2026-11-04: Ana: “x”\nPast week: 2026-11-02: Ana: “y”\nmore prose"
    assert dated(labelled, first, last).split("\n") == [
        "Today, 2026-11-04: Ana: “x”", "Past week: 2026-11-02: Ana: “y”", "2026-10-29–2026-11-04: more prose"]
    assert dated(dated(merged, first, last), first, last) == dated(merged, first, last)


def test_a_context_of_one_partition_fits_when_its_day_fits():
    lengths = SummaryLengths()
    room = week_room(lengths)
    week = render_week([(D1, "y" * (room - 23))])
    text = render_recent([(D1, "x" * lengths.daily_chars, "")], [(D1, week, "")])
    assert len(week) == room and len(text) == lengths.context_chars
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
    stored = _stored(day1_words=None) | {"recent": "Today, 2026-11-04: " + TODAY}
    assert _keeps(stored) and not _keeps(stored, day1="Ana said: the harbour crane arrived by barge.")


def test_a_cut_render_fits_cuts_the_past_week_first_and_leaves_out_what_says_nothing():
    said = "Bo said: built the west wall and talked about harbour cranes all afternoon."
    weeks = [(D1, "Past week: 2026-11-02: Bo: " + "stone " * 60, ""),
             (D1, "Past week: 2026-11-01: Bo in the channel: " + "crane " * 50, "")]
    today, weeks = recent_parts([(D1, said, "")], weeks)
    assert today == ["Today, 2026-11-04: " + said]
    whole = render_recent_within(today, weeks, 10_000)
    assert render_recent_within(today, weeks, len(whole)) == whole  # fits: unchanged
    for limit in (400, 250, 160):
        cut = render_recent_within(today, weeks, limit)
        assert len(cut) <= limit and cut.startswith(today[0])  # today whole
        assert "Past week: 2026-11-02: Bo:" in cut and "…" in cut  # each week cut at a word, labelled
    # no room for a useful piece of the week: today alone; then today cut at a word
    assert render_recent_within(today, weeks, len(today[0]) + 20) == today[0]
    short = render_recent_within(today, weeks, 50)
    assert len(short) <= 50 and short.startswith("Today, 2026-11-04: Bo said:") and short.endswith("…")
