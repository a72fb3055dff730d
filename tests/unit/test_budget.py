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


def test_a_chunk_holds_at_most_the_speakers_one_answer_can_summarise():
    from pipeline.summarize.budget import speakers_per_answer
    lines = tuple(ChatLine(i, i % 25, f"U{i % 25}", "hi", TS) for i in range(100))  # short: one request's input

    def render(piece, _part):
        return "".join(f"<m>{ln.text}</m>" for ln in piece)
    big = Budget(100_000, estimate_tokens)
    assert chunk_lines(lines, render, big) == [lines]
    assert chunk_lines(lines, render, big, max_speakers=25) == [lines]
    pieces = chunk_lines(lines, render, big, max_speakers=10)
    assert len(pieces) > 1 and all(len({ln.user_id for ln in p}) <= 10 for p in pieces)
    assert [ln.message_id for p in pieces for ln in p] == list(range(100))  # in time order, none lost
    # the default output limit and length target: a day of 200 speakers is never one answer
    assert 20 <= speakers_per_answer(8192, 300) < 200 and speakers_per_answer(8192, 40) > speakers_per_answer(8192, 300)
