"""Exclusion windows: the messages of a user that runs neither summarise nor mine for facts.

A `memory_exclusions` row (user, scope = a partition or "*", kind pause | clear, from_ts,
until_ts; NULL = open) excludes that user's messages in that partition (in every one, for "*")
with from_ts <= ts < until_ts. They are read once per run (`RunContext.exclusions()`) and dropped
where partition-days are built (stages/daily.py `load_partition_days`), before anything else sees
them: the partition-day's input hash changes, so it is recomputed, its summaries (everyone's —
other users' no longer quote the excluded messages) and its facts are made without them.

A window reaches a partition-day only when a run looks at that day: days 1-7, a replay's range,
and the days of the recompute queue (pipeline/store/controls.py). A control that excludes the
past (a clear) queues the partition-days its window covers.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Iterable

from ..store.controls import ANY_PARTITION

Window = tuple[str, dt.datetime | None, dt.datetime | None]  # (scope, from_ts, until_ts)


class Exclusions:
    """Every exclusion window, by user."""

    def __init__(self, rows: Iterable[dict] = ()):
        self.by_user: dict[int, list[Window]] = defaultdict(list)
        for r in rows:
            self.by_user[r["user_id"]].append((r["scope"], r["from_ts"], r["until_ts"]))

    def __bool__(self) -> bool:
        return bool(self.by_user)

    def excludes(self, user_id: int, partition: str, ts: dt.datetime) -> bool:
        return any((scope == ANY_PARTITION or scope == partition)
                   and (start is None or start <= ts) and (end is None or ts < end)
                   for scope, start, end in self.by_user.get(user_id, ()))

    def kept(self, partition: str, messages: list[dict]) -> list[dict]:
        """The messages no window excludes (all of them, in order, when there is no window)."""
        if not self.by_user:
            return messages
        return [m for m in messages if not self.excludes(m["user_id"], partition, m["ts"])]


NONE = Exclusions()


def load_exclusions(store) -> Exclusions:
    return Exclusions(store.exclusions())

