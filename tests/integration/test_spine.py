"""The spine's acceptance checks, on every database the suite runs against."""

from __future__ import annotations

import asyncio
import datetime as dt
import json

import pytest
import sqlalchemy as sa

from pipeline.ingest import import_files, ingest_messages
from pipeline.read import get_context
from pipeline.stages.facts import forget, remember
from tests.conftest import SAMPLE
from tests.helpers import dump_derived, make_context, replay

G1 = 1150000000000000001
MODS = 1170000000000000020
DM_ANA = 1170000000000000500
ANA, BO = 1160000000000000001, 1160000000000000002


def _latest_run(store):
    return store.runs(1)[0]


def test_second_import_and_replay_change_nothing(store, settings):
    import_files(store, [SAMPLE], settings)
    first_count = store.count_messages()
    import_files(store, [SAMPLE], settings)
    assert store.count_messages() == first_count == 90

    ctx, _ = replay(store, settings, "2026-11-01", "2026-11-04")
    run1 = _latest_run(store)
    assert run1["status"] == "ok" and run1["summarizer_calls"] > 0
    assert run1["summarizer_calls"] == len(ctx.summarizer.calls)
    before = dump_derived(store)
    assert all(before.values())

    ctx2, _ = replay(store, settings, "2026-11-01", "2026-11-04", now=dt.datetime(2026, 11, 6, tzinfo=dt.timezone.utc))
    run2 = _latest_run(store)
    assert run2["summarizer_calls"] == 0 and ctx2.summarizer.calls == []
    made_free = ctx.stats.historical_rendered + ctx.stats.contexts_rendered + _profile_only_contexts(store)
    assert run2["cache_hits"] == run1["summarizer_calls"] + run1["cache_hits"] + made_free
    assert dump_derived(store) == before


def _profile_only_contexts(store):
    # contexts written without a call besides the rendered ones (stages/recent.py): a profile and
    # "Last active" only; each is a cache hit on the second run
    calls_free = 0
    for row in store.contexts():
        inputs = row["inputs"] if isinstance(row["inputs"], dict) else json.loads(row["inputs"])
        calls_free += not inputs["day1"] and not inputs["historical"]
    return calls_free


def test_editing_one_message_recomputes_only_what_depends_on_it(store, settings):
    import_files(store, [SAMPLE], settings)
    replay(store, settings, "2026-11-01", "2026-11-04")
    before = dump_derived(store)

    # Bo's "lol"-style edit: change one message of guild 1 on 2026-11-02.
    with store.engine.connect() as conn:
        msg = conn.execute(sa.text(
            "SELECT message_id, guild_id, channel_id, user_id, ts FROM chat_history "
            "WHERE partition = :p AND user_id = :u ORDER BY ts LIMIT 1 OFFSET 4"),
            {"p": f"guild:{G1}", "u": BO}).one()
    ts = store.messages_between(f"guild:{G1}", dt.datetime(2026, 11, 2, tzinfo=dt.timezone.utc),
                                dt.datetime(2026, 11, 3, tzinfo=dt.timezone.utc))
    target = [m for m in ts if m["user_id"] == BO][0]
    ingest_messages(store, [{
        "message_id": target["message_id"], "guild_id": G1, "channel_id": 1170000000000000010,
        "visibility": "public", "user_id": BO, "user_name": "Bo",
        "text": "Edited: my iron farm now produces 900 ingots per hour after the rebuild.",
        "ts": target["ts"], "edited_ts": target["ts"] + dt.timedelta(minutes=5),
    }], settings)
    assert msg is not None

    ctx, _ = replay(store, settings, "2026-11-01", "2026-11-04")
    dailies = [c for c in ctx.summarizer.calls if c[0] == "daily"]
    assert dailies == [("daily", f"guild:{G1}", dt.date(2026, 11, 2))]
    # Day 2 is inside days 2-7 of 2026-11-04: historical summaries of that partition's users
    # who spoke on 11-02 are redone, and only contexts that read them.
    after = dump_derived(store)
    changed_days = {(r[0], r[1]) for r in set(after["daily_summaries"]) ^ set(before["daily_summaries"])}
    assert changed_days == {(f"guild:{G1}", dt.date(2026, 11, 2))}
    changed_hist = {(r[0], r[1]) for r in set(after["historical_summaries"]) ^ set(before["historical_summaries"])}
    assert changed_hist and all(p == f"guild:{G1}" for p, _u in changed_hist)
    assert {u for _p, u in changed_hist} == {BO}  # only Bo's text changed; others' summaries are identical
    changed_ctx = {(r[0], r[1]) for r in set(after["memory_context"]) ^ set(before["memory_context"])}
    assert changed_ctx
    # Bo's contexts that read guild:G1 (guild scope, the mods channel, his DM) — nobody else's.
    assert {u for _s, u in changed_ctx} == {BO}
    assert {s for s, _u in changed_ctx} <= {f"guild:{G1}", f"channel:{MODS}", "dm:1170000000000000501"}
    # Bo's week fits its room: his historical row is made again as dated lines, without a call
    assert [c for c in ctx.summarizer.calls if c[0] == "historical"] == [] and ctx.stats.historical_rendered == 1


