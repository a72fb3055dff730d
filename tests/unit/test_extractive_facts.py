"""The extractive summarizer's remember / forget: the facts blob, one fact per line, within
summary.facts_chars (the oldest facts go first)."""

from __future__ import annotations

import asyncio

import pytest

from pipeline.summarize import ExtractiveSummarizer
from pipeline.summarize.text import shorten


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def summarizer(settings):
    return ExtractiveSummarizer(settings.summary)


def test_remember_adds_a_sentence_once(summarizer):
    blob = run(summarizer.remember("", "Ana is in CET")).value
    assert blob == "Ana is in CET."
    again = run(summarizer.remember(blob, "ana IS in cet")).value
    assert again == blob
    again = run(summarizer.remember(again, "  Ana   is in CET. ")).value
    assert again == blob


def test_remember_appends_after_existing_facts(summarizer):
    blob = run(summarizer.remember("Ana likes tea.\n\n", "Ana plays chess!")).value
    assert blob == "Ana likes tea.\nAna plays chess!"


def test_remember_keeps_the_facts_within_facts_chars_dropping_the_oldest(settings):
    summarizer = ExtractiveSummarizer(settings.summary.model_copy(update={"facts_chars": 80}))
    blob = ""
    for fact in ("Ana likes tea.", "Ana plays chess.", "Ana is in CET.", "Ana studies statistics.",
                 "Ana keeps bees on her balcony."):
        blob = run(summarizer.remember(blob, fact)).value
        assert len(blob) <= 80 and blob.endswith(fact)  # the newest fact always stays
    assert blob == "Ana is in CET.\nAna studies statistics.\nAna keeps bees on her balcony."
    # restating a fact makes it the newest, so it outlives the ones stated after it
    blob = run(summarizer.remember(blob, "ana is in cet")).value
    assert blob == "Ana studies statistics.\nAna keeps bees on her balcony.\nAna is in CET."
    long = "Ana " + "really " * 20 + "likes tea."
    assert run(summarizer.remember(blob, long)).value == shorten(long, 80)  # alone, shortened


def test_forget_removes_matching_lines_and_reports_found(summarizer):
    blob = "Ana likes tea.\nAna is in CET.\nAna plays in a band."
    kept, found = run(summarizer.forget(blob, "Ana is in CET", "Ana")).value
    assert (kept, found) == ("Ana likes tea.\nAna plays in a band.", True)


def test_forget_reports_not_found_and_keeps_blob(summarizer):
    blob = "Ana likes tea.\nAna plays in a band."
    kept, found = run(summarizer.forget(blob, "ban", "Ana")).value  # "ban" is not "band"
    assert (kept, found) == (blob, False)


def test_forget_removes_every_line_stating_the_fact(summarizer):
    blob = "Ana is in CET.\nAna likes tea.\nana is in cet since 2020."
    kept, found = run(summarizer.forget(blob, "Ana is in CET", "Ana")).value
    assert (kept, found) == ("Ana likes tea.", True)


def test_remember_then_forget_round_trip(summarizer):
    blob = run(summarizer.remember("Ana likes tea.", "Ana is vegetarian")).value
    kept, found = run(summarizer.forget(blob, "Ana is vegetarian", "Ana")).value
    assert (kept, found) == ("Ana likes tea.", True)
