"""The extractive summarizer's facts: daily and fold propose the offline extractor's facts
(pipeline/memory/extract.py; fold: of the new messages only, positions in them); forget answers the
positions of the facts that state the fact to forget (one fact per list item)."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from pipeline.memory.extract import extract_facts
from pipeline.summarize import ChatLine, ExtractiveSummarizer, PartitionDay


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def summarizer(settings):
    return ExtractiveSummarizer(settings.summary)


def _pd(said) -> PartitionDay:
    ts = dt.datetime(2026, 11, 5, 9, tzinfo=dt.timezone.utc)
    lines = tuple(ChatLine(1190000000000000000 + i, uid, {1: "Ana", 2: "Bo"}[uid], text, ts + dt.timedelta(minutes=i))
                  for i, (uid, text) in enumerate(said))
    return PartitionDay("guild:1", ts.date(), lines, {uid: {1: "Ana", 2: "Bo"}[uid] for uid, _t in said})


def test_daily_proposes_the_extractors_facts(summarizer):
    pd = _pd([(2, "lol"), (1, "I'm moving to Lisbon in March."), (2, "My dog is called Pixel.")])
    out = run(summarizer.daily(pd))
    assert out.facts == extract_facts(pd) and out.facts
    assert {(f.user_id, f.sources) for f in out.facts} == {(1, (1,)), (2, (2,))}  # positions in pd.lines


def test_fold_proposes_the_facts_of_the_new_messages_only(summarizer):
    new = _pd([(2, "My dog is called Pixel.")])
    out = run(summarizer.fold(new, {1: "Ana: “I'm moving to Lisbon in March.”"}))
    assert out.facts == extract_facts(new)
    assert [(f.user_id, f.sources) for f in out.facts] == [(2, (0,))]


def test_forget_answers_the_positions_of_the_facts_that_state_it(summarizer):
    facts = ["Likes tea.", "Is in CET.", "Plays in a band."]
    out = run(summarizer.forget(facts, "Ana is in CET", "Ana"))
    assert out.value == [1] and out.degraded_reason is None and out.usage.llm_calls == 0


def test_forget_finds_nothing_by_part_of_a_word(summarizer):
    assert run(summarizer.forget(["Likes tea.", "Plays in a band."], "ban", "Ana")).value == []  # not "band"


def test_forget_finds_every_fact_stating_it(summarizer):
    facts = ["Ana is in CET.", "Likes tea.", "ana is in cet since 2020."]
    assert run(summarizer.forget(facts, "Ana is in CET", "Ana")).value == [0, 2]


def test_forget_of_no_facts(summarizer):
    assert run(summarizer.forget([], "Ana is in CET", "Ana")).value == []


def test_remember_left_the_seam(summarizer):
    assert not hasattr(summarizer, "remember")