def test_canaries_never_leave_their_partition(store, settings):
    import_files(store, [SAMPLE], settings)
    replay(store, settings, "2026-11-01", "2026-11-04")
    rows = store.contexts()
    assert rows
    guild_rows = [r for r in rows if r["scope"].startswith("guild:")]
    assert guild_rows
    for r in guild_rows:
        assert "CANARYRESTRICTED" not in r["context"], r
        assert "CANARYDM" not in r["context"], r
    for r in rows:
        if "CANARYDM" in r["context"]:
            assert (r["scope"], r["user_id"]) == (f"dm:{DM_ANA}", ANA)
        if "CANARYRESTRICTED" in r["context"]:
            assert r["scope"] == f"channel:{MODS}"
    # Canaries do reach where they belong (the test would pass vacuously otherwise).
    assert "CANARYDM" in get_context(f"dm:{DM_ANA}", ANA, store=store).text
    assert any("CANARYRESTRICTED" in r["context"] for r in rows if r["scope"] == f"channel:{MODS}")
    # And no derived row of a guild partition holds them.
    for table in ("daily_summaries", "historical_summaries"):
        for row in store.dump(table):
            if row[0].startswith("guild:"):
                assert "CANARY" not in " ".join(map(str, row))


def test_group_dm_gets_no_cross_partition_rows(store, settings):
    import_files(store, [SAMPLE], settings)
    group = 1170000000000000777
    ingest_messages(store, [
        {"message_id": 1199000000000000001 + i, "guild_id": None, "channel_id": group, "visibility": "dm",
         "user_id": uid, "user_name": name, "text": f"{name} is planning the group trip to the lake.",
         "ts": dt.datetime(2026, 11, 4, 10, i, tzinfo=dt.timezone.utc), "is_group": True}
        for i, (uid, name) in enumerate(((ANA, "Ana"), (BO, "Bo")))
    ], settings)
    replay(store, settings, "2026-11-01", "2026-11-04")
    for uid in (ANA, BO):
        ctx = get_context(f"dm:{group}", uid, store=store)
        assert ctx is not None
        assert "storage system" not in ctx.text and "CANARY" not in ctx.text  # no guild or other-DM text


def test_returned_ids_not_among_speakers_are_dropped(store, settings):
    import_files(store, [SAMPLE], settings)

    class Inventing:
        def __init__(self, inner):
            self.inner, self.kind = inner, inner.kind

        def fingerprint(self, op):
            return self.inner.fingerprint(op)

        async def daily(self, pd):
            out = await self.inner.daily(pd)
            out.value[424242] = "Someone who never spoke was here."
            return out

        def __getattr__(self, name):
            return getattr(self.inner, name)

    from pipeline.summarize import ExtractiveSummarizer
    ctx, _ = replay(store, settings, "2026-11-04", "2026-11-04",
                    summarizer=Inventing(ExtractiveSummarizer(settings.summary)))
    assert _latest_run(store)["dropped_user_ids"] == ctx.stats.partition_days
    assert not [r for r in store.dump("daily_summaries") if r[2] == 424242]


