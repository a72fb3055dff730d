"""Buffered writes for a run. Each item (a partition-day with its summaries, a historical row,
a context row) is written whole; several items share a transaction so that a nightly run over
every partition is not a hundred thousand tiny commits.

Items are written immediately (one transaction each) when other runs may be working on the same
database (PostgreSQL, claims in use: a buffered item would be invisible to the run waiting on
its claim, which would compute it again) and when each item cost a model call (a crash must not
lose finished calls). Only cheap in-process summarizers batch."""

from __future__ import annotations

import time

FLUSH_ITEMS = 200
FLUSH_AFTER_S = 1.0


class Writer:
    def __init__(self, store, *, immediate: bool):
        self.store = store
        self.immediate = immediate
        self.dailies: list = []
        self.historicals: list = []
        self.contexts: list = []
        self.touches: list = []
        self._since: float | None = None

    def _added(self) -> None:
        if self._since is None:
            self._since = time.monotonic()
        n = len(self.dailies) + len(self.historicals) + len(self.contexts) + len(self.touches)
        if self.immediate or n >= FLUSH_ITEMS or time.monotonic() - self._since >= FLUSH_AFTER_S:
            self.flush()

    def daily(self, record: dict, summaries: dict[int, str], now) -> None:
        self.dailies.append((record, summaries, now))
        self._added()

    def historical(self, row: dict) -> None:
        self.historicals.append(row)
        self._added()

    def context(self, row: dict) -> None:
        self.contexts.append(row)
        self._added()

    def touch(self, scope: str, user_id: int, as_of_day) -> None:
        """A context whose inputs did not change, now valid as of a later day 1."""
        self.touches.append({"scope": scope, "user_id": user_id, "as_of_day": as_of_day})
        self._added()

    def flush(self) -> None:
        if self.dailies or self.historicals or self.contexts or self.touches:
            batch = (self.dailies, self.historicals, self.contexts, self.touches)
            self.dailies, self.historicals, self.contexts, self.touches = [], [], [], []
            self.store.write_batch(*batch)
        self._since = None
