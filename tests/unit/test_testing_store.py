"""pipeline/testing.py: the in-memory stage store runs the real pipeline, behaves exactly like the
SQL store (checked against SQLite, step by step), and records the reads and writes a run makes;
RecordingSummarizer forwards what decides how a run writes (`cheap`)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json

import pytest

from pipeline.clock import fixed_clock
from pipeline.errors import InputError, StoreError
from pipeline.ingest import delete_messages, import_files
from pipeline.retention import apply_retention
from pipeline.runner import execute
from pipeline.stages.facts import forget, remember
from pipeline.summarize import ExtractiveSummarizer
from pipeline.testing import InMemoryStageStore, RecordingSummarizer
from tests.conftest import SAMPLE
from tests.helpers import dump_derived, make_context, replay

UTC = dt.timezone.utc
G1 = 1150000000000000001
ANA, BO, CY, EVE, FAY = (1160000000000000001, 1160000000000000002, 1160000000000000003, 1160000000000000009,
                        1160000000000000010)
D = dt.date.fromisoformat
WRITES = {"write_batch", "delete_historicals", "delete_older_than", "apply_facts", "forget_fact",
          "write_messages", "write_members", "write_channels"}


@pytest.fixture
def memory(settings):
    store = InMemoryStageStore()
    import_files(store, [SAMPLE], settings)
    return store


def _row(message_id, user_id, name, text, ts, **extra):
    return {"message_id": str(message_id), "guild_id": str(G1), "channel_id": "1170000000000000010",
            "visibility": "public", "user_id": str(user_id), "user_name": name, "text": text, "ts": ts, **extra}


def _later_input(tmp_path):
    """A second import: a message appended to day 4 (folded), an edit (recomputed), an older edit
    (ignored), an older name (ignored), a channel name (kept), someone who spoke on day 2 only
    (retention later takes their dailies, then their historical row) and a message on 11-05
    (retention keeps it, so the partition is still run)."""
    rows = [
        _row(1190000000000019001, EVE, "Eve", "I just joined and I brought a map of the nether hub.",
             "2026-11-04T16:00:00+00:00", channel_name="general"),
        _row(1190000000000010020, BO, "Bo", "I started learning redstone clocks from a book.",
             "2026-11-02T08:06:00+00:00", edited_ts="2026-11-03T09:00:00+00:00"),
        _row(1190000000000010031, CY, "Cy", "LOL (an older edit)", "2026-11-02T11:32:00+00:00",
             edited_ts="2026-11-02T11:33:00+00:00"),
        _row(1190000000000019002, BO, "Bobby", "Long ago I built a pumpkin farm next to spawn.",
             "2026-11-01T06:00:00+00:00"),
        _row(1190000000000019003, FAY, "Fay", "I am mapping the ocean monument this week.",
             "2026-11-02T10:05:00+00:00"),
        _row(1190000000000019004, EVE, "Eve", "The nether hub map is finished and pinned.",
             "2026-11-05T20:00:00+00:00"),
    ]
    path = tmp_path / "later.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _execute(store, settings, kind, first, last, now, summarizer=None):
    ctx = make_context(store, settings, now=now, summarizer=summarizer)
    return ctx, asyncio.run(execute(ctx, kind, first and D(first), D(last)))


def _snapshot(store) -> dict:
    """Everything a stage can read, plus the derived tables byte for byte."""
    users = [ANA, BO, CY, EVE, FAY, 1160000000000000004, 1160000000000000005]
    parts = [p["partition"] for p in store.partitions_between(dt.datetime(2026, 1, 1, tzinfo=UTC),
                                                              dt.datetime(2027, 1, 1, tzinfo=UTC))]
    messages = {p: store.messages_between(p, dt.datetime(2026, 1, 1, tzinfo=UTC), dt.datetime(2027, 1, 1, tzinfo=UTC))
                for p in parts}
    keys = {(m["channel_id"], m["message_id"]) for ms in messages.values() for m in ms} | {(G1, 1)}
    with store.transaction() as conn:
        stored = store.stored_messages(conn, keys)
    return {
        **dump_derived(store),
        "partitions": parts, "messages": messages, "authors": store.authors_of(keys), "stored": stored,
        "names": store.member_names(), "names_g1": store.member_names(users, [f"guild:{G1}"]),
        "channels": store.channels(), "dm_speakers": store.dm_speaker_counts(),
        "user_partitions": store.partitions_of_users(users),
        "contexts": store.contexts(), "profiles": store.profiles(),
        "facts": store.memory_facts(), "forgotten": store.forgotten(), "runs": store.runs(50),
        "queue": store.queued_days(), "exclusions": store.exclusions(), "actions": store.actions(),
        "found": store.find_messages([(G1, 1), (1170000000000000010, 1190000000000010001)], [1190000000000010003]),
        "user_messages": store.user_messages(BO, partition=f"guild:{G1}", from_ts=dt.datetime(2026, 11, 2, tzinfo=UTC)),
    }


def _scenario(store, settings, later) -> list[tuple]:
    """Import, replay, a later import with a fold and edits, remember/forget, a run as of a later
    day, retention, a run after retention, more retention: for each step (its name, what it
    returned, the summarizer calls it made, the snapshot after it). Nothing is ignored in the
    comparison: the clock is fixed, so created_at / computed_at / made_at agree too."""
    nov5, nov13 = dt.datetime(2026, 11, 5, 12, tzinfo=UTC), dt.datetime(2026, 11, 13, 12, tzinfo=UTC)
    out = []

    def step(name, value, summarizer=None):
        calls = summarizer.calls if summarizer is not None else None
        out.append((name, value, calls, _snapshot(store)))

    step("import", import_files(store, [SAMPLE], settings))
    ctx, result = _execute(store, settings, "replay", "2026-11-01", "2026-11-04", nov5)
    step("replay", (result.status, result.stats), ctx.summarizer)
    # an edit queues its day at the import's time (pipeline/ingest/writer.py): a fixed clock, as for the runs
    step("import later", import_files(store, [later], settings, clock=fixed_clock(nov5)))
    ctx, result = _execute(store, settings, "replay", "2026-11-01", "2026-11-04", nov5)
    step("replay again", (result.status, result.stats), ctx.summarizer)
    ctx = make_context(store, settings, now=nov5)
    found = asyncio.run(remember(ctx, f"guild:{G1}", BO, "Bo bakes bread for the whole server."))
    found = (found, asyncio.run(forget(ctx, f"guild:{G1}", ANA, "shulker shells")))
    step("remember, forget", found, ctx.summarizer)
    # a deleted message (a fact rested on it), a pause ended by a resume, a clear of the past
    deleted = delete_messages(store, [(1170000000000000010, 1190000000000010064), 1190000000000010006, 7],
                              settings, clock=fixed_clock(nov5))
    controls = (store.add_exclusion(CY, f"guild:{G1}", "pause", dt.datetime(2026, 11, 2, tzinfo=UTC), None, nov5),
                store.end_exclusions(CY, f"guild:{G1}", "pause", dt.datetime(2026, 11, 3, tzinfo=UTC)),
                store.add_exclusion(EVE, "*", "clear", None, nov5, nov5),
                store.enqueue_days([{"partition": f"guild:{G1}", "day": D("2026-10-20"), "reason": "clear"}], nov5),
                store.record_action("pause", str(CY), CY, f"guild:{G1}", nov5, 0, {"exclusions": 1}))
    step("delete, exclude", (deleted, controls))
    ctx, result = _execute(store, settings, "run", None, "2026-11-06", nov13)
    step("run as of 11-06", (result.status, result.stats), ctx.summarizer)
    kept = settings.model_copy(update={"retention_days": 8})
    step("retention", apply_retention(store, kept, now=nov13))
    ctx, result = _execute(store, settings, "run", None, "2026-11-06", nov13)
    step("run after retention", (result.status, result.stats), ctx.summarizer)
    step("retention much later", apply_retention(store, kept, now=dt.datetime(2026, 12, 31, tzinfo=UTC)))
    return out


# ---------------------------------------------------------------- the real pipeline, in memory

def test_replay_in_memory_writes_contexts_and_a_second_replay_computes_nothing(memory, settings):
    ctx, result = replay(memory, settings, "2026-11-01", "2026-11-04")
    assert result.status == "ok" and ctx.sharing == "turns"
    # the sample's past weeks fit the room a context leaves them: rendered, no summarizer call
    # (pipeline/stages/recent.py); the contexts that exceed context_chars are cut to fit
    # (summary.condense = "cut", the default): only the dailies call the summarizer
    assert {c[0] for c in ctx.summarizer.calls} == {"daily"}
    assert result.stats.historical_rendered > 0 and memory.historicals([D("2026-11-04")])
    assert result.stats.contexts_rendered == len(memory.contexts())
    contexts = memory.contexts()
    assert contexts and {c["as_of_day"] for c in contexts} == {D("2026-11-04")}
    assert {c["scope"] for c in contexts} >= {f"guild:{G1}", "channel:1170000000000000020", "dm:1170000000000000500"}
    assert memory.runs(1)[0]["summarizer_calls"] == len(ctx.summarizer.calls)

    before = dump_derived(memory)
    ctx2, result2 = replay(memory, settings, "2026-11-01", "2026-11-04")
    assert ctx2.summarizer.calls == [] and result2.stats.summarizer_calls == 0
    assert dump_derived(memory) == before


def test_the_in_memory_store_matches_sqlite_step_by_step(sqlite_store, settings, tmp_path):
    later = _later_input(tmp_path)
    fake = InMemoryStageStore()
    memory = _scenario(fake, settings, later)
    sqlite = _scenario(sqlite_store, settings, later)
    assert [s[0] for s in memory] == [s[0] for s in sqlite]
    for (name, value, calls, snap), (_n, value_sql, calls_sql, snap_sql) in zip(memory, sqlite):
        assert value == value_sql, name
        assert calls == calls_sql, name
        for key in snap:
            assert snap[key] == snap_sql[key], (name, key)
    # The scenario did reach what it is meant to compare: folds, scrubs, touches, deletions.
    steps = {name: (value, calls, snap) for name, value, calls, snap in memory}
    assert ("fold", f"guild:{G1}", D("2026-11-04")) in steps["replay again"][1]
    assert ("daily", f"guild:{G1}", D("2026-11-02")) in steps["replay again"][1]
    msgs = {m["message_id"]: m for m in steps["replay again"][2]["messages"][f"guild:{G1}"]}
    assert msgs[1190000000000010020]["text"] == "I started learning redstone clocks from a book."
    assert msgs[1190000000000010031]["text"] == "lol"
    assert steps["replay again"][2]["names"][(f"guild:{G1}", BO)] == "Bo"
    assert steps["replay again"][2]["channels"][1170000000000000010]["name"] == "general"
    assert steps["remember, forget"][0][1] is True and steps["remember, forget"][2]["forgotten"]
    assert not any("shulker" in r[3].lower() for r in steps["remember, forget"][2]["daily_summaries"] if r[2] == ANA)
    assert all(n > 0 for t, n in steps["retention"][0].items() if t not in ("memory_context", "memory_profiles", "procrastinate_jobs",
                                                                       "llm_batch_requests", "chat_requests"))
    assert steps["retention much later"][0]["memory_context"] > 0
    assert fake.called("delete_historicals")  # users whose dailies retention took lost their historicals
    deleted, _controls = steps["delete, exclude"][0]
    assert deleted["deleted"] == 2 and deleted["facts_deleted"] + deleted["facts_updated"] >= 1
    assert len(steps["delete, exclude"][2]["queue"]) == 3 and steps["run as of 11-06"][2]["queue"] == []
    assert any(b["queued_done"] for b in fake.called("write_batch"))


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_failed_write_leaves_nothing_behind(kind, sqlite_store, settings):
    store = InMemoryStageStore() if kind == "memory" else sqlite_store
    import_files(store, [SAMPLE], settings)
    replay(store, settings, "2026-11-01", "2026-11-04")
    before = dump_derived(store)
    record = {"partition": f"guild:{G1}", "day": D("2026-11-02"), "input_hash": "x", "message_count": 1,
              "user_count": 1, "summarizer": "extractive", "degraded": False, "degraded_reason": None, "attempts": 1}
    naive = dt.datetime(2026, 11, 5, 12)  # not timezone-aware: refused
    with pytest.raises(StoreError):
        store.write_batch([(record, {ANA: "replaced"}, dt.datetime(2026, 11, 5, tzinfo=UTC))],
                          touches=[], historicals=[{**store.historicals([D("2026-11-04")])[0], "created_at": naive}])
    assert dump_derived(store) == before


def test_a_bad_import_writes_nothing(settings, tmp_path):
    # more rows than one batch: the first batch is written before the bad row is read
    rows = [_row(1190000000000100000 + i, ANA, "Ana", f"message {i}", "2026-11-01T10:00:00+00:00") for i in range(5001)]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"message_id": "1", "text": "no audience"}\n',
                   encoding="utf-8")
    store = InMemoryStageStore()
    with pytest.raises(InputError):
        import_files(store, [bad], settings)
    assert len(store.called("write_messages")[0]["rows"]) == 5000
    assert store.tables["chat_history"] == store.tables["members"] == store.tables["channels"] == {}


# ---------------------------------------------------------------- what a run reads and writes

def test_a_second_unchanged_replay_writes_nothing_but_its_run_row(memory, settings):
    replay(memory, settings, "2026-11-01", "2026-11-04")
    memory.calls.clear()
    replay(memory, settings, "2026-11-01", "2026-11-04")
    assert {m for m, _a in memory.calls} & WRITES == set()
    assert [m for m, _a in memory.calls if m in ("start_run", "finish_run")] == ["start_run", "finish_run"]


def test_a_replay_reads_in_bulk_once_per_partition(memory, settings):
    memory.calls.clear()
    ctx, _ = replay(memory, settings, "2026-11-01", "2026-11-04")
    (listed,) = memory.called("partitions_between")
    parts = sorted(p["partition"] for p in memory.partitions_between(listed["start"], listed["end"]))
    assert len(parts) == 5
    # daily stage: each partition's messages read once, for all its days
    assert sorted(a["partition"] for a in memory.called("messages_between")) == parts
    # historical stage: each partition's days 2-7 of day 1 (11-04) read once
    by_partition = [a for a in memory.called("dailies") if a["partition"] is not None]
    assert sorted(a["partition"] for a in by_partition) == parts
    assert {a["days"] for a in by_partition} == {tuple(D("2026-10-29") + dt.timedelta(days=i) for i in range(6))}
    # merges: one bulk read of every user's day-1 rows
    assert [a for a in memory.called("dailies") if a["partition"] is None] == \
        [{"days": (D("2026-11-04"),), "partition": None, "user_ids": None}]
    # cheap summarizer: runs take turns under one run lock, no per-item claims, batched writes
    assert memory.called("lock") == [{"name": "mempipe:run", "file_suffix": "run", "dedicated": False, "check_s": 10.0}]
    batches = memory.called("write_batch")
    assert len(batches) < ctx.stats.daily_computed
    assert sum(len(b["dailies"]) for b in batches) == ctx.stats.daily_computed == 14
    assert sum(len(b["historicals"]) for b in batches) == ctx.stats.historical_computed + ctx.stats.historical_rendered
    assert sum(len(b["contexts"]) for b in batches) == ctx.stats.contexts_written


def test_a_non_cheap_summarizer_writes_each_item_that_cost_a_call_at_once(memory, settings):
    # cheap=False: the write path of a model summarizer (a crash must not lose paid-for calls);
    # the items made without a call (rendered weeks and contexts) wait for the next write
    summarizer = RecordingSummarizer(ExtractiveSummarizer(settings.summary), cheap=False)
    memory.calls.clear()
    ctx, _ = replay(memory, settings, "2026-11-01", "2026-11-04", summarizer=summarizer)
    batches = memory.called("write_batch")
    items = ctx.stats.daily_computed + ctx.stats.historical_computed + ctx.stats.historical_rendered \
        + ctx.stats.contexts_written
    assert sum(len(b[k]) for b in batches for k in ("dailies", "historicals", "contexts")) == items
    assert len(batches) <= len(summarizer.calls) + 4 < items  # a call's item, with what waited; stage flushes


# ---------------------------------------------------------------- RecordingSummarizer forwarding

class _ModelLike:
    """A summarizer that is not cheap and has a client to close and an estimate."""

    kind = "gemini"

    def __init__(self):
        self.closed = False

    def fingerprint(self, operation):
        return "fp-" + operation

    def estimate_daily(self, pd):
        return (2, 300)

    async def aclose(self):
        self.closed = True


class _PostgresLike(InMemoryStageStore):
    dialect = "postgresql"  # RunContext shares work by claims here unless the summarizer is cheap


def test_recording_summarizer_forwards_cheap_and_the_rest(settings):
    extractive = RecordingSummarizer(ExtractiveSummarizer(settings.summary))
    assert extractive.cheap is True and extractive.kind == "extractive"
    assert getattr(extractive, "aclose", None) is None  # the runner closes only what can be closed
    model = RecordingSummarizer(_ModelLike())
    assert model.cheap is False and model.kind == "gemini" and model.fingerprint("daily") == "fp-daily"
    assert model.estimate_daily(None) == (2, 300)
    asyncio.run(model.aclose())
    assert model.inner.closed
    assert RecordingSummarizer(_ModelLike(), cheap=True).cheap is True
    assert RecordingSummarizer(ExtractiveSummarizer(settings.summary), cheap=False).cheap is False

    # What `cheap` decides: how runs on PostgreSQL share work, and whether writes are batched.
    store = _PostgresLike()
    cheap_ctx = make_context(store, settings, summarizer=extractive)
    model_ctx = make_context(store, settings, summarizer=model)
    assert (cheap_ctx.sharing, cheap_ctx.writer.per_call) == ("turns", False)
    assert (model_ctx.sharing, model_ctx.writer.per_call) == ("claims", True)
