"""User controls' storage (pipeline/controls/): everything stored about one user, found by
reflecting the schema, and the deletions of `clear` and `erase`.

The deletions take their decisions from the caller (which partitions and scopes a clear
reaches, which partition-days an erase touches, whether a text names the user): this module
only runs them. Like pipeline/store/controls.py (exclusions, the audit trail, the recompute
queue), writes take an optional `conn`, so a control writes all its rows in one transaction
(`store.transaction()`).
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from typing import Callable, Collection, Iterable, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.tables import (FTS_TABLE, chat_history, chat_requests, control_actions, daily_summaries, historical_summaries,
                         memory_context, is_search_index, memory_facts, memory_profiles, metadata, partition_days,
                         pipeline_runs, scheduler_state)

USER_COLUMN = "user_id"
# The derived rows of a user (their own rows): a clear deletes them — chat_requests too (a pending
# in-chat request of a cleared partition is then never applied; pipeline/stages/requests.py).
USER_DERIVED = (daily_summaries, historical_summaries, memory_facts, memory_profiles, memory_context, chat_requests)
# Texts that may name someone else: (table, text columns). An erase deletes another user's row
# when one of them names the erased user (the rows are made again, without the name, by the next run).
NAMING_TEXTS = ((daily_summaries, ("summary",)), (historical_summaries, ("summary",)),
                (memory_facts, ("text",)), (memory_profiles, ("profile",)), (memory_context, ("context", "recent")))
PartitionDay = tuple[str, dt.date]


class UsersStorage(Protocol):
    def rows_of_user(self, user_id: int) -> dict[str, list[dict]]: ...
    def summaries_of_user(self, user_id: int) -> dict[str, list[dict]]: ...
    def messages_naming_user(self, user_id: int) -> list[dict]: ...
    def delete_user_rows(self, user_id: int, partitions: Collection[str] | None, scopes: Collection[str] | None, *,
                         conn: Connection | None = None) -> Counter: ...
    def erase_user_rows(self, user_id: int, *, days: Iterable[PartitionDay], name_words: Collection[str],
                        names: Callable[[str], bool], named_in: Collection[str], subject_key: str,
                        conn: Connection | None = None) -> tuple[Counter, set[PartitionDay]]: ...
    def last_action_id(self, *, conn: Connection | None = None) -> int: ...
    def purge_deleted_text(self) -> None: ...
    def drop_actions(self, subject_key: str, *, after_id: int, conn: Connection | None = None) -> int: ...
    def rekey_error_texts(self, user_id: int, subject_key: str, *, conn: Connection | None = None) -> int: ...


def _known(table: sa.Table) -> sa.Table:
    """Our description of a reflected table (typed values: dates, times, JSON) when it has the
    same columns; else the reflected one (a table this code does not know yet is still found)."""
    ours = metadata.tables.get(table.name)
    return ours if ours is not None and set(ours.c.keys()) == set(table.c.keys()) else table


def _ordered(table: sa.Table) -> list:
    return list(table.primary_key.columns) or list(table.c)


class UsersStore:
    # ------------------------------------------------------------------ reads

    def _reflected(self, conn: Connection) -> list[sa.Table]:
        # not the search index: it copies other tables' rows and its triggers keep it in step (an
        # FTS5 table must never be deleted from directly: its external content would be gone first)
        meta = sa.MetaData()
        meta.reflect(conn, only=lambda name, _: not is_search_index(name))
        return [_known(t) for t in meta.sorted_tables]

    def rows_of_user(self, user_id: int) -> dict[str, list[dict]]:
        """Every row about or by the user, from one snapshot of the schema: each table with a
        user_id column (its rows of the user), and control_actions (the user as subject or as
        requester). Tables by name, rows in key order."""
        out: dict[str, list[dict]] = {}
        with self.reading("reading a user's rows") as conn:
            for table in self._reflected(conn):
                if table.name == control_actions.name:
                    c = table.c
                    where = sa.or_(c.subject_key == str(user_id), c.requested_by == user_id)
                elif USER_COLUMN in table.c:
                    where = table.c[USER_COLUMN] == user_id
                else:
                    continue
                q = sa.select(table).where(where).order_by(*_ordered(table))
                out[table.name] = [dict(r._mapping) for r in conn.execute(q)]
        return out

    def summaries_of_user(self, user_id: int) -> dict[str, list[dict]]:
        """The user's daily and historical summaries, every partition and day, by (partition, day)."""
        out = {}
        with self.reading("reading a user's summaries") as conn:
            for table in (daily_summaries, historical_summaries):
                q = sa.select(table).where(table.c.user_id == user_id).order_by(table.c.partition, table.c.day)
                out[table.name] = [dict(r._mapping) for r in conn.execute(q)]
        return out

    def messages_naming_user(self, user_id: int) -> list[dict]:
        """Partition, guild and time of other people's messages that mention the user (<@id>,
        <@!id>) or reply to one of the user's messages: their partition-days render the user's name."""
        c = chat_history.c
        mine = chat_history.alias("theirs")
        mention = sa.or_(c.text.contains(f"<@{user_id}>", autoescape=True),
                         c.text.contains(f"<@!{user_id}>", autoescape=True))
        replies = (sa.select(c.partition, c.guild_id, c.ts)
                   .join(mine, sa.and_(mine.c.channel_id == c.channel_id, mine.c.message_id == c.reply_to))
                   .where(mine.c.user_id == user_id, c.user_id != user_id))
        mentions = sa.select(c.partition, c.guild_id, c.ts).where(mention, c.user_id != user_id)
        return self.rows("reading mentions of a user", sa.union(mentions, replies))

    # ------------------------------------------------------------------ writes

    def delete_user_rows(self, user_id: int, partitions: Collection[str] | None, scopes: Collection[str] | None, *,
                         conn: Connection | None = None) -> Counter:
        """Delete the user's daily and historical summaries, facts and in-chat requests of
        `partitions`, and their profiles and contexts of `scopes` (None: every one). Returns the
        rows deleted per table."""
        with self.writing_in("clearing a user's memory", conn) as cx:
            return _delete_derived(cx, user_id, partitions, scopes)

    def erase_user_rows(self, user_id: int, *, days: Iterable[PartitionDay], name_words: Collection[str],
                        names: Callable[[str], bool], named_in: Collection[str], subject_key: str,
                        conn: Connection | None = None) -> tuple[Counter, set[PartitionDay]]:
        """Every row of the user in every table with a user_id column (found by reflection: a
        table added later is reached too); every summary of the partition-days `days` (they
        quoted or named the user) and the historical summaries and contexts built from them;
        other users' summaries, facts, profiles and contexts whose text `names` the user
        (`name_words`: words a candidate text must contain, to narrow the read; `named_in`: the
        partitions where the user has a name — only their rows, and the contexts and profiles of
        scopes that may read them, can render it). The user's
        control_actions rows are re-keyed to `subject_key` and lose the user's id as requester.
        Returns the rows per table and every partition-day whose summaries were deleted (for
        the next run to make again)."""
        days = set(days)
        with self.writing_in("erasing a user", conn) as cx:
            counts = _delete_derived(cx, user_id, None, None)
            counts += _delete_partition_days(cx, days)
            named = _delete_naming(cx, user_id, name_words, names, named_in)
            counts += named["counts"]
            days |= named["days"]
            counts += _delete_built_from(cx, days, named["historicals"])
            for table in self._reflected(cx):
                if USER_COLUMN in table.c:
                    counts[table.name] += cx.execute(sa.delete(table).where(table.c[USER_COLUMN] == user_id)).rowcount
            c = control_actions.c
            counts["control_actions"] += cx.execute(sa.update(control_actions).where(
                c.subject_key == str(user_id)).values(subject_key=subject_key)).rowcount
            cx.execute(sa.update(control_actions).where(c.requested_by == user_id).values(requested_by=None))
            return counts, days

    def last_action_id(self, *, conn: Connection | None = None) -> int:
        """The newest control_actions id (0: none yet)."""
        with self.writing_in("reading control actions", conn) as cx:
            return cx.execute(sa.select(sa.func.max(control_actions.c.id))).scalar() or 0

    def purge_deleted_text(self) -> None:
        """After a clear or an erase has committed, on SQLite: merge the full-text index's segments
        (FTS5 keeps a deleted item's terms in its old segments until they merge) and truncate the
        write-ahead log (it holds page images from before the delete). With secure_delete on
        (pipeline/db/engine.py) the deleted text is then gone from the files. A reader holding an
        old snapshot can keep the log from being truncated: best effort, done again next time.
        The merge rewrites the whole full-text index: about 3 s at 1M items on this project's
        2-CPU machine (an FTS5 table of 1M short texts) — fine for a clear or an erase, too slow
        for a forget, which only removes the fact from search.
        PostgreSQL: dead rows are reclaimed by (auto)vacuum, which this does not force."""
        if self.dialect != "sqlite":
            return
        with self.transaction() as cx:
            cx.execute(sa.text(f"INSERT INTO {FTS_TABLE} ({FTS_TABLE}) VALUES ('optimize')"))
        with self.reading("truncating the write-ahead log") as cx:
            cx.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")

    def drop_actions(self, subject_key: str, *, after_id: int, conn: Connection | None = None) -> int:
        """Delete the subject's control_actions rows newer than `after_id`: a control that did its
        work through another one (a clear deleting messages) records it once, in its own row."""
        c = control_actions.c
        with self.writing_in("folding control actions", conn) as cx:
            return cx.execute(sa.delete(control_actions).where(c.subject_key == subject_key, c.id > after_id)).rowcount

    def rekey_error_texts(self, user_id: int, subject_key: str, *, conn: Connection | None = None) -> int:
        """The user's id in the error texts operators read (a worker's failed job names the user
        of its first merge: pipeline_runs.error, scheduler_state.last_error) becomes `subject_key`,
        like their audit rows. Returns the rows changed."""
        changed = 0
        whole = re.compile(rf"(?<!\d){user_id:d}(?!\d)")  # the id, not digits of a longer number
        with self.writing_in("re-keying error texts", conn) as cx:
            for table, column in ((pipeline_runs, "error"), (scheduler_state, "last_error")):
                keys, col = list(table.primary_key.columns), table.c[column]
                for row in cx.execute(sa.select(*keys, col).where(col.contains(str(user_id), autoescape=True))):
                    text = whole.sub(subject_key, row[-1])
                    if text != row[-1]:
                        cx.execute(sa.update(table).where(*(k == v for k, v in zip(keys, row))).values({column: text}))
                        changed += 1
        return changed