def test_remember_and_forget_reach_contexts_and_summaries(store, settings):
    import_files(store, [SAMPLE], settings)
    replay(store, settings, "2026-11-01", "2026-11-04")
    ctx = make_context(store, settings)
    stored = asyncio.run(remember(ctx, f"guild:{G1}", ANA, "Ana is studying statistics at university"))
    assert stored == "Is studying statistics at university"  # third person, without the name
    assert "studying statistics" in get_context(f"guild:{G1}", ANA, store=store).text
    assert any(r["text"] == stored and r["origin"] == "manual" for r in store.memory_facts(user_ids=[ANA]))

    found = asyncio.run(forget(ctx, f"guild:{G1}", ANA, "storage system"))
    assert found
    for scope in (f"guild:{G1}", f"dm:{DM_ANA}"):
        assert "storage system" not in get_context(scope, ANA, store=store).text
    for table in ("daily_summaries", "historical_summaries"):
        for row in store.dump(table):
            if ANA in row:
                assert "storage system" not in " ".join(map(str, row))
    # A later replay that recomputes from chat history keeps it out too.
    replay(store, settings, "2026-11-01", "2026-11-04", force=True)
    assert not [r for r in store.dump("daily_summaries") if r[2] == ANA and "storage system" in r[3]]
    assert "storage system" not in get_context(f"guild:{G1}", ANA, store=store).text
    assert not [r for r in store.memory_facts(user_ids=[ANA]) if "storage system" in r["text"]]
    # Forget of something never said: reported as not found.
    assert not asyncio.run(forget(ctx, f"guild:{G1}", ANA, "collects vintage typewriters"))


def test_replay_of_an_older_range_never_overwrites_newer_contexts(store, settings):
    import_files(store, [SAMPLE], settings)
    replay(store, settings, "2026-11-01", "2026-11-04")
    before = store.contexts()
    replay(store, settings, "2026-11-01", "2026-11-02")
    assert [(r["scope"], r["user_id"], r["context"], r["as_of_day"]) for r in store.contexts()] == \
           [(r["scope"], r["user_id"], r["context"], r["as_of_day"]) for r in before]


def test_dry_run_writes_nothing_and_counts_calls(store, settings):
    import_files(store, [SAMPLE], settings)
    ctx, result = replay(store, settings, "2026-11-01", "2026-11-04", dry_run=True)
    assert result.plan["daily_calls"] == result.plan["partition_days"] == 14
    assert ctx.summarizer.calls == []
    assert all(not rows for rows in dump_derived(store).values())
    ctx, result = replay(store, settings, "2026-11-01", "2026-11-04")
    assert len([c for c in ctx.summarizer.calls if c[0] == "daily"]) == 14


def test_a_failed_run_records_why(store, settings):
    import_files(store, [SAMPLE], settings)

    class Broken:
        kind = "broken"

        def fingerprint(self, op):
            return "broken"

        async def daily(self, pd):
            raise RuntimeError("model endpoint exploded")

    with pytest.raises(RuntimeError):
        replay(store, settings, "2026-11-04", "2026-11-04", summarizer=Broken())
    run = store.runs(1)[0]
    assert run["status"] == "failed" and "model endpoint exploded" in run["error"]
    assert run["finished_at"] is not None


def test_an_outage_raises_instead_of_reading_as_no_memory(store, settings):
    from pipeline.errors import StoreError

    import_files(store, [SAMPLE], settings)
    replay(store, settings, "2026-11-04", "2026-11-04")
    assert get_context(f"guild:{G1}", ANA, store=store) is not None
    assert get_context(f"guild:{G1}", 42, store=store) is None  # no memory: None
    with store.engine.begin() as conn:
        conn.execute(sa.text("ALTER TABLE memory_context RENAME TO memory_context_gone"))
    with pytest.raises(StoreError, match="reading a context"):
        get_context(f"guild:{G1}", ANA, store=store)
    with store.engine.begin() as conn:
        conn.execute(sa.text("ALTER TABLE memory_context_gone RENAME TO memory_context"))
    assert get_context(f"guild:{G1}", ANA, store=store) is not None  # and it recovers
