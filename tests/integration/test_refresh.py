"""The hourly refresh folds only new messages into the running day summary."""

from __future__ import annotations

import asyncio
import datetime as dt

from pipeline.clock import fixed_clock
from pipeline.ingest import ingest_messages
from pipeline.runner import execute
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.responders import canned_answer, message_lines
from tests.helpers import make_context
from tests.integration.test_gemini import gemini_settings, llm

UTC = dt.timezone.utc
G = 1150000000000000042
USERS = {1160000000000000101: "Ana", 1160000000000000102: "Bo", 1160000000000000103: "Cy"}


def _hour_of_messages(hour: int, per_hour: int = 6) -> list[dict]:
    out = []
    for i in range(per_hour):
        uid = list(USERS)[(hour + i) % 3]
        out.append({"message_id": 1400000000000000000 + hour * 100 + i, "guild_id": G,
                    "channel_id": 1170000000000000042, "visibility": "public", "user_id": uid,
                    "user_name": USERS[uid], "ts": dt.datetime(2026, 11, 4, hour, i * 5, tzinfo=UTC),
                    "text": f"At hour {hour} {USERS[uid]} reports progress number {i} on the castle walls."})
    return out


def _refresh(store, settings, hour, summarizer=None):
    ctx = make_context(store, settings, now=dt.datetime(2026, 11, 4, hour, 59, tzinfo=UTC), summarizer=summarizer)
    asyncio.run(execute(ctx, "refresh", None, None))
    return ctx


def test_each_refresh_folds_only_the_new_messages(store, settings):
    calls = []
    for hour in range(8, 14):
        ingest_messages(store, _hour_of_messages(hour), settings)
        ctx = _refresh(store, settings, hour)
        daily = [c for c in ctx.summarizer.calls if c[0] in ("daily", "fold")]
        calls.append(daily)
        assert ctx.stats.daily_computed == 1
    assert calls[0] == [("daily", f"guild:{G}", dt.date(2026, 11, 4))]  # first: the whole (short) day
    assert all(c == [("fold", f"guild:{G}", dt.date(2026, 11, 4))] for c in calls[1:])
    rows = [r for r in store.dump("daily_summaries") if r[0] == f"guild:{G}"]
    assert {r[2] for r in rows} == set(USERS)
    pd = store.partition_days_between(f"guild:{G}", dt.date(2026, 11, 4), dt.date(2026, 11, 4))[dt.date(2026, 11, 4)]
    assert pd["message_count"] == 36 and not pd["degraded"]
    # An unchanged refresh costs nothing.
    ctx = _refresh(store, settings, 13)
    assert ctx.summarizer.calls == []


def test_an_edit_before_the_cursor_recomputes_the_whole_day(store, settings):
    for hour in (8, 9):
        ingest_messages(store, _hour_of_messages(hour), settings)
        _refresh(store, settings, hour)
    edited = _hour_of_messages(8)[0] | {"text": "Ana corrects herself: the walls are finished.",
                                         "edited_ts": dt.datetime(2026, 11, 4, 10, tzinfo=UTC)}
    ingest_messages(store, [edited] + _hour_of_messages(10), settings)
    ctx = _refresh(store, settings, 10)
    assert [c[0] for c in ctx.summarizer.calls if c[0] in ("daily", "fold")] == ["daily"]


def test_live_day_with_gemini_reads_each_message_once(store, settings):
    with FakeGemini(canned_answer) as server:
        s = gemini_settings(settings, server)
        s.refresh.fold_min_chars = 0  # fold mechanics: a fold every hour (the waiting rule: test_fold_waits.py)
        sent = []
        for hour in range(8, 20):
            batch = _hour_of_messages(hour)
            sent.extend(batch)
            ingest_messages(store, batch, settings)
            _refresh(store, s, hour, summarizer=llm(s))
        seen: dict[str, int] = {}
        for req in server.calls():
            if "<messages>" not in req.prompt_text:
                continue
            for _n, _s, _r, text in message_lines(req.prompt_text):
                seen[text] = seen.get(text, 0) + 1
        assert seen == {m["text"]: 1 for m in sent}  # every message went to the model exactly once
        assert any("<summaries>" in r.prompt_text for r in server.calls())  # folded, with the summaries so far
        assert store.runs(1)[0]["fallbacks"] == 0
