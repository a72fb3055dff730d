"""A busy day's answer must fit the model's output limit: a daily or fold request never asks for
more than `gemini.max_output_tokens` is expected to hold (pipeline/summarize/budget.py
`answer_tokens` per speaker, within `answer_room`), and an answer that still comes back cut short
(finishReason MAX_TOKENS) is not sent again as it was: its piece is asked in two halves. Against
the fake Gemini server, which cuts an answer at the request's maxOutputTokens as Gemini does,
through the real client."""

from __future__ import annotations

import asyncio
import datetime as dt
import json

from pipeline.ingest import ingest_messages
from pipeline.runner import execute
from pipeline.summarize.budget import answer_room, answer_tokens
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.responders import canned_answer, message_lines, speakers
from tests.helpers import make_context
from tests.integration.test_gemini import gemini_settings, llm

UTC = dt.timezone.utc
G = 1150000000000000093
PARTITION = f"guild:{G}"
DAY = dt.date(2026, 11, 4)
CROWD = 75  # speakers in one hour: more than one answer's worth at the limit below
LIMIT = 1500


def _crowd(n: int, hour: int = 10) -> list[dict]:
    return [{"message_id": 1400000000000093000 + hour * 1000 + i, "guild_id": G, "channel_id": 1170000000000000093,
             "visibility": "public", "user_id": 1160000000000093000 + i, "user_name": f"Member{i}",
             "ts": dt.datetime(2026, 11, 4, hour, i % 60, tzinfo=UTC),
             "text": f"Member {i} shares the plan for the harbour festival stall number {i} at noon."}
            for i in range(n)]


def _expected_answer(prompt: str, daily_chars: int) -> int:
    """The output tokens budget.answer_tokens expects for this prompt's speakers."""
    written: dict[str, int] = {}
    for _number, handle, _reply, text in message_lines(prompt):
        written[handle] = written.get(handle, 0) + len(text)
    return sum(answer_tokens(w, daily_chars) for w in written.values())


def test_a_day_of_many_speakers_is_asked_in_answers_that_fit_the_output_limit(store, settings):
    with FakeGemini(canned_answer) as server:
        s = gemini_settings(settings, server, max_output_tokens=LIMIT)
        s.refresh.fold_min_chars = 0  # fold every refresh
        ingest_messages(store, _crowd(CROWD), s)
        ctx = make_context(store, s, now=dt.datetime(2026, 11, 5, 6, tzinfo=UTC), summarizer=llm(s))
        asyncio.run(execute(ctx, "run", None, DAY))
        daily = [c for c in server.calls() if "<messages>" in c.prompt_text]
        # fold: the same rule for a busy hour folded into the running summaries
        ingest_messages(store, _crowd(CROWD, hour=11), s)
        server.reset()
        ctx = make_context(store, s, now=dt.datetime(2026, 11, 4, 11, 59, tzinfo=UTC), summarizer=llm(s))
        asyncio.run(execute(ctx, "refresh", None, None))
        folds = [c for c in server.calls() if "<summaries>" in c.prompt_text]
    room, chars = answer_room(LIMIT), s.summary.daily_chars
    assert sum(_expected_answer(c.prompt_text, chars) for c in daily) > 2 * room  # the day is 3+ answers
    assert len(daily) >= 3 and all(_expected_answer(c.prompt_text, chars) <= room for c in daily)
    # a model fold writes each running summary whole again: daily_chars at least per speaker
    assert folds and all(_expected_answer(c.prompt_text, chars) <= room for c in folds)
    assert all(c.outcome == "ok" for c in daily)  # none cut short
    # the fake's fold answers run past the 40 characters asked (it keeps up to 280 of the running
    # summary): a fold cut short is asked again in halves, never falls back
    runs = store.runs(2)
    assert all(r["fallbacks"] == 0 and r["errors"] == 0 for r in runs), runs
    rows = store.partition_days_between(PARTITION, DAY, DAY)[DAY]
    assert not rows["degraded"] and rows["message_count"] == 2 * CROWD
    assert len(store.dailies([DAY], partition=PARTITION)) == CROWD  # every speaker summarised


def _wordy(extra: int):
    """A model that writes `extra` more characters of summary per speaker than asked."""
    def answer(request) -> str:
        out = json.loads(canned_answer(request))
        for item in out.get("summaries", []):
            item["summary"] += " and" * (extra // 4)
        return json.dumps(out)
    return answer


def test_an_answer_cut_short_is_asked_again_in_halves_not_as_it_was(store, settings):
    # each speaker's summary ~600 characters longer than estimated: a chunk's answer is cut short
    with FakeGemini(_wordy(600)) as server:
        s = gemini_settings(settings, server, max_output_tokens=LIMIT)
        ingest_messages(store, _crowd(CROWD), s)
        ctx = make_context(store, s, now=dt.datetime(2026, 11, 5, 6, tzinfo=UTC), summarizer=llm(s))
        asyncio.run(execute(ctx, "run", None, DAY))
        every = server.calls()
        daily = [c for c in every if "<messages>" in c.prompt_text]
    cut = [c for c in daily if c.outcome == "truncated"]
    assert cut and len(daily) > len(cut)
    prompts = [c.prompt_text for c in daily]
    assert len(set(prompts)) == len(prompts)  # a cut-short request is never sent again as it was
    for c in cut:  # each cut-short piece was asked again as two halves, each with fewer speakers
        handles = {h for h, _n in speakers(c.prompt_text)}
        smaller = [d for d in daily if {h for h, _n in speakers(d.prompt_text)} < handles]
        assert len(smaller) >= 2
    run = store.runs(1)[0]
    assert run["fallbacks"] == 0 and run["errors"] == 0, run
    assert not store.partition_days_between(PARTITION, DAY, DAY)[DAY]["degraded"]
    assert len(store.dailies([DAY], partition=PARTITION)) == CROWD
    # the cut-short answers are billed: the run counts every request's tokens, as the server did
    assert run["llm_calls"] == len(every)
    assert (run["prompt_tokens"], run["output_tokens"]) == (sum(c.prompt_tokens for c in every),
                                                            sum(c.output_tokens for c in every))


def test_an_answer_cut_short_even_for_one_message_falls_back(store, settings):
    # no answer fits, whatever the piece: halves down to single messages (each retried as any bad
    # answer: a model's thoughts count against the limit, another try may be shorter), then the
    # extractive fallback
    crowd = _crowd(6)
    with FakeGemini(_wordy(20_000)) as server:
        s = gemini_settings(settings, server, max_output_tokens=LIMIT)
        ingest_messages(store, crowd, s)
        ctx = make_context(store, s, now=dt.datetime(2026, 11, 5, 6, tzinfo=UTC), summarizer=llm(s))
        asyncio.run(execute(ctx, "run", None, DAY))
        daily = [c for c in server.calls() if "<messages>" in c.prompt_text]
    assert daily and all(c.outcome == "truncated" for c in daily)
    several = [c.prompt_text for c in daily if len(message_lines(c.prompt_text)) > 1]
    assert several and len(set(several)) == len(several) <= len(crowd) - 1  # a binary split: each asked once
    single = [c for c in daily if len(message_lines(c.prompt_text)) == 1]
    assert s.gemini.max_attempts <= len(single) <= len(crowd) * s.gemini.max_attempts
    assert store.runs(1)[0]["fallbacks"] == 1
    assert store.partition_days_between(PARTITION, DAY, DAY)[DAY]["degraded"]
    assert len(store.dailies([DAY], partition=PARTITION)) == len(crowd)  # the extractive summaries
