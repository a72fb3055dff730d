"""A busy day's answer must fit the model's output limit: a daily or fold request never asks for
more speakers' summaries than `gemini.max_output_tokens` holds (pipeline/summarize/budget.py
`speakers_per_answer`). Against the fake Gemini server, which cuts an answer at the request's
maxOutputTokens with finishReason MAX_TOKENS as Gemini does, through the real client."""

from __future__ import annotations

import asyncio
import datetime as dt

from pipeline.ingest import ingest_messages
from pipeline.runner import execute
from pipeline.summarize.budget import speakers_per_answer
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.responders import canned_answer, speakers
from tests.helpers import make_context
from tests.integration.test_gemini import gemini_settings, llm

UTC = dt.timezone.utc
G = 1150000000000000093
PARTITION = f"guild:{G}"
DAY = dt.date(2026, 11, 4)
CROWD = 75  # speakers in one hour: 3 answers' worth at the limit below


def _crowd(n: int, hour: int = 10) -> list[dict]:
    return [{"message_id": 1400000000000093000 + hour * 1000 + i, "guild_id": G, "channel_id": 1170000000000000093,
             "visibility": "public", "user_id": 1160000000000093000 + i, "user_name": f"Member{i}",
             "ts": dt.datetime(2026, 11, 4, hour, i % 60, tzinfo=UTC),
             "text": f"Member {i} shares the plan for the harbour festival stall number {i} at noon."}
            for i in range(n)]


def test_a_day_of_many_speakers_is_asked_in_answers_that_fit_the_output_limit(store, settings):
    with FakeGemini(canned_answer) as server:
        s = gemini_settings(settings, server, max_output_tokens=1500)
        s.refresh.fold_min_chars = 0  # fold every refresh
        cap = speakers_per_answer(1500, s.summary.daily_chars)
        assert 3 * cap <= CROWD
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
    assert len(daily) >= 3 and all(len(speakers(c.prompt_text)) <= cap for c in daily)
    assert folds and all(len(speakers(c.prompt_text)) <= cap for c in folds)
    runs = store.runs(2)
    assert all(r["fallbacks"] == 0 and r["errors"] == 0 for r in runs), runs
    rows = store.partition_days_between(PARTITION, DAY, DAY)[DAY]
    assert not rows["degraded"] and rows["message_count"] == 2 * CROWD
    assert len(store.dailies([DAY], partition=PARTITION)) == CROWD  # every speaker summarised
