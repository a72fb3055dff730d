"""Group commit of a run with a model (pipeline/stages/writes.py, issue 14): an item that cost a
model call is written at the event loop's next turn together with every other one finished by
then, each item waits for that write before it lets go of its claim, and a failed write reaches
every item that waited for it — or, when none did, the next flush. The rows are those of a run
that writes every item at once (but for the order facts get their ids in)."""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
from collections import Counter

import pytest

from pipeline.errors import StoreError
from pipeline.ingest import import_files
from pipeline.runner import execute
from pipeline.stages.writes import Writer
from pipeline.summarize import ExtractiveSummarizer
from pipeline.testing import InMemoryStageStore, RecordingSummarizer
from tests.conftest import SAMPLE
from tests.helpers import make_context
from tests.unit.test_writes_per_call import _EveryItemAtOnce

UTC = dt.timezone.utc
DAY = dt.date(2026, 11, 4)


class _Batches:
    """store.write_batch recorded (the dailies' days of each call), failing while `down`."""

    def __init__(self):
        self.batches: list[list] = []
        self.down = False

    def write_batch(self, dailies=(), historicals=(), contexts=(), touches=(), **kw) -> Counter:
        if self.down:
            raise StoreError("database error while writing: connection refused")
        self.batches.append([record["day"] for record, _summaries, _now in dailies])
        return Counter()


def _daily(writer: Writer, day: int) -> None:
    writer.daily({"partition": "guild:1", "day": day}, {1: "said"}, None)


def test_items_finished_in_one_turn_share_one_write_and_each_waits_for_it():
    store = _Batches()
    writer = Writer(store, per_call=True)
    seen: dict[int, list] = {}

    async def item(day: int) -> None:
        await asyncio.sleep(0)  # the answers come in together
        before = len(store.batches)
        _daily(writer, day)
        assert len(store.batches) == before  # not yet: the others of this turn join
        await writer.written()
        seen[day] = list(store.batches)  # what was written when this item went on

    async def run() -> None:
        await asyncio.gather(*(item(d) for d in (1, 2, 3)))
        await item(4)  # alone: written alone, as soon as it is done

    asyncio.run(run())
    assert store.batches == [[1, 2, 3], [4]]
    assert seen == {1: [[1, 2, 3]], 2: [[1, 2, 3]], 3: [[1, 2, 3]], 4: [[1, 2, 3], [4]]}


def test_a_flush_in_between_writes_the_group_and_lets_its_items_go():
    store = _Batches()
    writer = Writer(store, per_call=True)

    async def run() -> None:
        _daily(writer, 1)
        writer.flush()  # a stage's own flush (a fold reads the running summaries) before the turn
        await writer.written()
        await asyncio.sleep(0)  # the scheduled write finds nothing left to write
        await asyncio.sleep(0)

    asyncio.run(run())
    assert store.batches == [[1]]


def test_a_failed_group_write_fails_every_item_that_waited_for_it():
    store = _Batches()
    writer = Writer(store, per_call=True)
    store.down = True

    async def item(day: int) -> None:
        _daily(writer, day)
        await writer.written()

    async def run() -> list:
        return await asyncio.gather(item(1), item(2), return_exceptions=True)

    results = asyncio.run(run())
    assert [type(r) for r in results] == [StoreError, StoreError]
    store.down = False
    writer.flush()  # the items that waited raised it already: not raised a second time
    assert store.batches == []  # and what failed is not written as if nothing happened


def test_a_failed_write_that_no_item_waited_for_is_raised_by_the_next_flush():
    store = _Batches()
    writer = Writer(store, per_call=True)
    store.down = True
    reported: list[dict] = []  # what asyncio reports (a future's exception never retrieved, …)

    async def run() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, context: reported.append(context))
        writer.queued_done("guild:1", DAY, None, DAY)  # written at a quiet turn; nobody waits on it
        for _ in range(4):
            await asyncio.sleep(0)

    asyncio.run(run())
    store.down = False
    with pytest.raises(StoreError, match="connection refused") as raised:
        writer.flush()  # never taken for written: the run fails with the cause
    writer.flush()  # raised once
    assert store.batches == []
    del raised  # (its traceback holds the group's future)
    gc.collect()  # the future is gone: had nobody retrieved its error, asyncio would say so now
    assert reported == []


