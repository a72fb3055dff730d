"""The user-controls role of pipeline/testing.py's InMemoryStageStore — exclusion windows, control
actions, the recompute queue, message deletion — with the SQL store's semantics
(pipeline/store/controls.py). A `conn` is accepted and ignored: the in-memory transaction
(`store.transaction()`) already makes a caller's writes all or nothing."""

from __future__ import annotations

import datetime as dt
import itertools

from .calendar import HISTORY_DAYS
from .store.controls import EXCLUSION_KINDS, MESSAGE_KEYS, queue_key, without_sources


def _copy(row: dict) -> dict:
    return {k: list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else v for k, v in row.items()}


class InMemoryControls:
    """Mixed into InMemoryStageStore (which provides tables, _writing, _insert, _update, _select,
    _merge and _bind)."""

    _control_ids = None

    def _next_id(self, table: str) -> int:
        if self._control_ids is None:
            self._control_ids = {"memory_exclusions": itertools.count(1), "control_actions": itertools.count(1)}
        return next(self._control_ids[table])

    # ------------------------------------------------------------------ erased names

    def erased_names(self) -> list[dict]:
        return [_copy(r) for r in self._select("erased_names")]

    def add_erased_names(self, partitions, word_keys, at, *, conn=None) -> int:
        rows = [(p, k) for p in sorted(set(partitions)) for k in sorted(set(word_keys))]
        with self._writing():
            for p, k in rows:
                self.tables["erased_names"][(p, k)] = self._row("erased_names", {"partition": p, "word_key": k,
                                                                                 "erased_at": at})
        return len(rows)

    # ------------------------------------------------------------------ exclusions

    def exclusions(self, user_ids=None) -> list[dict]:
        return [_copy(r) for r in self._select("memory_exclusions", user_id=user_ids)]

    def add_exclusion(self, user_id, scope, kind, from_ts, until_ts, now, *, conn=None) -> int:
        if kind not in EXCLUSION_KINDS:
            raise ValueError(f"unknown exclusion kind {kind!r} (use pause or clear)")
        with self._writing():
            row_id = self._next_id("memory_exclusions")
            self._insert("memory_exclusions", {"id": row_id, "user_id": user_id, "scope": scope, "kind": kind,
                                               "from_ts": from_ts, "until_ts": until_ts, "created_at": now})
            return row_id

    def end_exclusions(self, user_id, scope, kind, until_ts, *, conn=None) -> int:
        with self._writing():
            open_rows = [r for r in self._select("memory_exclusions", user_id=user_id, scope=scope)
                         if r["until_ts"] is None and (kind is None or r["kind"] == kind)]
            for r in open_rows:
                self._update("memory_exclusions", (r["id"],), {"until_ts": until_ts})
            return len(open_rows)

    # ------------------------------------------------------------------ the audit trail

    def record_action(self, action, subject_key, requested_by, scope, at, rows_affected, detail, *, conn=None) -> int:
        with self._writing():
            row_id = self._next_id("control_actions")
            self._insert("control_actions", {"id": row_id, "action": action, "subject_key": subject_key,
                                             "requested_by": requested_by, "scope": scope, "at": at,
                                             "rows_affected": rows_affected, "detail": detail})
            return row_id

    def last_control_id(self) -> int:
        return max((r["id"] for r in self._select("control_actions")), default=0)

    def lock_removals(self, conn) -> None:  # one process, one lock: nothing to wait for
        pass

    def actions(self, subject_key=None) -> list[dict]:
        return [_copy(r) for r in self._select("control_actions", subject_key=subject_key)]

    # ------------------------------------------------------------------ the recompute queue

    def enqueue_days(self, rows, now, *, conn=None) -> int:
        rows = {(r["partition"], r["day"]): {"partition": r["partition"], "day": r["day"], "reason": r["reason"],
                                             "queued_at": now} for r in rows}
        if rows:
            self._merge("recompute_queue", [rows[k] for k in sorted(rows)],
                        lambda _old, new: {"reason": new["reason"], "queued_at": new["queued_at"]})
        return len(rows)

    def queued_days(self) -> list[dict]:
        return [_copy(r) for r in self._select("recompute_queue")]

    def dequeue_days(self, keys, *, conn=None) -> int:
        with self._writing():
            return self._dequeue(keys)

    def _dequeue(self, keys) -> int:
        done = 0
        for partition, day, queued_at in {queue_key(k) for k in keys}:
            row = self.tables["recompute_queue"].get((partition, day))
            if row is not None and (queued_at is None or row["queued_at"] <= self._bind_ts(queued_at)):
                del self.tables["recompute_queue"][(partition, day)]
                done += 1
        return done

    def _bind_ts(self, value: dt.datetime) -> dt.datetime:
        from .testing import _bind  # the module that mixes this in

        return _bind("recompute_queue", "queued_at", value)

    # ------------------------------------------------------------------ messages

    def find_messages(self, keys=(), message_ids=(), *, conn=None) -> list[dict]:
        wanted, ids = set(keys), set(message_ids)
        rows = [r for k, r in self.tables["chat_history"].items() if k in wanted or r["message_id"] in ids]
        return [{k: r[k] for k in MESSAGE_KEYS} for r in sorted(rows, key=lambda r: (r["channel_id"], r["message_id"]))]

    def user_messages(self, user_id, *, partition=None, from_ts=None, until_ts=None, conn=None) -> list[dict]:
        lo = None if from_ts is None else self._bind_ts(from_ts)
        hi = None if until_ts is None else self._bind_ts(until_ts)
        rows = [r for r in self._select("chat_history", user_id=user_id, partition=partition)
                if (lo is None or r["ts"] >= lo) and (hi is None or r["ts"] < hi)]
        rows.sort(key=lambda r: (r["ts"], r["channel_id"], r["message_id"]))
        return [{k: r[k] for k in MESSAGE_KEYS} for r in rows]

    def delete_message_rows(self, keys, *, conn=None) -> int:
        with self._writing():
            return sum(self.tables["chat_history"].pop(k, None) is not None for k in set(keys))

    def prune_batches(self, before) -> int:
        """As drop_batch_requests: none held, none pruned (retention calls it)."""
        return 0

    def drop_batch_requests(self, *, partition_days=None, conn=None) -> int:
        """Batch mode's stored requests (pipeline/store/batches.py). This store never holds any
        (batch mode needs a SQL store and a Gemini client): nothing to drop."""
        return 0

    def drop_fact_sources(self, partitions, sources, *, conn=None) -> dict:
        gone = set(sources)
        if not gone:
            return {}
        with self._writing():
            wanted = set(partitions)
            facts = [r for r in self.tables["memory_facts"].values() if r["partition"] in wanted]
            deleted, updated, counts = without_sources(facts, gone)
            for fact_id in deleted:
                del self.tables["memory_facts"][(fact_id,)]
            for fact_id, kept in sorted(updated.items()):
                self._update("memory_facts", (fact_id,), {"sources": kept})
            return counts

    def drop_chat_requests(self, keys, *, conn=None) -> int:
        """In-chat requests (pipeline/store/requests.py). This store never holds any (it has no
        `record_requests`: pipeline/stages/requests.py notes and applies them on the SQL stores):
        nothing to drop."""
        return 0

    def prune_chat_requests(self, before, batch_size) -> int:
        """As drop_chat_requests: none held, none pruned."""
        return 0

    # ------------------------------------------------------------------ write_batch's part

    def _write_controls(self, dropped_days, queued_done) -> None:
        """Partition-days with no messages left, and recompute-queue entries done (inside
        write_batch's transaction)."""
        for partition, day in dropped_days:
            for table in ("daily_summaries", "partition_days"):
                for key in [k for k, r in self.tables[table].items() if (r["partition"], r["day"]) == (partition, day)]:
                    del self.tables[table][key]
        for partition, day, _queued_at, day1 in queued_done:
            last = day + dt.timedelta(days=HISTORY_DAYS)
            for key in [k for k, r in self.tables["historical_summaries"].items()
                        if r["partition"] == partition and day < r["day"] <= last and r["day"] != day1]:
                del self.tables["historical_summaries"][key]
        self._dequeue([q[:3] for q in queued_done])
