"""`mempipe worker` counts the model quota in the database (gemini.shared_quota) whatever its
config says: a worker started from a config without `[workers] enabled = true` must not count
alone (three of them would send three times the limit)."""

from __future__ import annotations

import asyncio

from pipeline.llm.shared_limiter import shared_quota_wanted
from pipeline.workers.worker import work
from tests.integration.test_worker_runs import pg  # noqa: F401 (the fixture)


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
