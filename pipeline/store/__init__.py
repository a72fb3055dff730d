"""The storage layer: the only package that runs SQL, one module per role.

- base.py: engine, transactions, the error boundary (driver errors -> StoreError), chunked IN
- ingest.py: messages, members, channels (PostgreSQL COPY)
- derived.py: partition-days, summaries, contexts, batch writes, retention (the stages)
- facts.py: structured facts (ADD / UPDATE / NOOP in one transaction), profiles, forgotten facts
- controls.py: exclusion windows, control actions, the recompute queue, message deletion
- runs.py: pipeline_runs
- scheduler.py: scheduler job state and leader row
- read.py: the bot read path
- search.py: search candidates from the search index, the audience point queries
- locks.py: one Lock protocol (PostgreSQL advisory lock, lock file, null lock)
- quota.py: the LLM quota shared by every process (PostgreSQL; pipeline/llm/shared_limiter.py)
- batches.py: Gemini Batch mode's requests and jobs (pipeline/llm/batch.py)
- queue.py: the job queue of `mempipe worker` (job statuses, a run's report channel; PostgreSQL)

`Store` is all roles on one engine; each role's Protocol names what its callers may use, so a
stage depends on `StageStorage`, not on the whole store (pipeline/testing.py fakes it in memory).
"""

from __future__ import annotations

from typing import Protocol

from .base import StoreBase
from .batches import BatchStorage, BatchStore
from .controls import ControlsStorage, ControlsStore
from .derived import DerivedStorage, DerivedStore
from .facts import FactsStorage, FactsStore
from .ingest import IngestStorage, IngestStore
from .locks import Lock, LockStore, lock_key
from .quota import QuotaStorage, QuotaStore
from .queue import QueueStore
from .read import ReadStorage, ReadStore
from .requests import RequestsStorage, RequestsStore
from .runs import RunsStorage, RunsStore
from .scheduler import SchedulerStorage, SchedulerStore
from .search import SearchStorage, SearchStore
from .users import UsersStore


class LockStorage(Protocol):
    def lock(self, name: str, *, file_suffix: str | None = None, dedicated: bool = False,
             check_s: float = 10.0) -> Lock: ...


class StageStorage(DerivedStorage, FactsStorage, ControlsStorage, RunsStorage, RequestsStorage, LockStorage, Protocol):
    """Everything a run needs: the stages' rows, facts, exclusions and the recompute queue, its
    pipeline_runs row and its locks."""

    safe_url: str


class Store(ReadStore, SearchStore, IngestStore, DerivedStore, FactsStore, ControlsStore, RunsStore, RequestsStore,
            SchedulerStore,
            LockStore, QueueStore, QuotaStore, BatchStore, UsersStore, StoreBase):
    """Every role on one engine (`Store.open(url)`)."""


__all__ = ["Store", "StageStorage", "DerivedStorage", "FactsStorage", "ControlsStorage", "IngestStorage", "RunsStorage",
           "SchedulerStorage", "ReadStorage", "SearchStorage", "LockStorage", "QuotaStorage", "BatchStorage", "Lock", "lock_key"]
