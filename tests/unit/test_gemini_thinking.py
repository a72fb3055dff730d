"""gemini.thinking_budget reaches the request body (through the real google-genai client to the
fake server): thinking tokens are billed as output and count against max_output_tokens, so
summaries are asked for without them; models that cannot take the setting never get it."""

from __future__ import annotations

import asyncio

import pytest

from pipeline.config import load_settings
from pipeline.llm.gemini import PRO_MIN_THINKING, GeminiClient
from pipeline.summarize import make_summarizer
from tests.fakes.gemini_server import FakeGemini


def _sent_thinking(model: str, budget: int | None) -> dict | None:
    with FakeGemini(lambda request: "ok", gemma_strict=True) as server:
        client = GeminiClient("test-key", base_url=server.url, timeout_s=5, thinking_budget=budget)

        async def ask():
            try:
                return await client.generate(model, "hi", system=None, json_schema=None, max_output_tokens=64)
            finally:
                await client.aclose()
        assert asyncio.run(ask()).text == "ok"
        (request,) = server.calls()
    sent = request.generation_config.get("thinkingConfig") or request.generation_config.get("thinking_config")
    # google-genai 3.x writes the inner field as `thinking_budget`; the API's JSON parser takes
    # either spelling (proto3 JSON), so the test reads both
    return None if sent is None else {"thinkingBudget": sent.get("thinkingBudget", sent.get("thinking_budget"))}


@pytest.mark.parametrize("model, budget, sent", [
    ("gemini-2.5-flash", 0, {"thinkingBudget": 0}),
    ("gemini-2.5-flash-lite", 512, {"thinkingBudget": 512}),
    ("gemini-2.5-flash", -1, {"thinkingBudget": -1}),           # the API's "model decides"
    ("gemini-2.5-pro", 0, {"thinkingBudget": PRO_MIN_THINKING}),  # Pro cannot turn it off
    ("models/gemini-2.5-pro", -1, {"thinkingBudget": -1}),
    ("gemini-2.0-flash", 0, None),                              # no thinking: the field is rejected
    ("gemma-3-27b-it", 0, None),
    ("gemini-2.5-flash", None, None),
])
def test_thinking_budget_in_the_request(model, budget, sent):
    assert _sent_thinking(model, budget) == sent


def test_the_configured_summarizer_sends_no_thinking_by_default(monkeypatch):
    settings = load_settings()
    assert settings.gemini.thinking_budget == 0 and settings.gemini.max_output_tokens is None
    settings.summarizer = "gemini"
    summarizer = make_summarizer(settings, environ={"GEMINI_API_KEY": "test-key"})
    try:
        assert summarizer.client.thinking_budget == 0
    finally:
        asyncio.run(summarizer.aclose())
