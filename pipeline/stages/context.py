"""What every stage gets: the store, the summarizer, settings, a clock, the run's counters, and
how this run shares work with others on the same database (decided once, here)."""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass, field, make_dataclass
from zoneinfo import ZoneInfo

from ..clock import Clock, system_clock
from ..config import Settings
from ..db.tables import BATCH_COUNTS, FACT_COUNTS, ITEM_COUNTS, REQUEST_COUNTS, WAIT_COUNTS
from ..store import Lock, StageStorage
from ..store.locks import NullLock
from ..summarize import Summarizer
from ..summarize.base import Outcome


# Counts persisted as pipeline_runs columns, then counts only the CLI reports.
PERSISTED_COUNTS = ("partition_days", "summarizer_calls", "prompt_tokens", "output_tokens", "cache_hits",
                    "fallbacks", "errors", "dropped_user_ids", "llm_calls", "retries", "estimated_cost")
PERSISTED_COUNTS += FACT_COUNTS
# Persisted under another name: a pass-through reason (sql/migrations/0010_run_counts.sql).
# historical_reused: copied by input hash, no call (also a cache hit); historical_rendered,
# contexts_rendered: fitted their budget and were rendered without a call (stages/recent.py).
RENAMED = {"passed_week_rendered": "historical_rendered", "passed_recent_rendered": "contexts_rendered",
           "passed_reused": "historical_reused"}
PERSISTED_COUNTS += tuple(RENAMED.get(c, c) for c in ITEM_COUNTS)
# deferred: items waiting for a batch job's answer (gemini.batch; sql/migrations/0012_llm_batches)
PERSISTED_COUNTS += BATCH_COUNTS
# in-chat memory requests (sql/migrations/0013_chat_requests; pipeline/stages/requests.py)
PERSISTED_COUNTS += REQUEST_COUNTS
# today's folds that waited for more new messages (sql/migrations/0014_fold_waits; stages/daily.py)
PERSISTED_COUNTS += WAIT_COUNTS
REPORTED_COUNTS = ("daily_computed", "daily_folded",  # daily_folded: of which only new messages were read
                   "historical_computed",
                   "merges_kept",  # a same-day refresh kept the stored recent part: no material change (a cache hit)
                   "contexts_written",
                   "contexts_stale")  # made as of a later day: a replay of an older range leaves them alone


class _Counting:
    def record(self, outcome: Outcome) -> None:
        self.summarizer_calls += outcome.usage.calls
        self.prompt_tokens += outcome.usage.prompt_tokens
        self.output_tokens += outcome.usage.output_tokens
        self.fallbacks += outcome.usage.fallbacks
        self.llm_calls += outcome.usage.llm_calls
        self.retries += outcome.usage.retries
        self.estimated_cost += outcome.usage.cost
        self.dropped_user_ids += outcome.dropped_user_ids

    def count_facts(self, counts) -> None:
        """ADD / UPDATE / NOOP counts of stored facts (pipeline/memory/dedup.py)."""
        self.facts_added += counts.get("added", 0)
        self.facts_updated += counts.get("updated", 0)
        self.facts_unchanged += counts.get("unchanged", 0)

    def reject_fact(self, reason: str) -> None:
        """A proposed fact that failed a rule (pipeline/memory/validate.py REASONS)."""
        name = f"facts_rejected_{reason}"
        setattr(self, name, getattr(self, name) + 1)

    def columns(self) -> dict[str, int]:
        """The pipeline_runs columns (a few stats are stored under their pass-through reason's name)."""
        out = {k: getattr(self, k) for k in PERSISTED_COUNTS}
        for column, stat in RENAMED.items():
            out[column] = out.pop(stat)
        return out


# A dataclass of zeroed counters, each named once (above).
RunStats = make_dataclass("RunStats", [(n, float, field(default=0.0)) if n == "estimated_cost" else (n, int, field(default=0))
                                       for n in PERSISTED_COUNTS + REPORTED_COUNTS], bases=(_Counting,))


