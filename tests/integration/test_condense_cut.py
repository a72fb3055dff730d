"""[summary] condense = "cut" (the default): a past week or a recent part over its budget is cut
to fit, with no summarizer call; "model" condenses it with one. Both databases (the `store`
fixture); the render itself is tests/unit/test_recent_cut.py."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from pipeline.ingest import ingest_messages
from pipeline.runner import execute
from pipeline.summarize import ExtractiveSummarizer
from pipeline.testing import RecordingSummarizer
from tests.helpers import make_context

UTC = dt.timezone.utc
G = 1150000000000000091
CHANNEL = 1170000000000000091
ANA = 1160000000000000291
PARTITION = f"guild:{G}"
_ids = iter(range(1400000000000091000, 1400000000000092000))
LONG = ("Ana talked about the {n} stage of the harbour mural, mixing ochre and blue, "
        "asking who could lend a ladder, and planning the next session for the weekend.")


def _say(day: int, text: str) -> dict:
    return {"message_id": next(_ids), "guild_id": G, "channel_id": CHANNEL, "visibility": "public",
            "user_id": ANA, "user_name": "Ana", "ts": dt.datetime(2026, 11, day, 15, tzinfo=UTC), "text": text}


def _night(store, settings, day: int):
    ctx = make_context(store, settings, now=dt.datetime(2026, 11, day + 1, 6, tzinfo=UTC),
                       summarizer=RecordingSummarizer(ExtractiveSummarizer(settings.summary), cheap=False))
    asyncio.run(execute(ctx, "run", None, dt.date(2026, 11, day)))
    return ctx


def _busy_week(store, settings) -> None:
    ingest_messages(store, [_say(day, LONG.format(n=n)) for day, n in zip(range(2, 9), ["first", "second", "third",
                                                                                        "fourth", "fifth", "sixth",
                                                                                        "last"])], settings)


def _small(settings, condense: str):
    # a context budget none of these weeks fits whole
    settings.summary = settings.summary.model_copy(update={"daily_chars": 120, "historical_chars": 80,
                                                           "context_chars": 400, "condense": condense})


def test_cut_makes_the_week_and_the_context_without_a_call(store, settings):
    _small(settings, "cut")
    _busy_week(store, settings)
    ctx = _night(store, settings, 8)
    kinds = {c[0] for c in ctx.summarizer.calls}
    assert "historical" not in kinds and "merge" not in kinds and "daily" in kinds
    hist = store.historicals([dt.date(2026, 11, 8)], partition=PARTITION)[0]
    assert hist["source_days"] == 6
    assert 0 < len(hist["summary"]) <= 400 - 120  # within what the context leaves for the week
    for day in range(2, 8):  # every day keeps a dated line
        assert f"2026-11-0{day}: " in hist["summary"]
    context = store.contexts(PARTITION, ANA)[0]
    assert "Today, 2026-11-08: " in context["context"] and "2026-11-07: " in context["context"]
    assert len(context["recent"]) <= 400
    assert ctx.stats.historical_rendered == 1 and ctx.stats.contexts_rendered == 1
    again = _night(store, settings, 8)  # the same night again: nothing to do
    assert again.summarizer.calls == []


def test_model_condenses_what_does_not_fit_and_switching_keeps_the_dailies(store, settings):
    _small(settings, "model")
    _busy_week(store, settings)
    first = _night(store, settings, 8)
    assert [c[0] for c in first.summarizer.calls].count("historical") == 1
    dailies = {r["day"]: r["input_hash"] for r in store.dailies([dt.date(2026, 11, d) for d in range(2, 9)],
                                                                partition=PARTITION)}
    _small(settings, "cut")  # the operator switches: the week and the context are re-made, no call
    second = _night(store, settings, 8)
    assert second.summarizer.calls == []
    assert {r["day"]: r["input_hash"] for r in store.dailies(list(dailies), partition=PARTITION)} == dailies
    hist = store.historicals([dt.date(2026, 11, 8)], partition=PARTITION)[0]
    assert "2026-11-07: " in hist["summary"]  # the cut render, not the model's condensation


@pytest.mark.parametrize("condense", ["cut", "model"])
def test_the_setting_is_read_from_the_config_file(tmp_path, condense):
    from pipeline.config import load_settings
    path = tmp_path / "mempipe.toml"
    path.write_text(f'[summary]\ncondense = "{condense}"\n')
    assert load_settings(path).summary.condense == condense


def test_with_gemini_cut_sends_no_reduce_historical_or_merge_request(store, settings):
    """The model reads each chat message once: a day too big for one request is read in chunks
    and each speaker's partial summaries are cut and joined, not reduced by another request."""
    from tests.fakes.gemini_server import FakeGemini
    from tests.fakes.responders import canned_answer
    from tests.integration.test_gemini import gemini_settings, llm
    with FakeGemini(canned_answer) as server:
        s = gemini_settings(settings, server, input_budget_tokens=900)
        s.summary = s.summary.model_copy(update={"condense": "cut", "daily_chars": 300, "context_chars": 1200})
        busy = [_say(8, f"Message {i}: " + LONG.format(n=f"part {i}")) for i in range(40)]
        ingest_messages(store, [_say(day, LONG.format(n=day)) for day in range(2, 8)] + busy, s)
        ctx = make_context(store, s, now=dt.datetime(2026, 11, 9, 6, tzinfo=UTC), summarizer=llm(s))
        asyncio.run(execute(ctx, "run", None, dt.date(2026, 11, 8)))
        prompts = [c.prompt_text for c in server.calls()]
    chunks = [p for p in prompts if "<messages>" in p and '<day date="2026-11-08">' in p]
    assert len(chunks) > 1  # the busy day was read in parts
    assert not [p for p in prompts if "<partials>" in p or "<person " in p or "<past_week>" in p]
    today = store.dailies([dt.date(2026, 11, 8)], partition=PARTITION)[0]["summary"]
    assert len(today) <= s.summary.daily_chars and "Message 0" in today  # the first part's lead is kept
    assert "2026-11-02: " in store.historicals([dt.date(2026, 11, 8)], partition=PARTITION)[0]["summary"]


