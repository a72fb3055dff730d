"""The facts, profiles and forgotten facts of pipeline/testing.py's InMemoryStageStore, with the
SQL store's semantics (pipeline/store/facts.py): the same ADD / UPDATE / NOOP decisions
(pipeline/memory/dedup.py), the same one-transaction forgetting."""

from __future__ import annotations

import itertools
from collections import Counter

from .memory.dedup import reconcile
from .store.facts import RECONCILED, SCOPED, SCRUBBED, scrub_reach


def _copy(row: dict) -> dict:
    return {k: list(v) if isinstance(v, list) else v for k, v in row.items()}


class InMemoryFacts:
    """Mixed into InMemoryStageStore (which provides tables, _writing, _insert, _update, _select)."""

    _fact_ids = None

    def _next_fact_id(self) -> int:
        if self._fact_ids is None:
            self._fact_ids = itertools.count(1)
        return next(self._fact_ids)

    def _apply_facts(self, rows, same_fact: float) -> Counter:
        rows = list(rows)
        if not rows:
            return Counter()
        users = {r["user_id"] for r in rows}
        # the columns the SQL store reads (store/facts.py RECONCILED): reconcile must need no other
        existing = [{k: v for k, v in _copy(r).items() if k in RECONCILED} for r in self.tables["memory_facts"].values()
                    if r["user_id"] in users and r["status"] == "active"]
        plan = reconcile(existing, rows, same_fact)
        for row in plan.inserts:
            fact_id = self._next_fact_id()
            self._insert("memory_facts", {**{k: v for k, v in row.items() if k != "id"}, "id": fact_id})
        for fact_id, values in sorted(plan.updates.items()):
            self._update("memory_facts", (fact_id,), values)
        return plan.counts

    def memory_facts(self, *, user_ids=None, active_only: bool = False, columns=None) -> list[dict]:
        rows = [r for r in self._select("memory_facts", user_id=user_ids) if not active_only or r["status"] == "active"]
        keep = None if columns is None else {"id", "user_id", *columns}
        return [{k: v for k, v in _copy(r).items() if keep is None or k in keep}
                for r in sorted(rows, key=lambda r: (r["user_id"], r["id"]))]

    def apply_facts(self, rows, same_fact: float) -> Counter:
        with self._writing():
            return self._apply_facts(rows, same_fact)

    def profiles(self, scope=None, user_id=None, *, text: bool = True, user_ids=None) -> list[dict]:
        cols = None if text else ("scope", "user_id", "input_hash", "as_of_day")
        rows = self._select("memory_profiles", scope=scope, user_id=user_id)
        rows = rows if user_ids is None else [r for r in rows if r["user_id"] in user_ids]
        return [{k: r[k] for k in (cols or r)} for r in rows]

    def last_active_days(self, until, user_ids=None) -> dict:
        wanted = None if user_ids is None else set(user_ids)
        out: dict = {}
        for r in self.tables["daily_summaries"].values():
            if r["day"] <= until and (wanted is None or r["user_id"] in wanted):
                key = (r["partition"], r["user_id"])
                out[key] = max(out.get(key, r["day"]), r["day"])
        return out

    def forgotten(self, user_ids=None) -> list[dict]:
        return [{k: r[k] for k in ("scope", "user_id", "fact")} for r in self._select("forgotten_facts", user_id=user_ids)]

    def forget_fact(self, scope, user_id, fact, now, *, delete_ids, scrub, record=None) -> int:
        """Recorded, the fact rows deleted, every text `scrub` reaches scrubbed: one transaction."""
        with self._writing():
            self._insert("forgotten_facts", {"id": next(self._ids["forgotten_facts"]), "scope": scope,
                                              "user_id": user_id, "fact": fact, "created_at": now})
            changed = 0
            for fact_id in sorted(set(delete_ids)):
                row = self.tables["memory_facts"].get((fact_id,))
                if row is not None and row["user_id"] == user_id:
                    del self.tables["memory_facts"][(fact_id,)]
                    changed += 1
            for key, row in list(self.tables["memory_facts"].items()):  # others' stating it (store/facts.py)
                if row["user_id"] != user_id and row["partition"] in set(scrub.partitions) \
                        and scrub({"user_id": row["user_id"], "text": row["text"]}) != row["text"]:
                    del self.tables["memory_facts"][key]
                    changed += 1
            contexts = set(scrub.contexts)
            for table, col, keys in SCRUBBED:
                reach = scrub_reach(table, scrub)
                for key, row in list(self.tables[table.name].items()):
                    if row[keys[0]] not in reach or row[col] is None or (table in SCOPED and key not in contexts):
                        continue
                    if (cleaned := scrub({k: row[k] for k in keys} | {"text": row[col]})) != row[col]:
                        self._update(table.name, key, {col: cleaned})
                        changed += 1
            if record is not None:  # the audit row, in this transaction (store/facts.py)
                record(None, changed)
            return changed

    def _write_memory(self, facts, same_fact, profiles, removals) -> Counter:
        """write_batch's part for facts, profiles and removals (inside its transaction)."""
        if profiles:
            self._upsert("memory_profiles", list(profiles))
        for kind, scope, user_id in removals:
            self.tables["memory_context" if kind == "context" else "memory_profiles"].pop((scope, user_id), None)
        return self._apply_facts(facts, same_fact)
