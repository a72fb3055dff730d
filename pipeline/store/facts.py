"""Facts, profiles and forgotten facts.

Facts are written through `apply_facts`: the stored rows the new ones may be compared with are
read (same user, level and partition: `_comparable`), the ADD / UPDATE / NOOP decisions made
(pipeline/memory/dedup.py) and written in the same transaction — a nightly run's batch
(DerivedStore.write_batch) or one `facts remember`. On PostgreSQL, fact writes take a
transaction-scoped advisory lock, so two runs never decide against the same stale rows.

Forgetting is one transaction: the forgotten fact is recorded, the fact rows that state it are
deleted, and every stored summary, profile and context it applies to is scrubbed, so nothing can
read it between the two. Where it applies is the stage's decision (stages/forgetting.py).
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections import Counter
from typing import Callable, Collection, Iterable, Protocol, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.tables import (chat_history, daily_summaries, forgotten_facts, historical_summaries, memory_context,
                         memory_facts, memory_profiles)
from ..memory.dedup import group_of, reconcile
from .base import chunks, select_in
from .bulk import insert_rows
from .controls import cited_messages, still_sourced
from .locks import lock_key

FACT_WRITE_LOCK = lock_key("mempipe:memory_facts")


class Scrub(Protocol):
    """What one forget reaches: every user's summaries of `partitions`, and the `contexts`
    (scope, user) named (their profiles too); called with each such row (its key columns,
    `user_id` and `text`), it returns what the text becomes."""

    partitions: Collection[str]
    contexts: Collection[tuple[str, int]]

    def __call__(self, row: dict) -> str: ...


class FactsStorage(Protocol):
    def memory_facts(self, *, user_ids: Iterable[int] | None = None, active_only: bool = False,
                     columns: Sequence[str] | None = None) -> list[dict]: ...
    def apply_facts(self, rows: list[dict], same_fact: float) -> Counter: ...
    def profiles(self, scope: str | None = None, user_id: int | None = None, *, text: bool = True,
                 user_ids: Iterable[int] | None = None) -> list[dict]: ...
    def forgotten(self, user_ids: Iterable[int] | None = None) -> list[dict]: ...
    def forget_fact(self, scope: str, user_id: int, fact: str, now: dt.datetime, *,
                    delete_ids: Iterable[int], scrub: Scrub,
                    record: Callable[[Connection | None, int], None] | None = None) -> int: ...


# (table, text column, key columns) of every row a forget scrubs; the first key column selects
# the rows: a partition or a scope in the Scrub's reach (scrub_reach)
SCRUBBED = (
    (daily_summaries, "summary", ("partition", "day", "user_id")),
    (historical_summaries, "summary", ("partition", "user_id", "day")),
    (memory_context, "context", ("scope", "user_id")),
    (memory_context, "recent", ("scope", "user_id")),
    (memory_profiles, "profile", ("scope", "user_id")),
)
SCOPED = (memory_context, memory_profiles)  # keyed by (scope, user): reached by `Scrub.contexts`


def scrub_reach(table: sa.Table, scrub: Scrub) -> set[str]:
    """The partitions (or scopes) whose rows of `table` a forget reads; a context or profile is
    then kept only when its (scope, user) is named."""
    return {s for s, _u in scrub.contexts} if table in SCOPED else set(scrub.partitions)


# What `reconcile` reads of a stored fact (and changes by id): a plan's reads skip the other
# columns' conversions (times, input hash), once per stored row of every partition-day written.
RECONCILED = ("id", "user_id", "partition", "level", "text", "fact_key", "confidence", "event_day", "first_seen",
              "last_seen", "sources", "status")


def apply_fact_plan(conn, rows: list[dict], same_fact: float, *, check_sources: bool = False) -> Counter:
    """Decide and write, inside the caller's transaction. `check_sources` (messages were deleted
    since the run read them): a fact keeps only the messages it cites that are still stored, and
    one left with none is not written — as the deletion did to the stored facts."""
    if check_sources:
        rows = _still_sourced(conn, rows)
    if not rows:
        return Counter()
    if conn.dialect.name == "postgresql":
        conn.execute(sa.select(sa.func.pg_advisory_xact_lock(FACT_WRITE_LOCK)))
    elif not conn.connection.dbapi_connection.in_transaction:
        # SQLite: the driver begins a transaction at the first write only; take the write lock
        # before the read, so that another process (stages/processes.py) cannot write facts
        # between what this one read and what it decides
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    plan = reconcile(_comparable(conn, rows), rows, same_fact)
    if plan.inserts:
        insert_rows(conn, memory_facts, [{k: v for k, v in r.items() if k != "id"} for r in plan.inserts])
    update_facts(conn, plan.updates)
    return plan.counts


def _still_sourced(conn, rows: list[dict]) -> list[dict]:
    """`rows` with their message sources cut to the messages stored now (store/controls.py
    `still_sourced`); the cited ones are looked up in one statement per chunk."""
    pair = sa.tuple_(chat_history.c.channel_id, chat_history.c.message_id)
    stored = {tuple(r) for r in select_in(conn, lambda ks: sa.select(chat_history.c.channel_id,
                                                                      chat_history.c.message_id).where(pair.in_(ks)),
                                          sorted(cited_messages(rows)))}
    return still_sourced(rows, stored)


# What a fact write compares new facts with (`_comparable`), built once: a model-backed run
# writes facts once per partition-day, and building the statement and its cache key each time
# was about a quarter of the read (py-spy, slice replay). Expanding IN lists: any length.
_READ = [memory_facts.c[k] for k in RECONCILED]
_PARTITION_FACTS = sa.select(*_READ).where(
    memory_facts.c.partition == sa.bindparam("partition"),
    memory_facts.c.user_id.in_(sa.bindparam("users", expanding=True)),
    memory_facts.c.level.in_(sa.bindparam("levels", expanding=True)),
    memory_facts.c.status == "active")
_GLOBAL_FACTS = sa.select(*_READ).where(
    memory_facts.c.user_id.in_(sa.bindparam("users", expanding=True)),
    memory_facts.c.level == "global", memory_facts.c.status == "active")


def _comparable(conn, rows: list[dict]) -> list[dict]:
    """The stored active facts `reconcile` compares these new ones with: those of their groups
    (memory/dedup.py `group_of`: one user, one level, one partition below global), in id order.
    One read per partition, of the users with a new fact there: the index of migration 0018 finds
    exactly those rows. One statement for all of a batch's partitions and users made SQLite seek
    every partition x user pair: for 150 partitions and their 475 users (sqlite3, a slice replay's
    facts) 18 ms, against 14 ms for the user index and 5.3 ms read partition by partition. A
    user's global facts are read only when one of their new facts is global."""
    groups = {group_of(r) for r in rows}
    by_partition: dict[str, tuple[set, set]] = {}
    for user, level, partition in groups:
        if level != "global":
            users, levels = by_partition.setdefault(partition, (set(), set()))
            users.add(user)
            levels.add(level)
    found = []
    for partition, (users, levels) in sorted(by_partition.items()):
        for chunk in chunks(users):
            found += conn.execute(_PARTITION_FACTS, {"partition": partition, "users": chunk, "levels": sorted(levels)})
    for chunk in chunks(u for u, level, _p in groups if level == "global"):
        found += conn.execute(_GLOBAL_FACTS, {"users": chunk})
    # a partition's users x its levels: a pair no new fact has is left out here
    return sorted((r for r in (dict(zip(RECONCILED, row)) for row in found) if group_of(r) in groups),
                  key=lambda r: r["id"])


