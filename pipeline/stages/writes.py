"""Buffered writes for a run. Each item (a partition-day with its summaries, a historical row,
a context row) is written whole; several items share a transaction so that a nightly run over
every partition is not a hundred thousand tiny commits.

With a model (`per_call`), an item that cost a model call is written at once: a crash must not
lose finished calls, and where runs share work by claims (PostgreSQL) the run waiting on that
item's claim reads it instead of calling the model again. "At once" is a group commit: the write
runs at the first turn of the event loop that adds no item to it, so the items whose answers came
in together (a batch job's answers, read back in one go; a burst of replies) share one
transaction, and each item waits for it (`written`) before it lets go of its claim and its slot —
so a group holds at most as many items as run at once, and never waits longer than FLUSH_AFTER_S
or FLUSH_ITEMS. An answer that comes alone is written alone, two turns later. (Slice of the large
bench corpus, instant summarizer, per item, SQLite in /dev/shm: 1–2 items a transaction when the
write ran at the next turn, 4 — gemini.concurrency — when it waits for a quiet one; the daily
stage 15.1–16.2 s -> 12.1–13.4 s.)

The items made without a call (a rendered week or context, a copied row, a moved or removed one:
most of a nightly run's) wait for the batch, as every item does with a cheap in-process
summarizer: a crash loses only work that costs nothing to redo, and another run that meets such
an item makes the same row (stages/refresh.py, `Item.free`).

Batches from concurrent runs (PostgreSQL) upsert overlapping rows: the store writes each kind in
key order (store/derived.py write_batch), so two such transactions lock rows in the same order
and never deadlock."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Callable

FLUSH_ITEMS = 200
FLUSH_AFTER_S = 1.0
_KINDS = ("dailies", "historicals", "contexts", "touches", "facts", "profiles", "removals", "drops", "done")


class Writer:
    """`per_call`: an item that cost a model call (`called`, true unless its stage says otherwise)
    at once, the rest batched; otherwise every item batched. `same_fact`: the facts' similarity threshold (pipeline/memory/dedup.py); `on_facts` receives the ADD / UPDATE / NOOP
    counts of each flush (the run's counters). `monotonic`: the clock of FLUSH_AFTER_S. `control_marker`,
    `own_controls` (the run's set, shared): see store.write_batch."""

    def __init__(self, store, *, per_call: bool = False, same_fact: float = 0.85,
                 on_facts: Callable[[Counter], None] | None = None, monotonic: Callable[[], float] = time.monotonic,
                 control_marker: int | None = None, own_controls: set[int] | None = None):
        self.store = store
        self.monotonic = monotonic
        self.per_call = per_call
        self.same_fact = same_fact
        self.on_facts = on_facts
        self.control_marker = control_marker  # the newest control when the run began (RunContext.mark_controls)
        self.own_controls = own_controls if own_controls is not None else set()  # the run's own (in-chat forgets)
        for kind in _KINDS:
            setattr(self, kind, [])
        self.wider: set[str] = set()  # scopes of buffered rows made from beyond their own partition
        self._since: float | None = None
        self._due: asyncio.Future | None = None  # the group commit the buffered called items wait for
        self._waiting = 0  # items waiting for it (`written`)
        self._grown = False  # items joined it during this turn of the event loop
        self._failed: BaseException | None = None  # a commit's error that no item waited for

    def _added(self, called: bool = True) -> None:
        if self._since is None:
            self._since = self.monotonic()
        n = sum(len(getattr(self, kind)) for kind in _KINDS if kind != "facts")
        if n >= FLUSH_ITEMS or self.monotonic() - self._since >= FLUSH_AFTER_S:
            self.flush()
        elif self.per_call and called:
            self._write_soon()

    def _write_soon(self) -> None:
        """Write at the first turn of the event loop that adds no called item (`_write_due`),
        with every item added until then; without a running loop (a synchronous caller), now."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        if self._due is None:
            self._due, self._waiting = loop.create_future(), 0
            loop.call_soon(self._write_due)
        self._grown = True

    def _write_due(self) -> None:
        due, waiting = self._due, self._waiting
        if due is None:
            return  # a flush in between wrote the group
        if self._grown:
            self._grown = False
            asyncio.get_running_loop().call_soon(self._write_due)
            return
        try:
            self.flush()
        except Exception as exc:  # the waiting items raise it (flush set it on `due`); else the next flush
            due.exception()  # (retrieved: asyncio would log it as never retrieved when no item waits)
            if not waiting:
                self._failed = exc

    async def written(self) -> None:
        """Wait until the called items added so far are written (their group commit); raises the
        write's error. Shielded: one waiter's cancellation does not cancel the others' write."""
        if self._due is not None:
            self._waiting += 1
            await asyncio.shield(self._due)

    def daily(self, record: dict, summaries: dict[int, str], now, facts: list[dict] = ()) -> None:
        """A partition-day whole: its summaries and the facts extracted from it, one transaction."""
        self.dailies.append((record, summaries, now))
        self.facts.extend(facts)
        self._added()

    def profile(self, row: dict, *, wider: bool = False) -> None:
        """`wider`: made from partitions other than its scope's own (see `context`)."""
        self.profiles.append(row)
        if wider:
            self.wider.add(row["scope"])
        self._added(called=False)

    def remove(self, kind: str, scope: str, user_id: int) -> None:
        """A context or profile ("context" | "profile") left with no input as of this run."""
        self.removals.append((kind, scope, user_id))
        self._added(called=False)

    def drop_day(self, partition: str, day) -> None:
        """A partition-day with no messages left: its summaries and partition_days row go."""
        self.drops.append((partition, day))
        self._added()

    def queued_done(self, partition: str, day, queued_at, day1) -> None:
        """A day of the recompute queue is done (after its own write): the historical rows as of
        other day 1s that quote it go, and it leaves the queue (store.write_batch)."""
        self.done.append((partition, day, queued_at, day1))
        self._added()

    def historical(self, row: dict, *, called: bool = True) -> None:
        self.historicals.append(row)
        self._added(called)

    def context(self, row: dict, *, profile: dict | None = None, touch_profile: bool = False,
                called: bool = True, wider: bool = False) -> None:
        """A context, with its profile row when that changed (or moved to the context's day 1):
        one item, in one transaction. `wider`: made from partitions other than its scope's own
        (a one-to-one DM's): store.write_batch writes it only if the DM still is one."""
        self.contexts.append(row)
        if wider:
            self.wider.add(row["scope"])
        if profile is not None:
            self.profiles.append(profile)
        elif touch_profile:
            self.touches.append({"scope": row["scope"], "user_id": row["user_id"], "as_of_day": row["as_of_day"]})
        self._added(called)

    def touch(self, scope: str, user_id: int, as_of_day) -> None:
        """A context whose inputs did not change, now valid as of a later day 1."""
        self.touches.append({"scope": scope, "user_id": user_id, "as_of_day": as_of_day})
        self._added(called=False)

    def flush(self) -> None:
        """Write what is buffered, in one transaction. Raises the write's error, or that of a
        group commit that failed since (no waiting item may have seen it): a failed write is never
        taken for a written one."""
        due, self._due = self._due, None
        failed, self._failed = self._failed, None
        try:
            if failed is not None:
                raise failed
            if any(getattr(self, kind) for kind in _KINDS):
                batch = {kind: getattr(self, kind) for kind in _KINDS}
                for kind in _KINDS:
                    setattr(self, kind, [])
                wider, self.wider = sorted(self.wider), set()
                counts = self.store.write_batch(batch["dailies"], batch["historicals"], batch["contexts"],
                                                batch["touches"], facts=batch["facts"], same_fact=self.same_fact,
                                                profiles=batch["profiles"], removals=batch["removals"],
                                                dropped_days=batch["drops"], queued_done=batch["done"],
                                                control_marker=self.control_marker,
                                                own_controls=sorted(self.own_controls), wider=wider)
                if self.on_facts is not None and counts:
                    self.on_facts(counts)
        except BaseException as exc:
            if due is not None and not due.done():
                due.set_exception(exc)
            raise
        finally:
            self._since = None
        if due is not None and not due.done():
            due.set_result(None)
