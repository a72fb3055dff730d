"""The stages' storage: partition-days, daily and historical summaries, contexts — bulk reads
(one query for many items, ids chunked), batched writes (many items per transaction, each item
all-or-nothing) and retention.

Reads take optional filters instead of coming in per-item twins: a nightly run reads a whole
day's rows at once, a single merge (remember / forget) the same query narrowed to one user.
"""

from __future__ import annotations

import datetime as dt
import operator
from collections import Counter, defaultdict
from typing import Collection, Iterable, Protocol, Sequence

import sqlalchemy as sa

from ..db.tables import (channels, chat_history, daily_summaries, historical_summaries, members, memory_context,
                         memory_profiles, metadata, partition_days)
from ..calendar import HISTORY_DAYS
from ..memory.audience import is_one_to_one
from .base import Rows, chunks, insert_for, select_in
from .bulk import delete_keyed, insert_rows
from .controls import dequeue_in, refuse_after_removal
from .facts import apply_fact_plan

Batch = Sequence  # of (record, summaries, now) for dailies; of row dicts otherwise
# What a nightly run reads of every context: its state, not its words.
CONTEXT_STATE = ("scope", "user_id", "input_hash", "as_of_day", "degraded", "degraded_reason", "attempts",
                 "recent_hash")
# Retention deletes by these keys (the tables retention may touch).
RETENTION_KEYS = {
    "chat_history": ("channel_id", "message_id"),
    "partition_days": ("partition", "day"),
    "daily_summaries": ("partition", "day", "user_id"),
    "historical_summaries": ("partition", "user_id", "day"),
    "memory_context": ("scope", "user_id"),
    "memory_profiles": ("scope", "user_id"),
}


class DerivedStorage(Protocol):
    """What the daily, historical and merge stages read and write."""

    dialect: str

    def partitions_between(self, start: dt.datetime, end: dt.datetime, guild_id: int | None = None) -> list[dict]: ...
    def messages_between(self, partition: str, start: dt.datetime, end: dt.datetime) -> list[dict]: ...
    def authors_of(self, messages: Iterable[tuple[int, int]]) -> dict[tuple[int, int], tuple[int, str | None]]: ...
    def names_before(self, partition: str, user_ids: Iterable[int], before: dt.datetime) -> dict[int, str]: ...
    def member_names(self, user_ids: Iterable[int] | None = None,
                     partitions: Iterable[str] | None = None) -> dict[tuple[str, int], str]: ...
    def channels(self, channel_ids: Iterable[int] | None = None) -> dict[int, dict]: ...
    def dm_speaker_counts(self, partitions: Iterable[str] | None = None) -> dict[str, int]: ...
    def partitions_of_users(self, user_ids: Iterable[int]) -> dict[int, list[str]]: ...
    def partition_days_between(self, partition: str, first: dt.date, last: dt.date) -> dict[dt.date, dict]: ...
    def dailies(self, days: Iterable[dt.date], *, partition: str | None = None,
                user_ids: Iterable[int] | None = None) -> list[dict]: ...
    def historicals(self, days: Iterable[dt.date], *, partition: str | None = None,
                    user_ids: Iterable[int] | None = None) -> list[dict]: ...
    def contexts(self, scope: str | None = None, user_id: int | None = None, *, text: bool = True,
                 user_ids: Iterable[int] | None = None) -> list[dict]: ...
    def write_batch(self, dailies: Batch = (), historicals: Rows = (), contexts: Rows = (),
                    touches: Rows = (), *, facts: Rows = (), same_fact: float = 0.85, profiles: Rows = (),
                    removals: Sequence[tuple[str, str, int]] = (), dropped_days: Sequence[tuple[str, dt.date]] = (),
                    queued_done: Sequence[tuple] = (), control_marker: int | None = None,
                    own_controls: Collection[int] = (), wider: Collection[str] = ()) -> Counter: ...
    def last_active_days(self, until: dt.date, user_ids: Iterable[int] | None = None) -> dict[tuple[str, int], dt.date]: ...
    def delete_historicals(self, partition: str, day: dt.date, user_ids: Iterable[int]) -> None: ...
    def delete_older_than(self, table_name: str, column: str, cutoff, batch_size: int) -> int: ...


# More users than this (a nightly run plans merges for everyone with facts): partitions_of_users
# reads every (user, partition) pair once instead of one IN list per 500 ids — on PostgreSQL each
# list was a scan of chat_history (57 of them, 4 s of the server's CPU, at 1M messages).
EVERY_USER_AT = 5_000