@dataclass
class RunContext:
    store: StageStorage
    summarizer: Summarizer
    settings: Settings
    clock: Clock = system_clock
    stats: RunStats = field(default_factory=RunStats)
    force: bool = False
    dry_run: bool = False
    run_kind: str = "run"  # set by the runner: "refresh" lets the merge stage keep an immaterially changed context
    run_id: int | None = None  # set by the runner: its pipeline_runs row (workers add their counts to it)
    # partition-days folded in this run -> the input hash of the row they were folded from (stages/recent.py)
    folds: dict = field(default_factory=dict)
    spread_peak_kb: int = 0  # the highest peak RSS of a process a stage was shared out to (stages/processes.py)
    control_marker: int | None = None  # the newest control when the run began (mark_controls); None: not checked
    own_controls: set = field(default_factory=set)  # controls this run recorded itself (an in-chat forget)
    _gate: asyncio.Semaphore | None = field(default=None, repr=False)
    _writer: object | None = field(default=None, repr=False)
    _forgetting: object | None = field(default=None, repr=False)
    _exclusions: object | None = field(default=None, repr=False)
    _erased: object | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # How runs on one database share work, chosen once:
        # - "claims": PostgreSQL with a model. Expensive items are shared item by item under
        #   advisory-lock claims (two runs together make one run's model calls).
        # - "turns": cheap in-process summarizers, and SQLite (one writer anyway). Runs take
        #   turns under one run lock, and a second run finds the work done.
        # - "none": a dry run writes nothing and needs no lock.
        if self.dry_run:
            self.sharing = "none"
        elif self.store.dialect == "postgresql" and not self.cheap:
            self.sharing = "claims"
        else:
            self.sharing = "turns"

    @property
    def uses_claims(self) -> bool:
        return self.sharing == "claims"

    def run_lock(self) -> Lock:
        """The lock runs take turns under (a NullLock where they share by claims or write nothing)."""
        if self.sharing != "turns":
            return NullLock()
        return self.store.lock("mempipe:run", file_suffix="run")

    def claim_lock(self, key: str) -> Lock:
        """One item's claim ("daily:guild:1:2026-11-01"): an advisory lock where runs share by
        claims, otherwise a NullLock (the run lock already keeps other runs out)."""
        return self.store.lock(key) if self.uses_claims else NullLock()

    @property
    def writer(self):
        """Buffered writes (see stages/writes.py). With a model, each item that cost a call is
        written at once — a crash then loses at most the items in flight and work that costs no
        call, never a finished call; a run waiting on its claim reads it — and the rest is batched,
        claims or not (an item made without a call takes no claim: stages/refresh.py)."""
        if self._writer is None:
            from .writes import Writer

            self._writer = Writer(self.store, per_call=not self.cheap, control_marker=self.control_marker,
                                  own_controls=self.own_controls,
                                  same_fact=self.settings.memory.same_fact, on_facts=self.stats.count_facts)
        return self._writer

    def mark_controls(self) -> None:
        """Before a run (or a worker's job) reads anything: remember the newest control, so that
        its writes stop (ErasedDuringRun, RemovedDuringRun) if a user is erased, a fact forgotten
        or a scope cleared meanwhile — it may have read what that removed — and
        its facts are checked against the messages still stored after a deletion
        (store/controls.py refuse_after_removal)."""
        if not self.dry_run:
            self.control_marker = self.store.last_control_id()
            if self._writer is not None:
                self._writer.control_marker = self.control_marker

    @property
    def cheap(self) -> bool:
        """An in-process summarizer (extractive): a result costs nothing to recompute."""
        return bool(getattr(self.summarizer, "cheap", False))

    def forgetting(self):
        """Forgotten facts and where each applies (stages/forgetting.py), read once per run (the
        table is small; facts commands that add to it run their own merges)."""
        if self._forgetting is None:
            from .forgetting import load_forgetting  # it reads through merge, which imports this module

            self._forgetting = load_forgetting(self.store)
        return self._forgetting

    def exclusions(self):
        """The exclusion windows (stages/exclusions.py): messages the daily stage leaves out,
        read once per run."""
        if self._exclusions is None:
            from .exclusions import load_exclusions

            self._exclusions = load_exclusions(self.store)
        return self._exclusions

    def erased(self):
        """Erased users' name words (stages/erased.py), read once per run."""
        if self._erased is None:
            from .erased import load_erased_names

            self._erased = load_erased_names(self.store)
        return self._erased

    def forget_cache(self) -> None:
        self._forgetting = None

    def slot(self) -> asyncio.Semaphore:
        """Bounds the items in flight (partition-days, historical rows, merges): the model's
        concurrency for an LLM summarizer, one at a time for the extractive one. Each item in
        flight may hold one pooled connection (its claim), so the pool must be larger."""
        if self._gate is None:
            n = self.settings.gemini.concurrency if self.summarizer.kind != "extractive" else 1
            self._gate = asyncio.Semaphore(n)
        return self._gate

    def is_fresh(self, row: dict | None, key: str) -> bool:
        """A stored row is up to date: same input hash, no --force, not a fallback due a retry."""
        return row is not None and row["input_hash"] == key and not self.force and not self.retry_degraded(row)

    def retry_degraded(self, row: dict | None) -> bool:
        """A row a fallback produced is retried by later runs, a bounded number of times, and only
        when a model is configured (the extractive summarizer would produce the same text)."""
        if row is None or not row.get("degraded") or self.summarizer.kind == "extractive":
            return False
        if str(row.get("degraded_reason") or "").startswith("built from"):
            return False  # its own call was fine; it follows its inputs' hashes
        return row.get("attempts", 1) <= self.settings.gemini.degraded_retry_budget

    def tz_for_guild(self, guild_id: int | None) -> ZoneInfo:
        return self.settings.timezones.for_guild(guild_id)

    def now(self) -> dt.datetime:
        return self.clock()