def update_facts(conn, updates: dict[int, dict]) -> None:
    """Changes to stored facts by id, in id order (the lock order on PostgreSQL), one executemany
    per run of changes that set the same columns. A replay after a prompt change restates nearly
    every fact: 47,374 updates in a 147,079-message slice. One UPDATE each took 3.2 s of driver
    time on SQLite and 16.6 s on PostgreSQL, and the daily stage ~18 s and ~33 s longer than
    now (21-24 statements: 1.0-1.2 s and 4.6 s of driver time)."""
    c = memory_facts.c
    for columns, run in itertools.groupby(sorted(updates.items()), key=lambda kv: tuple(sorted(kv[1]))):
        statement = sa.update(memory_facts).where(c.id == sa.bindparam("b_id", type_=c.id.type)).values(
            {k: sa.bindparam(f"b_{k}", type_=c[k].type) for k in columns})
        conn.execute(statement, [{"b_id": fact_id, **{f"b_{k}": values[k] for k in columns}} for fact_id, values in run])


def _delete_others_stating(conn, user_id: int, scrub: Scrub) -> int:
    """Other people's fact rows of the reached partitions (any status) that state the forgotten
    fact about the user: a fact is one statement, so it goes whole (no row keeps a forgotten
    text; search would find it). `scrub` keeps another author's text unless it names the user."""
    f = memory_facts.c
    rows = list(select_in(conn, lambda values: sa.select(f.id, f.user_id, f.text).where(
        f.partition.in_(values), f.user_id != user_id), sorted(scrub.partitions)))
    gone = sorted(r.id for r in rows if scrub({"user_id": r.user_id, "text": r.text}) != r.text)
    return sum(conn.execute(sa.delete(memory_facts).where(f.id.in_(chunk))).rowcount for chunk in chunks(gone))


