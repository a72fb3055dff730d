"""What a batch answer costs and what happens to one that cannot be used (gemini.batch;
pipeline/llm/batch.py), through the real client and the fake server's Batch API: its cost is the
interactive price × gemini.batch_price_factor (and a dry run's estimate too); bad JSON is asked
again in a later job; a blocked answer is asked again interactively."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
import sqlalchemy as sa

from pipeline.config import ModelPrice
from pipeline.llm.errors import LLMError
from pipeline.runner import execute
from pipeline.store import Store
from pipeline.summarize.llm import REASK
from tests.fakes.gemini_server import FakeGemini, blocked, malformed
from tests.fakes.responders import canned_answer
from tests.helpers import make_context
from tests.integration.test_batch_mode import FIRST, LAST, batch_settings, chat, finish_the_night, night
from tests.integration.test_gemini import llm

UTC = dt.timezone.utc

PRICE = ModelPrice(input_per_million=300.0, output_per_million=2500.0)  # large: costs well above rounding


@pytest.fixture
def server():
    with FakeGemini(canned_answer) as s:
        yield s


def priced(settings, server, *, batch: bool, factor: float = 0.5):
    s = batch_settings(settings, server, batch_price_factor=factor)
    s.gemini.batch = batch
    s.gemini.prices = {"gemini-2.5-flash": PRICE}
    return s


def total_cost(store) -> float:
    return sum(r["estimated_cost"] for r in store.runs(100) if not r["dry_run"])


def test_batch_answers_cost_the_interactive_price_times_the_factor(store, settings, server, tmp_path):
    reference = Store.open(f"sqlite:///{tmp_path}/interactive.db", check_schema=False)
    reference.upgrade()
    try:
        interactive = priced(settings, server, batch=False)
        chat(reference, interactive)
        night(reference, interactive)
        full = total_cost(reference)
    finally:
        reference.close()
    assert full > 0
    s = priced(settings, server, batch=True, factor=0.4)
    chat(store, s)
    night(store, s)
    finish_the_night(store, s, server)
    # each answer counted once, when the item it made was written: the same tokens, 0.4 of the price
    assert total_cost(store) == pytest.approx(0.4 * full, rel=1e-6)


def test_a_dry_run_estimates_the_input_at_batch_prices(store, settings, server):
    costs = {}
    for batch in (False, True):
        s = priced(settings, server, batch=batch)
        if not batch:
            chat(store, s)
        ctx = make_context(store, s, summarizer=llm(s), dry_run=True)
        result = asyncio.run(execute(ctx, "replay", dt.date.fromisoformat(FIRST), dt.date.fromisoformat(LAST)))
        costs[batch] = store.run(result.run_id)["estimated_cost"]
    assert costs[False] > 0 and costs[True] == pytest.approx(0.5 * costs[False])
    assert server.requests == []  # a dry run sends nothing, batch or not


def test_bad_json_from_a_batch_is_asked_again_in_a_later_job(store, settings, server):
    s = batch_settings(settings, server)
    chat(store, s)
    night(store, s)
    server.script(malformed())  # the first inline answer of the first job
    finish_the_night(store, s, server)
    reasked = [r for r in server.calls("inline") if r.prompt_text.endswith(REASK.strip())]
    assert len(reasked) == 1
    assert server.calls("generateContent") == []
    runs = store.runs(100)
    assert all(r["errors"] == 0 and r["fallbacks"] == 0 for r in runs)


def test_a_blocked_batch_answer_is_asked_again_interactively(store, settings, server):
    s = batch_settings(settings, server)
    chat(store, s)
    night(store, s)
    server.script(blocked())
    finish_the_night(store, s, server)
    first_inline = server.calls("inline")[0]
    again = server.calls("generateContent")
    assert [r.prompt_text for r in again] == [first_inline.prompt_text]  # the same request, once, interactively
    assert all(r["errors"] == 0 and r["fallbacks"] == 0 for r in store.runs(100))



def test_a_job_the_server_refuses_fails_the_run_and_its_requests_stay_pending(store, settings):
    with FakeGemini(canned_answer, api_key="another-key") as refusing:
        s = batch_settings(settings, refusing)
        chat(store, s)
        ctx = make_context(store, s, summarizer=llm(s))
        with pytest.raises(LLMError, match="submitting a batch job of .* requests: 400 INVALID_ARGUMENT"):
            asyncio.run(execute(ctx, "replay", dt.date.fromisoformat(FIRST), dt.date.fromisoformat(LAST)))
    run = store.runs(1)[0]
    assert run["status"] == "failed" and "submitting a batch job" in run["error"] and run["deferred"] > 0
    assert "another-key" not in run["error"] and "test-key" not in run["error"]
    with store.engine.connect() as conn:
        states = set(conn.execute(sa.text("SELECT state FROM llm_batch_requests")).scalars())
    assert states == {"pending"}  # the next run submits them