# ---------------------------------------------------------------------- inside a transaction

def _delete_derived(conn: Connection, user_id: int, partitions: Collection[str] | None,
                    scopes: Collection[str] | None) -> Counter:
    counts: Counter = Counter()
    for table in USER_DERIVED:
        where = [table.c.user_id == user_id]
        within = scopes if "scope" in table.c else partitions
        if within is not None:
            if not within:
                continue
            where.append(table.c["scope" if "scope" in table.c else "partition"].in_(sorted(within)))
        counts[table.name] += conn.execute(sa.delete(table).where(*where)).rowcount
    return counts


def _delete_partition_days(conn: Connection, days: set[PartitionDay]) -> Counter:
    """Every user's summaries of these partition-days, and the partition-days themselves (so
    the next run makes them again, whatever their age)."""
    counts: Counter = Counter()
    for table in (daily_summaries, partition_days):
        for p, d in sorted(days):
            counts[table.name] += conn.execute(sa.delete(table).where(
                table.c.partition == p, table.c.day == d)).rowcount
    return counts


def _delete_naming(conn: Connection, user_id: int, words: Collection[str], names: Callable[[str], bool],
                   named_in: Collection[str]) -> dict:
    """Other users' rows whose text names the user: deleted. Rows of partitions in `named_in`,
    and contexts and profiles of those scopes or of scopes that read other partitions too (a
    restricted channel reads its guild, a DM its owner's partitions); a guild the user never
    wrote in renders no name of theirs. Returns the counts, the partition-days of the daily
    summaries deleted, and the historical rows deleted."""
    counts: Counter = Counter()
    found_days: set[PartitionDay] = set()
    historicals: set[PartitionDay] = set()
    within = sorted(named_in)
    for table, cols in NAMING_TEXTS if words and within else ():
        if "partition" in table.c:
            where = table.c.partition.in_(within)
        else:
            where = sa.or_(table.c.scope.in_(within), table.c.scope.startswith("channel:"),
                           table.c.scope.startswith("dm:"))
        keys = list(table.primary_key.columns)
        hit = sa.or_(*(table.c[col].icontains(w, autoescape=True) for col in cols for w in sorted(words)))
        q = sa.select(*keys, *(table.c[col] for col in cols)).where(table.c.user_id != user_id, where, hit)
        for row in list(conn.execute(q)):
            texts = [t for t in row[len(keys):] if t]
            if not any(names(t) for t in texts):
                continue
            key = dict(zip((k.name for k in keys), row[:len(keys)]))
            counts[table.name] += conn.execute(sa.delete(table).where(
                *(table.c[k] == v for k, v in key.items()))).rowcount
            if table is daily_summaries:
                found_days.add((key["partition"], key["day"]))
            elif table is historical_summaries:
                historicals.add((key["partition"], key["day"]))
    counts += _delete_partition_days(conn, found_days)
    return {"counts": counts, "days": found_days, "historicals": historicals}


