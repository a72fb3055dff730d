"""A historical row whose input hash equals that of a stored row as of another day 1 (same
partition and user) is copied, with no summarizer call; any change of its input calls again."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from pipeline.ingest import ingest_messages
from pipeline.runner import execute
from pipeline.stages.facts import forget
from pipeline.summarize import ExtractiveSummarizer
from pipeline.testing import RecordingSummarizer
from tests.helpers import make_context

UTC = dt.timezone.utc
G = 1150000000000000077
CHANNEL = 1170000000000000077
ANA, BO = 1160000000000000201, 1160000000000000202
NAMES = {ANA: "Ana", BO: "Bo"}
PARTITION = f"guild:{G}"
_ids = iter(range(1400000000000077000, 1400000000000078000))


def _say(day: int, uid: int, text: str) -> dict:
    return {"message_id": next(_ids), "guild_id": G, "channel_id": CHANNEL, "visibility": "public",
            "user_id": uid, "user_name": NAMES[uid], "ts": dt.datetime(2026, 11, day, 15, tzinfo=UTC), "text": text}


@pytest.fixture(autouse=True)
def _weeks_exceed_their_room(settings):
    """These tests are about weeks the summarizer condenses: a room for the past week
    (pipeline/stages/recent.py `week_room`) that none of the weeks here fits."""
    settings.summary = settings.summary.model_copy(update={"historical_chars": 40, "context_chars": 100,
                                                           "condense": "model"})


def _night(store, settings, day: int, *, cheap: bool, summary=None):
    """The nightly run as of day 1 = 2026-11-<day>, the next morning."""
    inner = ExtractiveSummarizer(summary or settings.summary)
    ctx = make_context(store, settings, now=dt.datetime(2026, 11, day + 1, 6, tzinfo=UTC),
                       summarizer=RecordingSummarizer(inner, cheap=cheap))
    asyncio.run(execute(ctx, "run", None, dt.date(2026, 11, day)))
    return ctx


def _historical_calls(ctx) -> set[str]:
    return {c[1] for c in ctx.summarizer.calls if c[0] == "historical"}


def _rows(store, day: int) -> dict[int, dict]:
    return {r["user_id"]: r for r in store.historicals([dt.date(2026, 11, day)], partition=PARTITION)}


def _week(store, settings) -> None:
    ingest_messages(store, [
        _say(2, ANA, "I adopted a grey cat called Pixel from the shelter on Monday."),
        _say(2, BO, "Congratulations, Pixel sounds lovely and I want photos."),
        _say(5, BO, "I started training for the autumn half marathon in Lisbon."),
    ], settings)


@pytest.mark.parametrize("cheap", [True, False], ids=["batched", "per-item"])
def test_an_unchanged_historical_input_is_copied_without_a_call(store, settings, cheap):
    _week(store, settings)
    first = _night(store, settings, 5, cheap=cheap)
    assert _historical_calls(first) == {"Ana", "Bo"}
    before = _rows(store, 5)
    ingest_messages(store, [_say(6, BO, "The first long run along the river went better than expected.")], settings)
    second = _night(store, settings, 6, cheap=cheap)
    # Ana's days 2-7 hold the same dated daily (Nov 2) as the night before: copied. Bo's do not
    # (Nov 5 is now in them): computed.
    assert _historical_calls(second) == {"Bo"}
    assert second.stats.historical_reused == 1 and second.stats.historical_computed == 1
    after = _rows(store, 6)
    assert after[ANA]["summary"] == before[ANA]["summary"]
    assert after[ANA]["input_hash"] == before[ANA]["input_hash"]
    assert after[ANA]["source_days"] == 1 and not after[ANA]["degraded"] and after[ANA]["degraded_reason"] is None
    assert after[BO]["input_hash"] != before[BO]["input_hash"]
    run = store.runs(limit=1)[0]
    assert run["summarizer_calls"] == second.stats.summarizer_calls
    assert run["cache_hits"] == second.stats.cache_hits >= 1
    # The same night again: the row as of day 1 itself is fresh, nothing is called or copied.
    third = _night(store, settings, 6, cheap=cheap)
    assert third.summarizer.calls == [] and third.stats.historical_reused == 0


def test_a_new_daily_in_days_2_to_7_calls_again(store, settings):
    _week(store, settings)
    _night(store, settings, 5, cheap=True)
    ingest_messages(store, [_say(6, ANA, "Pixel knocked a plant off the windowsill this morning.")], settings)
    second = _night(store, settings, 6, cheap=True)
    assert "Ana" not in _historical_calls(second)  # Nov 6 is her day 1: her days 2-7 are unchanged
    ingest_messages(store, [_say(7, BO, "Rest day today.")], settings)
    third = _night(store, settings, 7, cheap=True)
    assert "Ana" in _historical_calls(third)  # Nov 6 entered her days 2-7
    assert _rows(store, 7)[ANA]["source_days"] == 2


def test_a_forgotten_fact_calls_again(store, settings):
    _week(store, settings)
    _night(store, settings, 5, cheap=True)
    ctx = make_context(store, settings, now=dt.datetime(2026, 11, 6, 5, tzinfo=UTC))
    assert asyncio.run(forget(ctx, PARTITION, ANA, "grey cat called Pixel"))
    second = _night(store, settings, 6, cheap=True)
    assert _rows(store, 6)[ANA]["input_hash"] != _rows(store, 5)[ANA]["input_hash"]  # made again, not copied
    assert second.stats.historical_reused == 0
    assert "Pixel" not in _rows(store, 6)[ANA]["summary"]


def test_another_summarizer_fingerprint_calls_again(store, settings):
    _week(store, settings)
    _night(store, settings, 5, cheap=False)
    other = settings.summary.model_copy(update={"historical_chars": settings.summary.historical_chars + 40})
    second = _night(store, settings, 6, cheap=False, summary=other)
    assert _historical_calls(second) == {"Ana", "Bo"}
    assert second.stats.historical_reused == 0


def test_a_dry_run_counts_a_copy_as_a_cache_hit_and_writes_nothing(store, settings):
    _week(store, settings)
    _night(store, settings, 5, cheap=True)
    ctx = make_context(store, settings, now=dt.datetime(2026, 11, 7, 6, tzinfo=UTC), dry_run=True)
    asyncio.run(execute(ctx, "run", None, dt.date(2026, 11, 6)))
    assert ctx.stats.historical_reused == 1  # Ana's (Bo's days 2-7 now hold Nov 5: planned)
    assert ctx.summarizer.calls == [] and _rows(store, 6) == {}