_UPSERTS: dict[tuple, object] = {}


def _upsert_statement(dialect: str, insert, table, keys: tuple[str, ...], columns: tuple[str, ...]):
    """INSERT … ON CONFLICT (keys) DO UPDATE SET every other column: built once per shape (building
    it — `excluded` — costs more than running it)."""
    shape = (dialect, table.name, keys, columns)
    if shape not in _UPSERTS:
        stmt = insert(table)
        _UPSERTS[shape] = stmt.on_conflict_do_update(
            index_elements=[table.c[k] for k in keys], set_={k: stmt.excluded[k] for k in columns if k not in keys})
    return _UPSERTS[shape]


def _not_one_to_one(conn, scopes: Collection[str]) -> set[str]:
    """Those of these DM scopes whose DM is not one-to-one now (read in the caller's transaction:
    an import that makes one a group commits before it or after the rows it guards)."""
    c = channels.c
    rows = {r.partition: r for r in select_in(conn, lambda ps: sa.select(c.partition, c.one_to_one, c.is_group)
                                              .where(c.partition.in_(ps)), sorted(scopes))}
    return {s for s in scopes if not is_one_to_one(r._mapping if (r := rows.get(s)) is not None else None, 0)}


def _delete_keyed(conn, table, keys: tuple[str, ...], values: Iterable[tuple]) -> None:
    """DELETE the rows whose `keys` are among `values`: one statement per chunk of keys, not one
    per key (the search-index triggers still fire per deleted row). SQLite (3.40) scans the whole
    table for a row-value IN list of more than one value, so there it is one prepared statement
    run for each key (executemany), which searches the primary key, except for a table that feeds
    the search index: one statement with the keys in JSON (store/bulk.py `delete_keyed`)."""
    if conn.dialect.name == "sqlite":
        values = list(values)
        if delete_keyed(conn, table, keys, values):  # one statement into the search index
            return
        values = [dict(zip(keys, v)) for v in values]
        if values:
            conn.execute(sa.delete(table).where(*(table.c[k] == sa.bindparam(k, type_=table.c[k].type)
                                                  for k in keys)), values)
        return
    columns = sa.tuple_(*(table.c[k] for k in keys))
    for chunk in chunks(sorted(values)):  # in key order across chunks too (write_batch's lock order)
        conn.execute(sa.delete(table).where(columns.in_(chunk)))


def _by_scope_user(row: dict) -> tuple:
    return row["scope"], row["user_id"]


def _narrowed(q, column, values):
    return q if values is None else q.where(column.in_(sorted(set(values))))