def test_with_gemini_cut_a_fold_reads_only_the_new_messages(store, settings):
    """The hourly fold under "cut": the new messages summarised as one more part of the day, a
    line added to each speaker's running summary; the running summaries are not sent."""
    from tests.fakes.gemini_server import FakeGemini
    from tests.fakes.responders import canned_answer, message_lines
    from tests.integration.test_gemini import gemini_settings, llm
    with FakeGemini(canned_answer) as server:
        s = gemini_settings(settings, server)
        s.summary = s.summary.model_copy(update={"condense": "cut", "daily_chars": 300, "context_chars": 1200})
        s.refresh.fold_min_chars = 0  # fold every refresh
        # each longer than daily_chars: the model is asked (a text within it is kept as written)
        morning = [_say(8, LONG.format(n="morning") + " " + LONG.format(n="dawn")) |
                   {"ts": dt.datetime(2026, 11, 8, 9, tzinfo=UTC)}]
        noon = [_say(8, "Later: " + LONG.format(n="noon") + " " + LONG.format(n="lunch")) |
                {"ts": dt.datetime(2026, 11, 8, 12, tzinfo=UTC)}]
        ingest_messages(store, morning, s)
        asyncio.run(execute(make_context(store, s, now=dt.datetime(2026, 11, 8, 9, 30, tzinfo=UTC), summarizer=llm(s)),
                            "refresh", None, None))
        first = store.dailies([dt.date(2026, 11, 8)], partition=PARTITION)[0]["summary"]
        ingest_messages(store, noon, s)
        server.reset()
        asyncio.run(execute(make_context(store, s, now=dt.datetime(2026, 11, 8, 12, 30, tzinfo=UTC), summarizer=llm(s)),
                            "refresh", None, None))
        asked = [c.prompt_text for c in server.calls() if "<messages>" in c.prompt_text]
    assert len(asked) == 1 and "<summaries>" not in asked[0]  # the running summary is not read again
    assert [t for *_x, t in message_lines(asked[0])] == [noon[0]["text"]]  # only the new message
    row = store.partition_days_between(PARTITION, dt.date(2026, 11, 8), dt.date(2026, 11, 8))[dt.date(2026, 11, 8)]
    assert row["message_count"] == 2 and not row["degraded"]
    now = store.dailies([dt.date(2026, 11, 8)], partition=PARTITION)[0]["summary"]
    lines = now.split("\n")
    assert len(lines) == 2 and first.startswith(lines[0].rstrip("…")) and "noon" in lines[1] and len(now) <= 300


def test_with_gemini_cut_a_fold_asks_the_model_once_the_day_outgrows_its_target(store, settings):
    """A piece that fits daily_chars alone is still summarised by the model (facts included) when
    the running summary and it no longer fit together: never a day of cut verbatim quotes."""
    from tests.fakes.gemini_server import FakeGemini
    from tests.fakes.responders import canned_answer, message_lines
    from tests.integration.test_gemini import gemini_settings, llm
    with FakeGemini(canned_answer) as server:
        s = gemini_settings(settings, server)
        s.summary = s.summary.model_copy(update={"condense": "cut", "daily_chars": 300, "context_chars": 1200})
        s.refresh.fold_min_chars = 0
        for hour, n in ((9, "morning"), (12, "noon")):  # each ~165 characters: fits 300 alone, not both
            ingest_messages(store, [_say(8, LONG.format(n=n)) | {"ts": dt.datetime(2026, 11, 8, hour, tzinfo=UTC)}], s)
            server.reset()
            ctx = make_context(store, s, now=dt.datetime(2026, 11, 8, hour, 30, tzinfo=UTC), summarizer=llm(s))
            asyncio.run(execute(ctx, "refresh", None, None))
            asked = [c.prompt_text for c in server.calls() if "<messages>" in c.prompt_text]
            if hour == 9:
                assert asked == []  # the day's text fits its target: kept as written
        assert len(asked) == 1 and [t for *_x, t in message_lines(asked[0])] == [LONG.format(n="noon")]
