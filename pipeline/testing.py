"""Test doubles shipped with the package, for our tests and for code built on mempipe.

- RecordingSummarizer: wraps a summarizer and records every operation it is asked for.
- InMemoryStageStore: StageStorage (plus the importer's needs) in dicts, with the SQL store's semantics,
  recording every call for a unit test's asserts (`store.called("write_batch")`); checked against SQLite
  by tests/unit/test_testing_store.py.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import json
import re
import types
from collections import Counter, defaultdict
from typing import Any, Callable, Iterable, Iterator

import sqlalchemy as sa

from .db.tables import metadata
from .db.types import UtcDateTime
from .errors import StoreError
from .memory.audience import is_one_to_one, narrowed_dm
from .store.controls import DELETION, still_sourced, stop_for
from .store.base import hashable  # the real store's dump rendering
from .store.derived import CONTEXT_STATE, RETENTION_KEYS
from .testing_controls import InMemoryControls
from .testing_facts import InMemoryFacts
from .testing_ingest import InMemoryIngest
from .testing_records import _out, _recorded
from .store.locks import Lock, NullLock
from .store.runs import ZERO_COUNTS

UTC = dt.timezone.utc


# ---------------------------------------------------------------------------------- summarizer

def _recording(operation: str, describe: Callable[..., tuple]):
    """A summarizer method that records (operation, *describe(arguments)), then asks the inner."""
    async def method(self, *args, **kwargs):
        self.calls.append((operation, *describe(*args, **kwargs)))
        return await getattr(self.inner, operation)(*args, **kwargs)
    method.__name__ = operation
    return method


class RecordingSummarizer:
    """The wrapped summarizer, recording each operation as ("daily", partition, day), ("fold", partition,
    day), ("historical", name), ("merge", name) or ("forget", fact). Forwards `kind`,
    `cheap` (it decides how a run writes and shares work: RunContext; `cheap=` overrides it for a test of
    the other path) and, via __getattr__, whatever else the inner has (aclose, estimate_daily)."""

    def __init__(self, inner, *, cheap: bool | None = None):
        self.inner = inner
        self.kind = inner.kind
        self.cheap = bool(getattr(inner, "cheap", False)) if cheap is None else cheap
        self.calls: list[tuple] = []

    def __getattr__(self, name: str):  # fingerprint, aclose, estimate_*: whatever the inner has
        if name == "inner":  # not set yet (copy, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    daily = _recording("daily", lambda pd: (pd.partition, pd.day))
    fold = _recording("fold", lambda new, previous: (new.partition, new.day))
    historical = _recording("historical", lambda name, dailies: (name,))
    merge = _recording("merge", lambda name, day1, historical: (name,))
    forget = _recording("forget", lambda facts, fact, subject="": (fact,))


# ---------------------------------------------------------------------------------- store

_TABLES = {t.name: t for t in metadata.sorted_tables}
_KEYS = {name: tuple(c.name for c in t.primary_key.columns) for name, t in _TABLES.items()}
def _bind(table: str, column: str, value: Any) -> Any:
    """A value as the database would store and return it; a bad one fails as a StoreError
    (where the SQL store's bind processors fail as a driver error)."""
    if value is None:
        return None
    col = _TABLES[table].c[column]
    if isinstance(col.type, UtcDateTime):
        if not isinstance(value, dt.datetime) or value.tzinfo is None:
            raise StoreError(f"timestamps must be timezone-aware datetimes, got {column}={value!r}")
        return value.astimezone(UTC)
    if isinstance(col.type, sa.Boolean):
        return bool(value)
    if isinstance(col.type, sa.JSON):
        return json.loads(json.dumps(value))  # stored as JSON: tuples come back as lists
    return value


def _known(table: str, values: dict) -> None:
    if unknown := set(values) - set(_TABLES[table].c.keys()):
        raise StoreError(f"{table} has no column {', '.join(sorted(unknown))}")


_CONNECTION = types.SimpleNamespace(dialect=types.SimpleNamespace(name="memory"))  # the importer only hands it back


class InMemoryStageStore(InMemoryIngest, InMemoryFacts, InMemoryControls):
    """StageStorage and IngestStorage in memory. `calls` holds (method, {argument: value}) for every
    storage call, in order; `called(name)` the arguments of one method's calls."""

    dialect = "memory"
    safe_url = "memory://"

    def __init__(self) -> None:
        self.tables: dict[str, dict[tuple, dict]] = {name: {} for name in _TABLES}
        self.calls: list[tuple[str, dict]] = []
        self._ids = {"forgotten_facts": itertools.count(1), "pipeline_runs": itertools.count(1)}

    def called(self, name: str) -> list[dict]:
        return [args for method, args in self.calls if method == name]

    def _row(self, table: str, values: dict) -> dict:
        """A new row: every column in table order, server defaults, NOT NULL enforced."""
        _known(table, values)
        row = {}
        for col in _TABLES[table].columns:
            default = None if col.server_default is None else col.type.python_type(col.server_default.arg)
            row[col.name] = _bind(table, col.name, values[col.name]) if col.name in values else default
            if row[col.name] is None and not col.nullable:
                raise StoreError(f"NOT NULL constraint failed: {table}.{col.name}")
        return row

    def _key(self, table: str, row: dict) -> tuple:
        return tuple(_bind(table, k, row[k]) for k in _KEYS[table])

    def _insert(self, table: str, values: dict) -> None:
        row = self._row(table, values)
        if (key := self._key(table, row)) in self.tables[table]:
            raise StoreError(f"UNIQUE constraint failed: {table} {key}")
        self.tables[table][key] = row

    def _update(self, table: str, key: tuple, values: dict) -> None:
        _known(table, values)
        old = self.tables[table][key]
        self.tables[table][key] = new = {**old, **{k: _bind(table, k, v) for k, v in values.items()}}
        if table == "channels" and narrowed_dm(old, new):  # as migration 0025's trigger
            for derived in ("memory_context", "memory_profiles"):
                for k in [k for k in self.tables[derived] if k[0] == new["partition"]]:
                    del self.tables[derived][k]

    def _merge(self, table: str, rows: Iterable[dict], changes: Callable[[dict, dict], dict | None]) -> None:
        """INSERT … ON CONFLICT (key) DO UPDATE SET changes(stored row, new row), one transaction."""
        with self._writing():
            for values in rows:
                key = self._key(table, values)
                if (old := self.tables[table].get(key)) is None:
                    self._insert(table, values)
                elif update := changes(old, self._row(table, values)):
                    self._update(table, key, update)

    def _upsert(self, table: str, rows: list[dict]) -> None:
        """Every non-key column of the first row is replaced (as DerivedStore._upsert)."""
        changed = [k for k in rows[0] if k not in _KEYS[table]]
        self._merge(table, rows, lambda _old, new: {k: new[k] for k in changed})

    def _select(self, table: str, **filters) -> list[dict]:
        """Rows in key order. Filters: None is none, a tuple (ids, as _recorded makes them) IN, else =."""
        def keep(r: dict) -> bool:
            return all(v is None or (r[k] in v if isinstance(v, tuple) else r[k] == v) for k, v in filters.items())
        return [r for _k, r in sorted(self.tables[table].items()) if keep(r)]

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """All or nothing, like one transaction: on any error every table is restored."""
        saved = {name: dict(rows) for name, rows in self.tables.items()}
        try:
            yield
        except BaseException:
            self.tables = saved
            raise

    @_recorded
    @contextlib.contextmanager
    def transaction(self):
        with self._writing():
            yield _CONNECTION

    @_recorded
    def lock(self, name: str, *, file_suffix=None, dedicated: bool = False, check_s: float = 10.0) -> Lock:
        return NullLock()  # one process, one event loop: nobody to compete with

    def close(self) -> None:  # nothing to release
        pass

    def dump(self, table_name: str) -> list[tuple]:  # every row in key order, as StoreBase.dump
        return [tuple(hashable(v) for v in r.values()) for r in self._select(table_name)]

    # ------------------------------------------------------------------ the stages' reads (DerivedStorage)

    @_recorded
    def partitions_between(self, start, end, guild_id=None) -> list[dict]:
        start, end = _bind("chat_history", "ts", start), _bind("chat_history", "ts", end)
        guilds: dict[str, list[int]] = {}
        counts: Counter = Counter()
        for m in self.tables["chat_history"].values():
            if start <= m["ts"] < end and (guild_id is None or m["guild_id"] == guild_id):
                guilds.setdefault(m["partition"], []).extend([m["guild_id"]] if m["guild_id"] is not None else [])
                counts[m["partition"]] += 1
        return [{"partition": p, "guild_id": max(g) if g else None, "messages": counts[p]} for p, g in sorted(guilds.items())]

    @_recorded
    def messages_between(self, partition, start, end) -> list[dict]:
        start, end = _bind("chat_history", "ts", start), _bind("chat_history", "ts", end)
        rows = [m for m in self._select("chat_history", partition=partition) if start <= m["ts"] < end]
        return [_out(m, ("message_id", "channel_id", "user_id", "text", "ts", "reply_to", "guild_id", "author_name"))
                for m in sorted(rows, key=lambda m: (m["ts"], m["message_id"], m["channel_id"]))]

    @_recorded
    def authors_of(self, messages) -> dict[tuple[int, int], tuple[int, str | None]]:  # by (channel, id)
        return {k: (r["user_id"], r["author_name"]) for k in messages if (r := self.tables["chat_history"].get(k))}

    @_recorded
    def names_before(self, partition, user_ids, before) -> dict[int, str]:  # as DerivedStore.names_before
        before, out = _bind("chat_history", "ts", before), {}
        for m in sorted(self._select("chat_history", partition=partition, user_id=user_ids),
                        key=lambda m: (m["ts"], m["author_name"] or "")):
            if m["ts"] < before and m["author_name"] is not None:
                out[m["user_id"]] = m["author_name"]
        return out | {r["user_id"]: r["display_name"] for r in self._select("members", partition=partition, user_id=user_ids)
                      if r["user_id"] not in out and r["seen_at"] < before}

    @_recorded
    def member_names(self, user_ids=None, partitions=None) -> dict[tuple[str, int], str]:
        return {(r["partition"], r["user_id"]): r["display_name"]
                for r in self._select("members", user_id=user_ids, partition=partitions)}

    @_recorded
    def channels(self, channel_ids=None) -> dict[int, dict]:
        return {r["channel_id"]: _out(r) for r in self._select("channels", channel_id=channel_ids)}

    @_recorded
    def dm_speaker_counts(self, partitions=None) -> dict[str, int]:
        dms = self._select("chat_history", visibility="dm")
        if partitions is not None:
            wanted = set(partitions)
            dms = [m for m in dms if m["partition"] in wanted]
        return {p: len({m["user_id"] for m in dms if m["partition"] == p}) for p in {m["partition"] for m in dms}}

    @_recorded
    def partitions_of_users(self, user_ids) -> dict[int, list[str]]:
        found: dict[int, set[str]] = defaultdict(set)
        for m in self._select("chat_history", user_id=user_ids):
            found[m["user_id"]].add(m["partition"])
        return {u: sorted(ps) for u, ps in found.items()}

    @_recorded
    def partition_days_between(self, partition, first, last) -> dict[dt.date, dict]:
        return {r["day"]: _out(r) for r in self._select("partition_days", partition=partition) if first <= r["day"] <= last}

    @_recorded
    def dailies(self, days, *, partition=None, user_ids=None) -> list[dict]:
        return self._summaries("daily_summaries", days, partition, user_ids)

    @_recorded
    def historicals(self, days, *, partition=None, user_ids=None) -> list[dict]:
        return self._summaries("historical_summaries", days, partition, user_ids)

    def _summaries(self, table, days, partition, user_ids) -> list[dict]:
        rows = self._select(table, day=days, partition=partition)
        order = lambda r: (r["partition"], r["user_id"], r["day"])  # noqa: E731
        if user_ids is None:
            return [_out(r) for r in sorted(rows, key=order)]
        wanted = set(user_ids)
        return [_out(r) for r in sorted((r for r in rows if r["user_id"] in wanted), key=order)]

    @_recorded
    def contexts(self, scope=None, user_id=None, *, text=True, user_ids=None) -> list[dict]:
        rows = self._select("memory_context", scope=scope, user_id=user_id)
        rows = rows if user_ids is None else [r for r in rows if r["user_id"] in user_ids]
        return [_out(r, None if text else CONTEXT_STATE) for r in rows]

    # ------------------------------------------------------------------ the stages' writes

    @_recorded
    def write_batch(self, dailies=(), historicals=(), contexts=(), touches=(), *, facts=(), same_fact=0.85,
                    profiles=(), removals=(), dropped_days=(), queued_done=(), control_marker=None, own_controls=(),
                    wider=()):
        """One transaction; a partition-day's summaries are replaced whole, its facts stored with them."""
        with self._writing():
            if control_marker is not None:  # as store/controls.py refuse_after_removal
                since = {r["action"] for r in self._select("control_actions")
                         if r["id"] > control_marker and r["id"] not in own_controls}
                stop_for(since)
                if DELETION in since:  # facts keep only the messages still stored (store/facts.py)
                    facts = still_sourced(facts, self.tables["chat_history"])
            if wider:  # as store/derived.py: a DM no longer one-to-one gets none of its wider rows
                dms = {r["partition"]: r for r in self.tables["channels"].values()}
                narrowed = {s for s in wider if not is_one_to_one(dms.get(s), 0)}
                contexts = [r for r in contexts if r["scope"] not in narrowed]
                profiles = [r for r in profiles if r["scope"] not in narrowed]
                touches = [t for t in touches if t["scope"] not in narrowed]
            if dailies:
                whole = {(r["partition"], r["day"]) for r, _s, _n in dailies}
                for key in [k for k in self.tables["daily_summaries"] if k[:2] in whole]:
                    del self.tables["daily_summaries"][key]
                for record, summaries, now in dailies:
                    for uid, text in sorted(summaries.items()):
                        self._insert("daily_summaries", {
                            "partition": record["partition"], "day": record["day"], "user_id": uid, "summary": text,
                            "input_hash": record["input_hash"], "degraded": record["degraded"], "created_at": now})
                self._upsert("partition_days", [{**record, "computed_at": now} for record, _s, now in dailies])
            for table, rows in (("historical_summaries", historicals), ("memory_context", contexts)):
                if rows:
                    self._upsert(table, list(rows))
            for t in touches:  # an UPDATE of a context and its profile: one that is not there stays absent
                for table in ("memory_context", "memory_profiles"):
                    row = self.tables[table].get(key := (t["scope"], t["user_id"]))
                    if row is not None and row["as_of_day"] < t["as_of_day"]:
                        self._update(table, key, {"as_of_day": t["as_of_day"]})
            self._write_controls(dropped_days, queued_done)  # after the dailies, as the SQL store
            return self._write_memory(facts, same_fact, profiles, removals)

    @_recorded
    def delete_historicals(self, partition, day, user_ids) -> None:
        for uid in user_ids:
            self.tables["historical_summaries"].pop((partition, uid, day), None)

    def queue_drop_ended(self, queue, *, before=None, conn=None) -> int:
        """No job queue in memory (the SQL store's is procrastinate's, PostgreSQL only)."""
        return 0

    def rekey_error_texts(self, user_id, subject_key, *, conn=None) -> int:
        """As the SQL store: the id, as a whole number, in the runs' errors becomes `subject_key`."""
        whole, changed = re.compile(rf"(?<!\d){user_id:d}(?!\d)"), 0
        for row in self.tables["pipeline_runs"].values():
            if row.get("error") and (text := whole.sub(subject_key, row["error"])) != row["error"]:
                row["error"], changed = text, changed + 1
        return changed

    @_recorded
    def delete_older_than(self, table_name, column, cutoff, batch_size) -> int:
        """Retention: the rows deleted. (The SQL store deletes `batch_size` rows per transaction, LIMIT 0 none.)"""
        RETENTION_KEYS[table_name]  # KeyError for any other table, as the SQL store
        cutoff, rows = _bind(table_name, column, cutoff), self.tables[table_name]
        doomed = [k for k, r in rows.items() if r[column] is not None and r[column] < cutoff] if batch_size > 0 else []
        for key in doomed:
            del rows[key]
        return len(doomed)

    @_recorded
    def start_run(self, kind, date_from, date_to, guild_id, dry_run, now) -> int:
        run_id = next(self._ids["pipeline_runs"])
        self._insert("pipeline_runs", {"id": run_id, "kind": kind, "date_from": date_from, "date_to": date_to,
                                       "guild_id": guild_id, "dry_run": dry_run, "started_at": now,
                                       "status": "running", **dict.fromkeys(ZERO_COUNTS, 0)})
        return run_id

    @_recorded
    def finish_run(self, run_id, status, counts, now, error=None) -> None:
        if (run_id,) in self.tables["pipeline_runs"]:  # an UPDATE of no row does nothing
            row = self.tables["pipeline_runs"][(run_id,)]  # counts are added, as the SQL store does
            self._update("pipeline_runs", (run_id,), {"status": status, "finished_at": now, "error": error,
                                                      **{k: (row.get(k) or 0) + v for k, v in counts.items()}})

    @_recorded
    def runs(self, limit=20) -> list[dict]:
        return [_out(r) for r in self._select("pipeline_runs")[::-1][:limit]]


# The facts and controls roles (pipeline/testing_facts.py, testing_controls.py) are recorded like
# every other storage call.
for _name in ("memory_facts", "apply_facts", "profiles", "last_active_days", "forgotten", "forget_fact"):
    setattr(InMemoryStageStore, _name, _recorded(getattr(InMemoryFacts, _name)))
for _name in ("exclusions", "add_exclusion", "end_exclusions", "record_action", "actions", "enqueue_days",
              "queued_days", "dequeue_days", "find_messages", "user_messages", "delete_message_rows",
              "drop_fact_sources"):
    setattr(InMemoryStageStore, _name, _recorded(getattr(InMemoryControls, _name)))