class FactsStore:
    def memory_facts(self, *, user_ids: Iterable[int] | None = None, active_only: bool = False,
                     columns: Sequence[str] | None = None) -> list[dict]:
        """Fact rows (active and superseded, or active only), in (user, id) order; `columns`:
        only these (with id and user_id), e.g. a merge's (stages/merge.py MERGED_FACT_COLUMNS)."""
        c = memory_facts.c
        q = sa.select(memory_facts) if columns is None \
            else sa.select(*(c[k] for k in dict.fromkeys(("id", "user_id", *columns))))
        if active_only:
            q = q.where(c.status == "active")
        rows = self.rows("reading facts", q) if user_ids is None \
            else self.rows_in("reading facts", lambda ids: q.where(c.user_id.in_(ids)), user_ids)
        return sorted(rows, key=lambda r: (r["user_id"], r["id"]))

    def apply_facts(self, rows: list[dict], same_fact: float) -> Counter:
        """Store validated facts (ADD / UPDATE / NOOP against the stored ones); returns the counts."""
        with self.writing("writing facts") as conn:
            return apply_fact_plan(conn, rows, same_fact)

    def profiles(self, scope: str | None = None, user_id: int | None = None, *, text: bool = True,
                 user_ids: Iterable[int] | None = None) -> list[dict]:
        """Profile rows in key order (text=False: their state only); `user_ids`: only these users'."""
        c = memory_profiles.c
        cols = [memory_profiles] if text else [c.scope, c.user_id, c.input_hash, c.as_of_day]
        q = sa.select(*cols).order_by(c.scope, c.user_id)
        if scope is not None:
            q = q.where(c.scope == scope)
        if user_id is not None:
            q = q.where(c.user_id == user_id)
        return self.rows_of_users("reading profiles", q, c.user_id, user_ids, ("scope", "user_id"))

    def forgotten(self, user_ids: Iterable[int] | None = None) -> list[dict]:
        """What users asked to forget (scope, user_id, fact), oldest first. None: every user."""
        c = forgotten_facts.c
        q = sa.select(c.id, c.scope, c.user_id, c.fact)
        rows = self.rows("reading forgotten facts", q) if user_ids is None \
            else self.rows_in("reading forgotten facts", lambda ids: q.where(c.user_id.in_(ids)), user_ids)
        return [{k: r[k] for k in ("scope", "user_id", "fact")} for r in sorted(rows, key=lambda r: r["id"])]

    def forget_fact(self, scope: str, user_id: int, fact: str, now: dt.datetime, *,
                    delete_ids: Iterable[int], scrub: Scrub,
                    record: Callable[[Connection | None, int], None] | None = None) -> int:
        """Record the forgotten fact, delete the fact rows `delete_ids` and other people's facts of
        the reached partitions that state it about the user, and scrub every stored summary,
        profile and context the `scrub` reaches. Returns the rows deleted or scrubbed. `record(conn,
        changed)`: the control's audit row, written in the same transaction."""
        with self.writing("forgetting a fact") as conn:
            self.lock_removals(conn)  # runs' write batches under way commit first; later ones see `record`'s row
            conn.execute(sa.insert(forgotten_facts).values(scope=scope, user_id=user_id, fact=fact, created_at=now))
            ids = sorted(set(delete_ids))
            changed = 0
            for chunk in (ids[i:i + 500] for i in range(0, len(ids), 500)):
                changed += conn.execute(sa.delete(memory_facts).where(memory_facts.c.id.in_(chunk),
                                                                      memory_facts.c.user_id == user_id)).rowcount
            changed += _delete_others_stating(conn, user_id, scrub)
            contexts = set(scrub.contexts)
            for table, col, keys in SCRUBBED:
                rows = list(select_in(conn, lambda values: sa.select(*[table.c[k] for k in keys], table.c[col])
                                      .where(table.c[keys[0]].in_(values)), sorted(scrub_reach(table, scrub))))
                for row in rows:
                    key = {k: row[i] for i, k in enumerate(keys)}
                    if row[-1] is None or (table in SCOPED and (key["scope"], key["user_id"]) not in contexts):
                        continue
                    cleaned = scrub(key | {"text": row[-1]})
                    if cleaned != row[-1]:
                        conn.execute(sa.update(table).where(*[table.c[k] == v for k, v in key.items()])
                                     .values({col: cleaned}))
                        changed += 1
            if record is not None:  # the audit row, in this transaction: what a run's writes check
                record(conn, changed)
            return changed
