"""How long an answer may be, and how long it may take: unset, `gemini.max_output_tokens` is the
model's own limit (Gemini 2.5+ 65,536 tokens, Gemma 3 and others 8,192), and a request expected to
answer N tokens waits `timeout_s` + N / `answer_tokens_per_s` — a chunk of a busy day is a long
answer, which must not time out as a short one would. Through the real google-genai client to the
fake server, which can delay an answer."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from pipeline.config import GeminiSettings, model_output_limit
from pipeline.llm.errors import Transient
from pipeline.llm.gemini import GeminiClient
from pipeline.summarize.base import ChatLine, PartitionDay
from pipeline.summarize.budget import expected_answer
from tests.fakes.gemini_server import FakeGemini, delay
from tests.fakes.responders import canned_answer
from tests.integration.test_gemini import _ask as ask_and_close
from tests.integration.test_gemini import gemini_settings, llm

UTC = dt.timezone.utc


@pytest.mark.parametrize("model, limit", [
    ("gemini-2.5-flash", 65_536), ("models/gemini-2.5-pro", 65_536), ("gemini-2.5-flash-lite", 65_536),
    ("gemini-3-pro-preview", 65_536), ("gemini-2.0-flash", 8_192), ("gemma-3-27b-it", 8_192), ("some-new-model", 8_192),
])
def test_the_output_limit_is_the_models_own_unless_set(model, limit):
    assert model_output_limit(model) == limit
    assert GeminiSettings().output_limit(model) == limit
    assert GeminiSettings(max_output_tokens=2048).output_limit(model) == 2048


def test_the_request_carries_the_models_output_limit(settings):
    with FakeGemini(canned_answer) as server:
        s = gemini_settings(settings, server)
        s.gemini.max_output_tokens = None
        pd = PartitionDay("guild:1", dt.date(2026, 11, 4),
                          (ChatLine(1, 7, "Ana", "I am building a castle. " * 20, dt.datetime(2026, 11, 4, tzinfo=UTC)),),
                          {7: "Ana"})
        ask_and_close(llm(s), "daily", pd)
        (request,) = server.calls()
    assert request.generation_config["maxOutputTokens"] == 65_536


def _ask(server, timeout_s: float, request_timeout_s: float | None) -> str:
    client = GeminiClient("test-key", base_url=server.url, timeout_s=timeout_s)

    async def go():
        try:
            return await client.generate("gemini-2.5-flash", "hi", system=None, json_schema=None,
                                         max_output_tokens=64, timeout_s=request_timeout_s)
        finally:
            await client.aclose()
    return asyncio.run(go()).text


def test_a_request_given_its_own_deadline_waits_that_long():
    with FakeGemini(lambda request: "ok") as server:
        server.script(delay(1.0))
        with pytest.raises(Transient, match="timed out after 0.3s"):
            _ask(server, 0.3, None)
        server.script(delay(1.0))
        assert _ask(server, 0.3, 3.0) == "ok"
        assert server.calls()[-1].body.get("generationConfig", {}).get("maxOutputTokens") == 64


def test_a_long_expected_answer_is_given_the_time_to_be_written(settings):
    lines = tuple(ChatLine(i, 100 + i, f"Member{i}", f"Member {i} plans the harbour stall number {i} for noon.",
                           dt.datetime(2026, 11, 4, 10, i, tzinfo=UTC)) for i in range(40))
    pd = PartitionDay("guild:1", dt.date(2026, 11, 4), lines, {100 + i: f"Member{i}" for i in range(40)})
    with FakeGemini(canned_answer) as server:
        s = gemini_settings(settings, server, timeout_s=0.3, max_attempts=1)
        summarizer = llm(s)
        expected = expected_answer(lines, summarizer.answer_budget()[1])
        assert expected > 500
        # the answer takes 1 s; at the default speed (100 tokens/s) 500+ tokens get 5+ s more
        s.gemini.answer_tokens_per_s = 100
        server.script(delay(1.0))

        async def go(summ):
            try:
                return await summ.daily(pd)
            finally:
                await summ.aclose()
        patient = asyncio.run(go(summarizer))
        assert patient.degraded_reason is None and patient.usage.llm_calls == 1
        # a speed so high that the expected answer adds nothing: the same request times out
        s.gemini.answer_tokens_per_s = 1e9
        server.script(delay(1.0))
        hasty = asyncio.run(go(llm(s)))
        assert hasty.degraded_reason and "timed out" in hasty.degraded_reason
