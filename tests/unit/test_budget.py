"""pipeline.summarize.budget: texts cut to fit a request, names clipped, days chunked. No database."""

from __future__ import annotations

import datetime as dt

from pipeline.llm.client import estimate_tokens
from pipeline.summarize.base import ChatLine, PartitionDay
from pipeline.summarize.budget import NAME_CHARS, Budget, chunk_lines, clip_names, fit_texts

TS = dt.datetime(2026, 11, 5, 9, tzinfo=dt.timezone.utc)
BUDGET = Budget(300, estimate_tokens)  # 1,200 characters


def _render(texts: list[str]) -> str:
    return "instructions " * 10 + "".join(f"<t>{t}</t>" for t in texts)


def test_texts_that_fit_are_unchanged():
    assert fit_texts(["short", "also short"], _render, BUDGET) == ["short", "also short"]


def test_the_longest_texts_are_cut_to_one_length_and_short_ones_stay_whole():
    texts = ["short one", "word " * 500, "word " * 300]
    out = fit_texts(texts, _render, BUDGET)
    assert BUDGET.fits(_render(out)) and out[0] == "short one"
    assert abs(len(out[1]) - len(out[2])) <= 5 and out[1].endswith("…")
    assert not BUDGET.fits(_render([out[0], out[1] + "word " * 5, out[2] + "word " * 5]))  # as long as it can be


def test_escaping_is_measured_not_guessed():
    def escaped(texts):
        return _render([t.replace('"', "&#34;") for t in texts])
    out = fit_texts(['"' * 5000], escaped, BUDGET)
    assert BUDGET.fits(escaped(out)) and len(out[0]) < 250


def test_names_are_clipped_everywhere_in_a_partition_day():
    long = "Zed " * 1000
    pd = PartitionDay("guild:1", TS.date(), (ChatLine(1, 7, long, "hi", TS, reply_to_name=long),), {7: long})
    out = clip_names(pd)
    assert len(out.speakers[7]) <= NAME_CHARS and len(out.lines[0].name) <= NAME_CHARS
    assert len(out.lines[0].reply_to_name) <= NAME_CHARS
    short = PartitionDay("guild:1", TS.date(), (ChatLine(1, 7, "Ana", "hi", TS),), {7: "Ana"})
    assert clip_names(short) is short


def test_every_chunk_fits_and_a_message_too_long_for_any_request_is_cut():
    lines = tuple(ChatLine(i, i % 3, f"U{i % 3}", ("text " * (2000 if i == 4 else 30)).strip(), TS) for i in range(12))

    def render(piece, _part):
        return "instructions " * 10 + "".join(f"<m>{ln.text}</m>" for ln in piece)
    pieces = chunk_lines(lines, render, BUDGET)
    assert len(pieces) > 1 and all(BUDGET.fits(render(p, 1)) for p in pieces)
    assert [ln.message_id for p in pieces for ln in p] == list(range(12))  # in time order, none lost
    assert len(next(ln for p in pieces for ln in p if ln.message_id == 4).text) < 1200


def test_a_chunk_holds_at_most_the_answer_one_reply_can_hold():
    lines = tuple(ChatLine(i, i % 25, f"U{i % 25}", "hi", TS) for i in range(100))  # short: one request's input

    def render(piece, _part):
        return "".join(f"<m>{ln.text}</m>" for ln in piece)
    big = Budget(100_000, estimate_tokens)

    def per_speaker(_written):
        return 10
    assert chunk_lines(lines, render, big) == [lines]
    assert chunk_lines(lines, render, big, (250, per_speaker)) == [lines]
    pieces = chunk_lines(lines, render, big, (100, per_speaker))
    assert len(pieces) > 1 and all(len({ln.user_id for ln in p}) <= 10 for p in pieces)
    assert [ln.message_id for p in pieces for ln in p] == list(range(100))  # in time order, none lost
    # what a speaker wrote counts: one who wrote more fills the answer sooner
    wordy = tuple(ChatLine(i, i % 25, f"U{i % 25}", "word " * 100, TS) for i in range(100))
    assert len(chunk_lines(wordy, render, big, (500, lambda w: w // 50))) > len(chunk_lines(lines, render, big, (500, lambda w: w // 50))) == 1


def test_a_speakers_expected_answer_grows_with_what_they_wrote_up_to_the_target():
    from pipeline.summarize.budget import answer_room, answer_tokens
    little, much = answer_tokens(40, 300), answer_tokens(3000, 300)
    assert little < much
    assert answer_tokens(300, 300) == answer_tokens(300, 300) and answer_tokens(10_000, 300) == answer_tokens(20_000, 300)
    # the default output limit and length target: a day of 200 light speakers is never one
    # answer, but many more light speakers than wordy ones share one
    assert 200 * little > answer_room(8192) > 50 * little
    assert answer_room(8192) // little > 2 * (answer_room(8192) // much)