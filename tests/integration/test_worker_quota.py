"""The limits a `mempipe worker` keeps: it counts the model quota in the database
(gemini.shared_quota) whatever its config says — a worker started from a config without
`[workers] enabled = true` must not count alone (three of them would send three times the
limit) — and its items in flight stay within its slots, as one run's do."""

from __future__ import annotations

import asyncio
import datetime as dt

from pipeline.ingest import import_files
from pipeline.llm.shared_limiter import shared_quota_wanted
from pipeline.runner import execute
from pipeline.summarize import ExtractiveSummarizer
from pipeline.testing import RecordingSummarizer
from pipeline.workers.worker import WorkerRuntime, work
from tests.conftest import SAMPLE
from tests.helpers import make_context
from tests.integration.test_worker_runs import NOW, _with_worker, pg  # noqa: F401 (pg: the fixture)


class _Idle:
    async def aclose(self) -> None:
        pass


def test_a_worker_counts_the_quota_in_the_database_without_workers_enabled(pg, monkeypatch):
    _store, base = pg
    s = base.model_copy(deep=True)
    s.workers.enabled, s.gemini.shared_quota = False, False  # a worker's own config, the runs' switch off
    assert not shared_quota_wanted(s)
    made = []

    def factory(settings):
        made.append(shared_quota_wanted(settings))
        return _Idle()

    monkeypatch.setattr("pipeline.app.make_summarizer", factory)

    async def go():
        stop = asyncio.Event()
        worker = asyncio.ensure_future(work(s, concurrency=1, stop=stop))
        await asyncio.sleep(0.5)
        stop.set()
        await asyncio.wait_for(worker, 30)

    asyncio.run(go())
    assert made == [True]
    assert not s.gemini.shared_quota  # the caller's settings are left as they were


class _Counting(RecordingSummarizer):
    """How many partition-days are summarized at once."""

    def __init__(self, settings):
        super().__init__(ExtractiveSummarizer(settings.summary))
        self.now = self.most = self.days = 0

    async def daily(self, pd):
        self.now, self.days = self.now + 1, self.days + 1
        self.most = max(self.most, self.now)
        try:
            await asyncio.sleep(0.05)
            return await self.inner.daily(pd)
        finally:
            self.now -= 1


def test_a_workers_daily_jobs_stay_within_its_slots_not_its_concurrency(pg):
    """As in one run (runner._run_dailies): the extractive summarizer's one slot, whatever
    --concurrency; with a model, gemini.concurrency (each item in flight may hold a pooled
    connection for its claim)."""
    store, s = pg
    import_files(store, [str(SAMPLE)], s)
    counting = _Counting(s)
    ctx = make_context(store, s, now=NOW)

    async def go():
        run = execute(ctx, "run", None, dt.date(2026, 11, 4))
        return await asyncio.wait_for(_with_worker(s, lambda: run, summarizer=counting, concurrency=4), 60)

    assert asyncio.run(go()).status == "ok"
    assert counting.days >= 14 and counting.most == 1


def test_a_workers_retry_budget_refills_at_a_newer_run_only(settings):
    """One summarizer serves every job of a worker: jobs of two runs interleaving share its retry
    budget (gemini.run_retry_budget); only a newer run's first job refills it."""
    import types

    class _App:
        def __init__(self):
            self.settings = settings

        def run_context(self, *, force, summarizer):
            return types.SimpleNamespace(slot=lambda: asyncio.Semaphore(1), mark_controls=lambda: None)

    summarizer = types.SimpleNamespace(retry_budget=0)
    runtime = WorkerRuntime(_App(), summarizer)
    full = settings.gemini.run_retry_budget
    seen = []
    for run, spent in ((1, 50), (2, 100), (1, 10), (2, 0), (3, 0)):
        runtime.context({"id": run, "kind": "run"}, force=False)
        seen.append(summarizer.retry_budget)
        summarizer.retry_budget -= spent
    assert seen == [full, full, full - 100, full - 110, full]
