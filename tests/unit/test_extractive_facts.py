"""The extractive summarizer's facts: forget answers the positions of the facts that state the
fact to forget (one fact per list item)."""

from __future__ import annotations

import asyncio

import pytest

from pipeline.summarize import ExtractiveSummarizer


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def summarizer(settings):
    return ExtractiveSummarizer(settings.summary)


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
