"""How a run with a model writes (pipeline/stages/writes.py, issue 14): an item that cost a model
call is written at once — a crash must not lose a paid call — and the items made without one
(rendered weeks and contexts, copies, moves, removals) wait for the batch, as every item does
with a cheap summarizer — also where runs share work by claims (PostgreSQL), where an item made
without a call takes no claim (stages/refresh.py `Item.free`). Either way the run makes the same
rows as when every item is written at once."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections import Counter


from pipeline.ingest import import_files
from pipeline.runner import execute
from pipeline.stages.writes import FLUSH_AFTER_S, Writer
from pipeline.summarize import ExtractiveSummarizer
from pipeline.testing import InMemoryStageStore, RecordingSummarizer
from tests.conftest import SAMPLE
from tests.unit.test_testing_store import _PostgresLike
from tests.helpers import make_context

UTC = dt.timezone.utc
DAY = dt.date(2026, 11, 4)


class _Batches:
    """The one write entry point the Writer uses (store.write_batch), recorded: item counts per call."""

    def __init__(self):
        self.batches: list[dict[str, int]] = []

    def write_batch(self, dailies=(), historicals=(), contexts=(), touches=(), **kw) -> Counter:
        sizes = {"dailies": len(dailies), "historicals": len(historicals), "contexts": len(contexts),
                 "touches": len(touches)} | {k: len(v) for k, v in kw.items() if isinstance(v, (list, tuple))}
        self.batches.append({k: n for k, n in sizes.items() if n})
        return Counter()


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _context(user_id: int) -> dict:
    return {"scope": "guild:1", "user_id": user_id, "as_of_day": DAY}


def test_with_a_model_an_item_made_without_a_call_waits_and_one_that_cost_a_call_is_written_at_once():
    store, clock = _Batches(), _Clock()
    writer = Writer(store, per_call=True, monotonic=clock)
    writer.context(_context(1), called=False)
    writer.context(_context(2), touch_profile=True, called=False)
    writer.historical({"partition": "guild:1", "user_id": 1, "day": DAY}, called=False)
    writer.touch("guild:1", 3, DAY)
    writer.profile({"scope": "guild:1", "user_id": 4})
    writer.remove("context", "guild:1", 5)
    assert store.batches == []  # nothing that cost a call: nothing lost if the run dies now
    writer.context(_context(6), called=True)  # a model's answer: written now, with what waited
    assert store.batches == [{"contexts": 3, "historicals": 1, "touches": 2, "profiles": 1, "removals": 1}]
    writer.historical({"partition": "guild:1", "user_id": 7, "day": DAY})  # a stage that does not say: at once
    writer.daily({"partition": "guild:1", "day": DAY}, {7: "said"}, None)
    assert store.batches[1:] == [{"historicals": 1}, {"dailies": 1}]

    writer.context(_context(8), called=False)
    clock.now += FLUSH_AFTER_S  # what waits is written within FLUSH_AFTER_S, call or not
    writer.touch("guild:1", 9, DAY)
    assert store.batches[3:] == [{"contexts": 1, "touches": 1}]


def test_a_cheap_summarizer_batches_everything():
    store = _Batches()
    writer = Writer(store, per_call=False, monotonic=_Clock())
    writer.context(_context(1), called=True)
    writer.daily({"partition": "guild:1", "day": DAY}, {1: "said"}, None)
    assert store.batches == []
    writer.flush()
    assert store.batches == [{"contexts": 1, "dailies": 1}]


class _EveryItemAtOnce(Writer):
    """The reference: one transaction per item, the simplest way to write a run."""

    def _added(self, called: bool = True) -> None:
        self.flush()


def _replay(settings, *, every_item_at_once: bool):
    """A replay with a model-like summarizer (not cheap), its writes per call or (the reference)
    every item at once."""
    store = InMemoryStageStore()
    import_files(store, [SAMPLE], settings)
    summarizer = RecordingSummarizer(ExtractiveSummarizer(settings.summary), cheap=False)
    ctx = make_context(store, settings, now=dt.datetime(2026, 11, 5, 12, tzinfo=UTC), summarizer=summarizer)
    if every_item_at_once:
        ctx._writer = _EveryItemAtOnce(store, same_fact=settings.memory.same_fact, on_facts=ctx.stats.count_facts)
    assert asyncio.run(execute(ctx, "replay", dt.date(2026, 11, 1), DAY)).status == "ok"
    return store, ctx


def test_a_run_with_a_model_writes_per_call_and_makes_the_same_rows_as_when_every_item_is_written_at_once(settings):
    per_call, ctx = _replay(settings, every_item_at_once=False)
    at_once, other = _replay(settings, every_item_at_once=True)
    assert ctx.writer.per_call and ctx.sharing == "turns"  # no claims here: runs take turns
    for table in ("partition_days", "daily_summaries", "historical_summaries", "memory_context", "memory_profiles",
                  "memory_facts"):
        assert per_call.tables[table] == at_once.tables[table], table
    assert per_call.tables["memory_context"] and ctx.stats.columns() == other.stats.columns()

    writes = per_call.called("write_batch")
    calls = len(ctx.summarizer.calls)
    items = ctx.stats.partition_days + ctx.stats.historical_items + ctx.stats.contexts_written
    # one transaction per model call (its item, with what waited), plus the stages' own flushes
    assert len(writes) <= calls + 4 < items == len(at_once.called("write_batch"))
    assert max(len(w["contexts"]) for w in writes) > 1  # contexts rendered without a call share one


def test_where_runs_share_work_by_claims_only_items_that_call_the_model_are_claimed(settings):
    """A replay with a model-like summarizer where runs share work by claims: the partition-days
    (each a model call) are claimed and read again under the claim; the rendered weeks and
    contexts (under condense = "cut", none calls the model) take no claim and wait for the
    batch. The rows are those of a run that writes every item at once."""
    store = _PostgresLike()
    import_files(store, [SAMPLE], settings)
    summarizer = RecordingSummarizer(ExtractiveSummarizer(settings.summary), cheap=False)
    ctx = make_context(store, settings, now=dt.datetime(2026, 11, 5, 12, tzinfo=UTC), summarizer=summarizer)
    assert ctx.uses_claims and ctx.writer.per_call
    store.calls.clear()
    assert asyncio.run(execute(ctx, "replay", dt.date(2026, 11, 1), DAY)).status == "ok"
    claimed = [args["name"].split(":")[0] for name, args in store.calls if name == "lock" and args["name"] != "mempipe:run"]
    assert ctx.stats.historical_rendered and ctx.stats.contexts_rendered  # there were free items
    assert set(claimed) == {"daily"} and len(claimed) == ctx.stats.partition_days
    writes = [args for name, args in store.calls if name == "write_batch"]
    assert any(len(w["contexts"]) > 1 for w in writes)  # batched, not one transaction per context
    reference, _ = _replay(settings, every_item_at_once=True)
    for table in ("partition_days", "daily_summaries", "historical_summaries", "memory_context", "memory_profiles",
                  "memory_facts"):
        assert store.tables[table] == reference.tables[table], table