def _delete_built_from(conn: Connection, days: set[PartitionDay], historicals: set[PartitionDay]) -> Counter:
    """The historical summaries whose week holds one of `days` (days 2-7 of their day 1), and
    every context made from a deleted daily or historical summary (its `inputs` name them)."""
    counts: Counter = Counter()
    h = historical_summaries.c
    for p, d in sorted(days):
        q = sa.select(h.partition, h.day).where(h.partition == p, h.day > d, h.day <= d + dt.timedelta(days=6))
        historicals |= {(r.partition, r.day) for r in conn.execute(q)}
    for p, d in sorted(historicals):
        counts[historical_summaries.name] += conn.execute(sa.delete(historical_summaries).where(
            h.partition == p, h.day == d)).rowcount
    gone = {(p, d.isoformat()) for p, d in days}, {(p, d.isoformat()) for p, d in historicals}
    c = memory_context.c
    for row in list(conn.execute(sa.select(c.scope, c.user_id, c.inputs))):
        inputs = row.inputs or {}
        if any((p, d) in gone[0] for p, d, *_ in inputs.get("day1", ())) or \
                any((p, d) in gone[1] for p, d, *_ in inputs.get("historical", ())):
            counts[memory_context.name] += conn.execute(sa.delete(memory_context).where(
                c.scope == row.scope, c.user_id == row.user_id)).rowcount
    return counts