class DerivedStore:
    # ------------------------------------------------------------------ the daily stage's inputs

    def partitions_between(self, start: dt.datetime, end: dt.datetime, guild_id: int | None = None) -> list[dict]:
        """Partitions with at least one message in [start, end), with their guild and how many
        messages they have there."""
        q = (sa.select(chat_history.c.partition, sa.func.max(chat_history.c.guild_id).label("guild_id"),
                       sa.func.count().label("messages"))
             .where(chat_history.c.ts >= start, chat_history.c.ts < end)
             .group_by(chat_history.c.partition).order_by(chat_history.c.partition))
        if guild_id is not None:
            q = q.where(chat_history.c.guild_id == guild_id)
        return self.rows("listing partitions", q)

    def messages_between(self, partition: str, start: dt.datetime, end: dt.datetime) -> list[dict]:
        c = chat_history.c
        q = (sa.select(c.message_id, c.channel_id, c.user_id, c.text, c.ts, c.reply_to, c.guild_id, c.author_name)
             .where(c.partition == partition, c.ts >= start, c.ts < end).order_by(c.ts, c.message_id, c.channel_id))
        return self.rows("reading messages", q)

    def authors_of(self, messages: Iterable[tuple[int, int]]) -> dict[tuple[int, int], tuple[int, str | None]]:
        """Author and author_name of (channel id, message id) messages: a reply names a message of
        its own channel."""
        c = chat_history.c
        by_channel: dict[int, list[int]] = defaultdict(list)
        for channel_id, message_id in messages:
            by_channel[channel_id].append(message_id)
        out = {}
        for channel_id, ids in sorted(by_channel.items()):
            rows = self.rows_in("reading reply authors", lambda chunk, ch=channel_id: sa.select(
                c.channel_id, c.message_id, c.user_id, c.author_name).where(
                c.channel_id == ch, c.message_id.in_(chunk)), ids)
            out.update({(r["channel_id"], r["message_id"]): (r["user_id"], r["author_name"]) for r in rows})
        return out

    def names_before(self, partition: str, user_ids: Iterable[int], before: dt.datetime) -> dict[int, str]:
        """Each user's display name in this partition as it stood just before `before`: the
        author_name of their latest named message there before it (ties: the greatest name),
        else — those messages gone to retention — their members name when it was last seen
        before `before` (then it is the same name). Users with neither are left out."""
        c = chat_history.c

        def latest(ids):
            last = (sa.select(c.user_id, sa.func.max(c.ts).label("ts"))
                    .where(c.partition == partition, c.user_id.in_(ids), c.ts < before, c.author_name.is_not(None))
                    .group_by(c.user_id).subquery())
            return (sa.select(c.user_id, sa.func.max(c.author_name).label("name"))
                    .join(last, sa.and_(c.user_id == last.c.user_id, c.ts == last.c.ts))
                    .where(c.partition == partition, c.author_name.is_not(None)).group_by(c.user_id))

        out = {r["user_id"]: r["name"] for r in self.rows_in("reading names before a day", latest, user_ids)}
        m = members.c
        rest = set(user_ids) - set(out)
        if rest:
            rows = self.rows_in("reading member names", lambda ids: sa.select(m.user_id, m.display_name).where(
                m.partition == partition, m.user_id.in_(ids), m.seen_at < before), rest)
            out |= {r["user_id"]: r["display_name"] for r in rows}
        return out

    def member_names(self, user_ids: Iterable[int] | None = None,
                     partitions: Iterable[str] | None = None) -> dict[tuple[str, int], str]:
        """Display names by (partition, user), each learned from that partition's own messages.
        None: every user / every partition."""
        c = members.c

        def make(ids=None):
            q = _narrowed(sa.select(c.partition, c.user_id, c.display_name), c.partition, partitions)
            return q if ids is None else q.where(c.user_id.in_(ids))

        rows = self.rows("reading member names", make()) if user_ids is None \
            else self.rows_in("reading member names", make, user_ids)
        return {(r["partition"], r["user_id"]): r["display_name"] for r in rows}

    def partition_days_between(self, partition: str, first: dt.date, last: dt.date) -> dict[dt.date, dict]:
        c = partition_days.c
        q = sa.select(partition_days).where(c.partition == partition, c.day >= first, c.day <= last)
        return {r["day"]: r for r in self.rows("reading partition-days", q)}

    # ------------------------------------------------------------------ summaries

    def dailies(self, days: Iterable[dt.date], *, partition: str | None = None,
                user_ids: Iterable[int] | None = None) -> list[dict]:
        """Daily summaries of these days, optionally of one partition and some users, ordered by
        (partition, user, day)."""
        return self._summaries(daily_summaries, "reading daily summaries", days, partition, user_ids)

    def historicals(self, days: Iterable[dt.date], *, partition: str | None = None,
                    user_ids: Iterable[int] | None = None) -> list[dict]:
        return self._summaries(historical_summaries, "reading historical summaries", days, partition, user_ids)

    def _summaries(self, table, op, days, partition, user_ids) -> list[dict]:
        days = sorted(set(days))
        if not days:  # (a control's inputs name no day: nothing to read, not a scan that finds nothing)
            return []
        c = table.c
        q = sa.select(table).where(c.day.in_(days)).order_by(c.partition, c.user_id, c.day)
        if partition is not None:
            q = q.where(c.partition == partition)
        return self.rows_of_users(op, q, c.user_id, user_ids, ("partition", "user_id", "day"))

    def delete_historicals(self, partition: str, day: dt.date, user_ids: Iterable[int]) -> None:
        c = historical_summaries.c
        with self.writing("deleting historical summaries") as conn:
            for_ids = sorted(set(user_ids))
            if for_ids:
                conn.execute(sa.delete(historical_summaries).where(
                    c.partition == partition, c.day == day, c.user_id.in_(for_ids)))

    # ------------------------------------------------------------------ audiences

    def channels(self, channel_ids: Iterable[int] | None = None) -> dict[int, dict]:
        c = channels.c
        if channel_ids is None:
            rows = self.rows("reading channels", sa.select(channels))
        else:
            rows = self.rows_in("reading channels", lambda ids: sa.select(channels).where(c.channel_id.in_(ids)),
                                channel_ids)
        return {r["channel_id"]: r for r in rows}

    def dm_speaker_counts(self, partitions: Iterable[str] | None = None) -> dict[str, int]:
        """How many people have spoken in each DM partition (of `partitions` only, when given: by
        the (partition, ts) index, not a pass over every DM message). A DM with no message is
        left out."""
        c = chat_history.c
        q = (sa.select(c.partition, sa.func.count(sa.distinct(c.user_id)).label("n"))
             .where(c.visibility == "dm").group_by(c.partition))
        if partitions is None:
            rows = self.rows("counting DM participants", q)
        else:
            rows = self.rows_in("counting DM participants", lambda ps: q.where(c.partition.in_(ps)), partitions)
        return {r["partition"]: r["n"] for r in rows}

    def partitions_of_users(self, user_ids: Iterable[int]) -> dict[int, list[str]]:
        c = chat_history.c
        out: dict[int, list[str]] = defaultdict(list)
        wanted = set(user_ids)
        if len(wanted) > EVERY_USER_AT:  # one pass over every pair, kept if wanted
            q = sa.select(c.user_id, c.partition).distinct()
            rows = [r for r in self.rows("listing users' partitions", q) if r["user_id"] in wanted]
        else:
            rows = self.rows_in("listing users' partitions",
                                lambda ids: sa.select(c.user_id, c.partition).where(c.user_id.in_(ids)).distinct(),
                                wanted)
        for r in rows:
            out[r["user_id"]].append(r["partition"])
        return {u: sorted(ps) for u, ps in out.items()}

    # ------------------------------------------------------------------ contexts

    def contexts(self, scope: str | None = None, user_id: int | None = None, *, text: bool = True,
                 user_ids: Iterable[int] | None = None) -> list[dict]:
        """Context rows in key order; text=False leaves out the context text and its inputs (a
        nightly run reads every context's state, not its words). `user_ids`: only these users'."""
        c = memory_context.c
        cols = [memory_context] if text else [c[k] for k in CONTEXT_STATE]
        q = sa.select(*cols).order_by(c.scope, c.user_id)
        if scope is not None:
            q = q.where(c.scope == scope)
        if user_id is not None:
            q = q.where(c.user_id == user_id)
        return self.rows_of_users("listing contexts", q, c.user_id, user_ids, ("scope", "user_id"))

    # ------------------------------------------------------------------ writes

    def last_active_days(self, until: dt.date, user_ids: Iterable[int] | None = None) -> dict[tuple[str, int], dt.date]:
        """Each (partition, user)'s latest day with a daily summary, up to `until`."""
        c = daily_summaries.c

        def make(ids=None):
            q = (sa.select(c.partition, c.user_id, sa.func.max(c.day).label("day")).where(c.day <= until)
                 .group_by(c.partition, c.user_id))
            return q if ids is None else q.where(c.user_id.in_(ids))
        rows = self.rows("reading last activity", make()) if user_ids is None \
            else self.rows_in("reading last activity", make, user_ids)
        return {(r["partition"], r["user_id"]): r["day"] for r in rows}

    def write_batch(self, dailies: Batch = (), historicals: Rows = (), contexts: Rows = (),
                    touches: Rows = (), *, facts: Rows = (), same_fact: float = 0.85, profiles: Rows = (),
                    removals: Sequence[tuple[str, str, int]] = (), dropped_days: Sequence[tuple[str, dt.date]] = (),
                    queued_done: Sequence[tuple] = (), control_marker: int | None = None,
                    own_controls: Collection[int] = (), wider: Collection[str] = ()) -> Counter:
        """One transaction for many items. A partition-day's summaries are replaced whole, the
        facts extracted from it stored with them (ADD / UPDATE / NOOP: returns those counts).
        `removals`: ("context" | "profile", scope, user) rows that no longer have any input.
        `dropped_days`: (partition, day) with no messages left: its summaries and partition_days
        row go. `queued_done`: (partition, day, queued_at, day 1) of the recompute queue, done:
        the historical rows as of other day 1s whose days 2-7 held that day go (they quote a day
        that changed), and the entry is removed unless it was queued again since `queued_at`.
        `control_marker`: the run's (RunContext.mark_controls), `own_controls` the controls it
        recorded itself: ErasedDuringRun / RemovedDuringRun, nothing written, when a user was erased,
        or a fact forgotten or a scope cleared since; after a deletion since, facts resting
        only on deleted messages are not written (store/controls.py refuse_after_removal). `wider`: the DM scopes whose
        contexts and profiles here were made as one-to-one (from the writer's other partitions):
        those of a DM that is no longer one-to-one are not written (migration 0025 removed what was
        stored when it changed; the next run makes them from the DM alone)."""
        with self.writing("writing results") as conn:
            # ErasedDuringRun / RemovedDuringRun: nothing of this batch is written
            deleted_since = refuse_after_removal(conn, control_marker, own_controls)
            if wider and (narrowed := _not_one_to_one(conn, wider)):
                contexts = [r for r in contexts if r["scope"] not in narrowed]
                profiles = [r for r in profiles if r["scope"] not in narrowed]
                touches = [t for t in touches if t["scope"] not in narrowed]
            insert = insert_for(conn)
            if dailies:  # replaced whole: the day's earlier speakers go with it
                _delete_keyed(conn, daily_summaries, ("partition", "day"),
                              [(record["partition"], record["day"]) for record, _s, _n in dailies])
                rows = [{"partition": record["partition"], "day": record["day"], "user_id": uid, "summary": text,
                         "input_hash": record["input_hash"], "degraded": record["degraded"], "created_at": now}
                        for record, summaries, now in dailies for uid, text in sorted(summaries.items())]
                insert_rows(conn, daily_summaries, rows)
                self._upsert(conn, insert, partition_days, ("partition", "day"),
                             [{**record, "computed_at": now} for record, _s, now in dailies])
            # Each kind in key order (_upsert, _delete_keyed, touches): concurrent runs' batches
            # (PostgreSQL) then take row locks in one order and cannot deadlock (stages/writes.py).
            if historicals:
                self._upsert(conn, insert, historical_summaries, ("partition", "user_id", "day"), historicals)
            if contexts:
                self._upsert(conn, insert, memory_context, ("scope", "user_id"), contexts)
            if touches:  # a context and its profile, valid as of a later day 1
                binds = [{"b_scope": t["scope"], "b_user": t["user_id"], "b_day": t["as_of_day"]}
                         for t in sorted(touches, key=_by_scope_user)]
                for table in (memory_context, memory_profiles):
                    conn.execute(sa.update(table)
                                 .where(table.c.scope == sa.bindparam("b_scope"), table.c.user_id == sa.bindparam("b_user"),
                                        table.c.as_of_day < sa.bindparam("b_day"))
                                 .values(as_of_day=sa.bindparam("b_day")), binds)
            if profiles:
                self._upsert(conn, insert, memory_profiles, ("scope", "user_id"), profiles)
            for kind, table in (("context", memory_context), ("profile", memory_profiles)):
                _delete_keyed(conn, table, ("scope", "user_id"), [(s, u) for k, s, u in removals if k == kind])
            for table in (daily_summaries, partition_days):
                _delete_keyed(conn, table, ("partition", "day"), dropped_days)
            if queued_done:
                h = historical_summaries.c
                for partition, day, _queued_at, day1 in queued_done:
                    conn.execute(sa.delete(historical_summaries).where(
                        h.partition == partition, h.day > day, h.day <= day + dt.timedelta(days=HISTORY_DAYS),
                        h.day != day1))
                dequeue_in(conn, [q[:3] for q in queued_done])
            return apply_fact_plan(conn, list(facts), same_fact, check_sources=deleted_since)

    @staticmethod
    def _upsert(conn, insert, table, keys: tuple[str, ...], rows: Rows) -> None:
        """Rows in key order (the lock order of write_batch)."""
        rows = sorted(rows, key=operator.itemgetter(*keys))
        insert_rows(conn, table, rows, conflict_keys=keys,
                    fallback=_upsert_statement(conn.dialect.name, insert, table, keys, tuple(rows[0])))

    # ------------------------------------------------------------------ retention

    def delete_older_than(self, table_name: str, column: str, cutoff, batch_size: int) -> int:
        """Delete rows whose `column` < cutoff, `batch_size` rows per transaction (short locks: a
        bot's reads and a running replay are never blocked for long). Returns rows deleted."""
        table = metadata.tables[table_name]
        keys = [table.c[k] for k in RETENTION_KEYS[table_name]]
        total = 0
        while True:
            with self.writing("applying retention") as conn:
                batch = conn.execute(sa.select(*keys).where(table.c[column] < cutoff).limit(batch_size)).all()
                if not batch:
                    return total
                if len(keys) == 1:
                    conn.execute(sa.delete(table).where(keys[0].in_([r[0] for r in batch])))
                else:  # by key set (one prepared statement per key on SQLite: see _delete_keyed)
                    _delete_keyed(conn, table, tuple(RETENTION_KEYS[table_name]), [tuple(r) for r in batch])
                total += len(batch)
            if len(batch) < batch_size:
                return total
