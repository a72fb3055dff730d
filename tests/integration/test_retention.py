"""Retention deletes what aged out, in bounded batches, on both databases; keeps facts."""

from __future__ import annotations

import asyncio
import datetime as dt

import sqlalchemy as sa

from pipeline.ingest import import_files
from pipeline.retention import apply_retention
from pipeline.stages.facts import remember
from tests.conftest import SAMPLE
from tests.helpers import make_context, replay

UTC = dt.timezone.utc


def test_retention_deletes_aged_rows_in_batches_and_keeps_facts(store, settings):
    import_files(store, [SAMPLE], settings)
    replay(store, settings, "2026-11-01", "2026-11-04")
    asyncio.run(remember(make_context(store, settings), "guild:1150000000000000001", 1160000000000000001,
                         "Ana keeps bees."))
    s = settings.model_copy(update={"retention_days": 30})

    # 20 days later only the historical summaries (for day 1 = Nov 4) are past their window
    n_hist = len(store.dump("historical_summaries"))
    deleted = apply_retention(store, s, now=dt.datetime(2026, 11, 24, tzinfo=UTC))
    assert deleted == {"chat_history": 0, "daily_summaries": 0, "partition_days": 0,
                       "historical_summaries": n_hist, "memory_context": 0, "memory_profiles": 0,
                       "procrastinate_jobs": 0, "llm_batch_requests": 0, "chat_requests": 0}
    counts_before = store.table_counts()
    assert counts_before["chat_history"] == 90

    # 40 days later: chat history (Nov 1..4), dailies and stale contexts are gone; facts stay
    deleted = apply_retention(store, s, now=dt.datetime(2026, 12, 6, tzinfo=UTC), batch_size=7)
    after = store.table_counts()
    assert deleted["chat_history"] == 90 and after["chat_history"] == 0
    assert after["daily_summaries"] == 0 and store.dump("partition_days") == []
    assert after["memory_context"] == 0 and after["historical_summaries"] == 0 and after["memory_profiles"] == 0
    assert "Keeps bees" in [r["text"] for r in store.memory_facts(user_ids=[1160000000000000001])]
    assert apply_retention(store, s, now=dt.datetime(2026, 12, 6, tzinfo=UTC)) == dict.fromkeys(deleted, 0)


def test_retention_keeps_recent_rows(store, settings):
    import_files(store, [SAMPLE], settings)
    replay(store, settings, "2026-11-01", "2026-11-04")
    before = {t: store.dump(t) for t in ("daily_summaries", "memory_context")}
    deleted = apply_retention(store, settings, now=dt.datetime(2026, 11, 5, tzinfo=UTC))
    assert deleted["chat_history"] == 0 and deleted["daily_summaries"] == 0 and deleted["memory_context"] == 0
    assert {t: store.dump(t) for t in before} == before


def test_retention_prunes_old_batch_requests_and_handled_chat_requests(store, settings):
    """Batch rows hold chat text: retention prunes them whether batch mode is on or not (here it
    is off, so collect never ran); in-chat requests go once handled and older than retention."""
    old, recent = dt.datetime(2026, 11, 1, tzinfo=UTC), dt.datetime(2026, 12, 5, tzinfo=UTC)
    for key, at in (("left-pending", old), ("fresh", recent)):
        store.record_batch_request(key, "gemini-2.5-flash", {"prompt": "chat text", "system": "", "schema": None,
                                                             "max_output_tokens": 8}, at)
    base = {"channel_id": 1170000000000000001, "user_id": 1160000000000000001, "partition": "guild:1",
            "day": dt.date(2026, 11, 1), "kind": "remember", "text": "Likes tea", "reason": None, "detected_at": old}
    store.record_requests([base | {"message_id": 1, "ts": old}, base | {"message_id": 2, "ts": old}])
    store.claim_request(base["channel_id"], 1, "applied", None, old)  # handled; message 2 still pending
    s = settings.model_copy(update={"retention_days": 30})
    deleted = apply_retention(store, s, now=dt.datetime(2026, 12, 6, tzinfo=UTC))
    assert deleted["llm_batch_requests"] == 1 and deleted["chat_requests"] == 1
    with store.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT request_key FROM llm_batch_requests")).scalars().all() == ["fresh"]
    assert [r["message_id"] for r in store.pending_requests()] == [2]
