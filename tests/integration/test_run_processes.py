"""A cheap run's stages shared out to several processes (pipeline/stages/processes.py): the same
rows and counts as one process, every process really takes part, and a failure in a child fails
the run with its cause."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import os
import threading
import time

import pytest
import sqlalchemy as sa

from pipeline.ingest import import_files
from pipeline.runner import execute
from pipeline.stages.context import RunStats
from pipeline.stages.processes import ProcessFailed, processes_for
from pipeline.store import Store
from pipeline.summarize import ExtractiveSummarizer
from tests.conftest import SAMPLE
from tests.helpers import another_database, dump_derived, make_context

FIRST, LAST = dt.date(2026, 11, 1), dt.date(2026, 11, 5)
COUNTED = tuple(RunStats().columns())  # pipeline_runs' count columns


class PidSummarizer(ExtractiveSummarizer):
    """The extractive summarizer, noting in a file which process made each daily summary; and,
    when told to, failing or dying in every process but the run's own."""

    def __init__(self, lengths, note, *, run_pid: int, fail: str | None = None):
        super().__init__(lengths)
        self.note, self.run_pid, self.fail = note, run_pid, fail

    async def daily(self, partition_day):
        with open(self.note, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")
        if self.fail and os.getpid() != self.run_pid:
            if self.fail == "die":
                os._exit(3)
            raise RuntimeError("the summarizer broke in a child")
        time.sleep(0.05)  # work that holds the process, as a summarizer's CPU does: both get units
        return await super().daily(partition_day)


@pytest.fixture
def second_url(db_kind, tmp_path):
    """Another empty database of the same kind: where the one-process run goes."""
    if db_kind == "sqlite":
        yield f"sqlite:///{tmp_path}/reference.db"
        return
    with another_database() as url:
        yield url


def _run(store, settings, summarizer, progress=None):
    ctx = make_context(store, settings, summarizer=summarizer)
    result = asyncio.run(execute(ctx, "replay", FIRST, LAST, progress=progress))
    return ctx, result


def _facts(store) -> list[tuple]:
    """memory_facts without the id (ids follow the order rows were written in)."""
    with store.reading("test") as conn:
        rows = conn.execute(sa.text("SELECT user_id, partition, level, category, text, fact_key, confidence, event_day,"
                                    " first_seen, last_seen, status FROM memory_facts")).all()
    return sorted(tuple(str(v) for v in r) for r in rows)


def _run_row(store) -> dict:
    return store.runs(1)[0]


def test_two_processes_make_the_rows_and_counts_of_one(store, second_url, settings, tmp_path):
    reference = Store.open(second_url, check_schema=False)
    reference.upgrade()
    try:
        import_files(reference, [SAMPLE], settings)
        import_files(store, [SAMPLE], settings)
        note = tmp_path / "pids"
        one, _ = _run(reference, settings, PidSummarizer(settings.summary, note, run_pid=os.getpid()))
        assert set(note.read_text().split()) == {str(os.getpid())}  # the default: one process
        note.unlink()

        settings.processes = 2
        assert threading.active_count() == 1, f"a thread would keep the run in one process: {threading.enumerate()}"
        seen: list[tuple[int, int]] = []
        two, result = _run(store, settings, PidSummarizer(settings.summary, note, run_pid=os.getpid()),
                           progress=lambda done, total: seen.append((done, total)))
        assert result.status == "ok"
        pids = note.read_text().split()
        assert len(set(pids)) == 2 and str(os.getpid()) in pids  # the run's process and a child both worked

        assert dump_derived(store) == dump_derived(reference)
        assert _facts(store) == _facts(reference) and _facts(store)
        assert dataclasses.asdict(two.stats) == dataclasses.asdict(one.stats)  # a child's counts are the run's
        assert two.stats.contexts_written > 0 and two.stats.facts_added > 0
        ran, ref = _run_row(store), _run_row(reference)
        assert {c: ran[c] for c in COUNTED} == {c: ref[c] for c in COUNTED}  # and so is its row
        # progress counts every item once, a child's too, up to the plan's total
        assert seen[-1][0] == seen[-1][1] and [d for d, _t in seen] == list(range(1, len(seen) + 1))

        # and the next run of two processes finds everything fresh
        settings.processes = 2
        again, _ = _run(store, settings, ExtractiveSummarizer(settings.summary))
        assert again.stats.summarizer_calls == 0 and dump_derived(store) == dump_derived(reference)
    finally:
        reference.close()


@pytest.mark.parametrize("how", ["raise", "die"])
def test_a_failure_in_a_child_fails_the_run_with_its_cause(store, settings, tmp_path, how):
    import_files(store, [SAMPLE], settings)
    settings.processes = 2
    summarizer = PidSummarizer(settings.summary, tmp_path / "pids", run_pid=os.getpid(), fail=how)
    with pytest.raises((RuntimeError, ProcessFailed)) as failed:
        _run(store, settings, summarizer)
    if how == "raise":
        assert "the summarizer broke in a child" in str(failed.value)
    else:
        assert isinstance(failed.value, ProcessFailed) and "status 3" in str(failed.value)
    row = _run_row(store)
    assert row["status"] == "failed" and row["error"]
    # the run's own process went on to the end of its share: what it made is stored
    assert store.dailies([FIRST + dt.timedelta(days=i) for i in range(5)])


def test_which_runs_are_spread(tmp_path, settings):
    path = tmp_path / "spread.db"
    file_store = Store.open(f"sqlite:///{path}", check_schema=False)
    file_store.upgrade()
    memory_store = Store.open("sqlite://", check_schema=False)
    try:
        settings.processes = 3
        cheap = ExtractiveSummarizer(settings.summary)
        assert processes_for(make_context(file_store, settings, summarizer=cheap)) == 3
        assert processes_for(make_context(memory_store, settings, summarizer=cheap)) == 1  # no other process can open it
        assert processes_for(make_context(file_store, settings, summarizer=cheap, dry_run=True)) == 1

        class Model(ExtractiveSummarizer):
            kind, cheap = "gemini", False  # a model's limiter and client are per process
        assert processes_for(make_context(file_store, settings, summarizer=Model(settings.summary))) == 1

        settings.processes = 0
        assert processes_for(make_context(file_store, settings, summarizer=cheap)) == (os.cpu_count() or 1)

        settings.processes = 3
        stop = threading.Event()
        other = threading.Thread(target=stop.wait)
        other.start()
        try:  # a fork would copy this thread's locks, not the thread
            assert processes_for(make_context(file_store, settings, summarizer=cheap)) == 1
        finally:
            stop.set()
            other.join()
    finally:
        file_store.close()
        memory_store.close()