def test_without_an_event_loop_an_item_that_cost_a_call_is_written_at_once():
    store = _Batches()
    writer = Writer(store, per_call=True)
    _daily(writer, 1)
    assert store.batches == [[1]]


class _ClaimLog:
    """A claim that records when it is taken and let go, in the store's call log."""

    def __init__(self, calls: list, name: str):
        self.calls, self.name = calls, name

    def try_acquire(self) -> bool:
        self.calls.append(("claim", {"name": self.name}))
        return True

    def alive(self) -> bool:
        return True

    def release(self) -> None:
        self.calls.append(("release", {"name": self.name}))


class _PostgresLikeClaims(InMemoryStageStore):
    dialect = "postgresql"  # runs share work by claims here (the summarizer is not cheap)

    def lock(self, name: str, *, file_suffix=None, dedicated: bool = False, check_s: float = 10.0):
        return _ClaimLog(self.calls, name)


class _Model(RecordingSummarizer):
    kind = "model"  # not extractive: gemini.concurrency items in flight, as with a model

    def __init__(self, inner):
        super().__init__(inner, cheap=False)
        self.kind = "model"


def test_where_runs_share_work_by_claims_a_claim_goes_only_after_its_item_is_written(settings):
    settings.gemini.concurrency = 4
    store = _PostgresLikeClaims()
    import_files(store, [SAMPLE], settings)
    ctx = make_context(store, settings, now=dt.datetime(2026, 11, 5, 12, tzinfo=UTC),
                       summarizer=_Model(ExtractiveSummarizer(settings.summary)))
    assert ctx.uses_claims and ctx.writer.per_call
    store.calls.clear()
    assert asyncio.run(execute(ctx, "replay", dt.date(2026, 11, 1), DAY)).status == "ok"

    written: set[str] = set()
    groups = []
    for name, args in store.calls:
        if name == "write_batch" and args["dailies"]:
            keys = {f"daily:{record['partition']}:{record['day']}" for record, _s, _n in args["dailies"]}
            written |= keys
            groups.append(len(keys))
        elif name == "release" and args["name"].startswith("daily:"):
            assert args["name"] in written, f"{args['name']} let go before its row was written"
    assert len(written) == ctx.stats.partition_days
    assert max(groups) > 1  # answers that came in together shared a transaction

    reference = InMemoryStageStore()
    import_files(reference, [SAMPLE], settings)
    other = make_context(reference, settings, now=dt.datetime(2026, 11, 5, 12, tzinfo=UTC),
                         summarizer=_Model(ExtractiveSummarizer(settings.summary)))
    other._writer = _EveryItemAtOnce(reference, same_fact=settings.memory.same_fact,
                                     on_facts=other.stats.count_facts)
    assert asyncio.run(execute(other, "replay", dt.date(2026, 11, 1), DAY)).status == "ok"
    for table in ("partition_days", "daily_summaries", "historical_summaries"):
        assert store.tables[table] == reference.tables[table], table
    # A group's facts are inserted in key order (store/derived.py write_batch), so their ids are
    # numbered in another order than one item at a time; the profile and context hashes, which
    # name the facts by id, differ with them. Everything else is the same.
    assert _without(store, "memory_facts", "id") == _without(reference, "memory_facts", "id")
    assert _without(store, "memory_profiles", "input_hash") == _without(reference, "memory_profiles", "input_hash")
    assert _without(store, "memory_context", "input_hash", "inputs") == \
        _without(reference, "memory_context", "input_hash", "inputs")


def _without(store: InMemoryStageStore, table: str, *columns: str) -> list[dict]:
    rows = [{k: v for k, v in row.items() if k not in columns} for row in store.tables[table].values()]
    return sorted(rows, key=repr)
