"""Facts in the daily and fold answers (pipeline/summarize/facts_out.py, schemas.py): message
handles in the prompts, the FactOut contract, and an answer's facts read back as Candidates with
positions in the PartitionDay's lines. No database, no network."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from pydantic import ValidationError

from pipeline.memory.model import CATEGORIES, Candidate
from pipeline.summarize import ChatLine, PartitionDay
from pipeline.summarize.facts_out import candidates, messages, numbered, of_users, prepared
from pipeline.summarize.llm import LLMSummarizer
from pipeline.summarize.schemas import DailyOut, FactOut, ForgetOut, SpeakerSummary
from tests.fakes.responders import message_lines

UTC = dt.timezone.utc
DAY = dt.date(2026, 11, 5)
ANA, BO = 1160000000000000001, 1160000000000000002
MIDS = [1190000000000000100 + i for i in range(4)]


def _pd() -> PartitionDay:
    ts = dt.datetime(2026, 11, 5, 9, tzinfo=UTC)
    said = [(ANA, "I'm moving to Lisbon in March."), (BO, "Congrats!"), (ANA, "My favourite game is Celeste."),
            (BO, "I have two cats named Miso and Tofu.")]
    lines = tuple(ChatLine(MIDS[i], uid, {ANA: "Ana", BO: "Bo"}[uid], text, ts + dt.timedelta(minutes=i),
                           channel_id=1170000000000000001)
                  for i, (uid, text) in enumerate(said))
    return PartitionDay("guild:1", DAY, lines, {ANA: "Ana", BO: "Bo"})


# ---------------------------------------------------------------- FactOut

def test_a_summary_without_facts_still_validates():
    out = DailyOut.model_validate_json('{"summaries": [{"speaker": "p1", "summary": "Ana chatted."}]}')
    assert out.summaries[0].facts == []


def test_fact_defaults():
    fact = FactOut.model_validate({"text": "Lives in Lisbon"})
    assert (fact.category, fact.confidence, fact.global_safe, fact.sources, fact.date, fact.key) == (
        "other", 0.0, False, [], None, None)
    assert fact.day is None


@pytest.mark.parametrize("given,expected", [(1.7, 1.0), (-0.2, 0.0), ("0.85", 0.85), ("high", 0.0),
                                            (None, 0.0), (float("nan"), 0.0), (0.5, 0.5)])
def test_confidence_is_clamped_to_0_1(given, expected):
    assert FactOut.model_validate({"text": "x", "confidence": given}).confidence == expected


@pytest.mark.parametrize("given,expected", [("preference", "preference"), ("Identity ", "identity"),
                                            ("skill/work", "skill/work"), ("work", "skill/work"),
                                            ("gossip", "other"), (None, "other"), (3, "other")])
def test_an_unknown_category_is_other(given, expected):
    assert FactOut.model_validate({"text": "x", "category": given}).category == expected
    assert expected in CATEGORIES


def test_sources_keep_only_message_handles():
    fact = FactOut.model_validate({"text": "x", "sources": ["m3", "p1", "m3", " m1 ", 7, "1160000000000000001x",
                                                            True, None, {"id": "m2"}, "m", "mx"]})
    assert fact.sources == ["m3", "m1", "m7"]
    assert FactOut.model_validate({"text": "x", "sources": "m2"}).sources == ["m2"]
    assert FactOut.model_validate({"text": "x", "sources": None}).sources == []


@pytest.mark.parametrize("given,expected", [("2026-11-08", dt.date(2026, 11, 8)), ("2026-11-08T10:00:00Z", dt.date(2026, 11, 8)),
                                            ("next Tuesday", None), ("2026-13-40", None), (20261108, None), (None, None)])
def test_an_invalid_date_is_none(given, expected):
    assert FactOut.model_validate({"text": "x", "date": given}).day == expected


def test_text_is_required_and_a_fact_without_one_is_dropped_not_the_answer():
    with pytest.raises(ValidationError):
        FactOut.model_validate({"text": "  "})
    with pytest.raises(ValidationError):
        FactOut.model_validate({"category": "identity"})
    item = SpeakerSummary.model_validate({"speaker": "p1", "summary": "s", "facts": [
        {"text": ""}, {"category": "plan"}, "Lives in Lisbon", {"text": " Has a cat named Miso ", "key": " Pet "}]})
    assert [(f.text, f.key) for f in item.facts] == [("Has a cat named Miso", "pet")]
    assert SpeakerSummary.model_validate({"speaker": "p1", "summary": "s", "facts": None}).facts == []


def test_global_safe_is_true_only_when_the_answer_says_so():
    assert [FactOut.model_validate({"text": "x", "global_safe": v}).global_safe
            for v in (True, "true", False, None, "yes", 1)] == [True, True, False, False, False, False]


def test_forget_numbers_out_of_range_are_dropped():
    assert ForgetOut.model_validate({"forget": [3, 1, 0, -2, 9, 1]}).positions(3) == [0, 2]
    with pytest.raises(ValidationError):
        ForgetOut.model_validate({"found": True})


# ---------------------------------------------------------------- handles in the prompts

@pytest.fixture
def summarizer(settings):
    return LLMSummarizer(settings, client=None)


def _numbers(prompt: str) -> list[str]:
    return [number for number, _s, _r, _t in message_lines(prompt)]


def test_daily_and_fold_prompts_give_each_message_a_number_never_its_id(summarizer):
    pd = prepared(_pd())
    for prompt in (summarizer._render_daily(pd, pd.lines, None),
                   summarizer._render_fold(pd, pd.lines, {ANA: "Ana: moving."})):
        assert _numbers(prompt) == ["1", "2", "3", "4"]
        assert not re.search(r"\d{15,}", prompt)  # no message, channel or user id
        assert "sources" in prompt and "global_safe" in prompt


def test_a_chunk_keeps_whole_day_positions(summarizer):
    pd = prepared(_pd())
    prompt = summarizer._render_daily(pd, pd.lines[2:], 2)
    assert _numbers(prompt) == ["3", "4"]


def test_numbered_keeps_everything_but_the_message_id():
    pd = _pd()
    out = numbered(pd)
    assert [ln.message_id for ln in out.lines] == [0, 1, 2, 3]
    assert [(ln.user_id, ln.text, ln.ts, ln.channel_id) for ln in out.lines] == [
        (ln.user_id, ln.text, ln.ts, ln.channel_id) for ln in pd.lines]
    (row,) = messages(out.lines[1:2], {ANA: "p1", BO: "p2"})
    assert (row.number, row.speaker, row.text) == (2, "p2", out.lines[1].text)


# ---------------------------------------------------------------- an answer's facts

def _answer(*summaries) -> DailyOut:
    return DailyOut.model_validate_json(json.dumps({"summaries": list(summaries)}))


def test_facts_map_handles_to_positions_and_drop_what_was_not_in_the_request(summarizer):
    pd = prepared(_pd())
    handles = summarizer.handles(pd)  # Ana p1, Bo p2
    answer = _answer(
        {"speaker": "p1", "summary": "Ana moves.", "facts": [
            {"text": "Is moving to Lisbon", "category": "plan", "confidence": 0.9, "sources": ["m1", "m2", "m9"],
             "date": "2027-03-01", "key": "home city"},
            {"text": "Favourite game is Celeste", "category": "preference", "confidence": 0.95,
             "global_safe": True, "sources": ["m3"], "key": "favourite game"}]},
        {"speaker": "p9", "summary": "Mallory.", "facts": [{"text": "Is a spy", "sources": ["m1"]}]},
        {"speaker": "1160000000000000002", "summary": "An id.", "facts": [{"text": "Has cats", "sources": ["m4"]}]})
    got = candidates(answer, handles, pd.lines)
    assert got == [
        Candidate(ANA, "Is moving to Lisbon", "plan", 0.9, False, (0, 1), dt.date(2027, 3, 1), "home city"),
        Candidate(ANA, "Favourite game is Celeste", "preference", 0.95, True, (2,), None, "favourite game")]
    # a chunk of the day: only its own messages are sources, only its writers have facts
    assert candidates(answer, handles, pd.lines[2:]) == [
        Candidate(ANA, "Is moving to Lisbon", "plan", 0.9, False, (), dt.date(2027, 3, 1), "home city"),
        Candidate(ANA, "Favourite game is Celeste", "preference", 0.95, True, (2,), None, "favourite game")]
    assert candidates(answer, handles, pd.lines[1:2]) == []  # Ana wrote nothing there


def test_of_users():
    facts = [Candidate(ANA, "a"), Candidate(BO, "b"), Candidate(ANA, "c")]
    assert of_users(facts, {ANA}) == [facts[0], facts[2]]
