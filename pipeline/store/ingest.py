"""Ingest: messages, members and channels, written inside the importer's one transaction.

PostgreSQL copies a batch's new messages straight into chat_history (binary COPY) and the
others into a per-transaction staging table, then one INSERT … SELECT … ON CONFLICT (the named
queries `pg_copy_new`, `pg_staging_*` in sql/queries.sql; see below); SQLite
takes one executemany upsert of plain tuples (`sqlite_messages_upsert`), ten rows a statement.
The importer's rows come ready (`write_message_records`: tuples in table order, made by
pipeline/ingest/batches.py, SQLite's times already text); dicts given to `write_messages` become
such tuples once, here, with no per-value type processing: timestamps are checked aware and
rendered once (UTC text for SQLite; psycopg sends datetimes as they are). Members: one statement
(PostgreSQL: a JSON array; SQLite: `sqlite_members_upsert` of plain values). The stored copies of
a batch's messages are read with one statement per batch (`*_stored_messages`); on PostgreSQL the
importer first tries a batch as all new without that read (`copy_new_messages`).
Both: idempotent by (channel id, message id); a strictly newer edited_ts replaces text and
edited_ts, nothing else changes (author_name keeps the name at the message's time), and never
for another author (the importer refuses such a copy first; the upserts would leave the stored
message alone).
"""

from __future__ import annotations

import datetime as dt
import itertools
import operator
import os
from typing import Any, Collection, Iterable, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.queries import query
from ..db.tables import channels, chat_history
from ..utc_text import utc_texts
from .base import JSON_TEXT, Rows, chunks, insert_for, select_in

UTC = dt.timezone.utc
SORT_THREADS = 4  # SQLite's helper threads for an index build (restore_message_indexes)
# From this many new messages on (then at each doubling), an import asks whether to build
# chat_history's secondary indexes at its end instead of row by row (`defer_message_indexes`).
# One batch: the rule pays at any size (the table is then at most twice the new rows, and a build
# over it costs less than the upkeep of the new ones). Asked from 100,000 instead, the first
# 100,000 rows of every import paid the upkeep: into an empty SQLite file (/dev/shm), 150,000
# messages 47.1k vs 60.6k msgs/s, 300,000 messages 52.7k vs 55.9k (means of 4 alternating runs).
DEFER_INDEXES_AFTER = 5_000
# PostgreSQL: how long an import waits for chat_history's lock to drop its indexes before it
# keeps them instead. While it waits, every later statement on the table that holds no lock on it
# yet (a bot's insert) queues behind it: short, and well under PostgreSQL's default deadlock_timeout
# (1 s), so a session waiting on the import's rows (a duplicate key) meets a given-up wait rather
# than a deadlock check. A bot's insert transaction takes milliseconds.
DEFER_LOCK_TIMEOUT = "200ms"
MESSAGE_COLUMNS = tuple(c.name for c in chat_history.columns)
MESSAGE_IDENTITY = ("user_id", "ts", "reply_to")  # what a later copy of a message (an edit) may not change
_MESSAGE_VALUES = operator.itemgetter(*MESSAGE_COLUMNS)
_MESSAGE_TIMES = tuple(i for i, c in enumerate(chat_history.columns)
                       if isinstance(getattr(c.type, "impl", c.type), sa.DateTime))


_JSON = JSON_TEXT


class IngestStorage(Protocol):
    """What the importer uses (pipeline/ingest/writer.py)."""

    def transaction(self): ...
    def write_messages(self, conn: Connection, rows: Rows, stored: Collection[tuple[int, int]] | None = None) -> None: ...
    def write_message_records(self, conn: Connection, records: list[tuple], stored: Collection[tuple[int, int]]) -> None: ...
    def copy_new_messages(self, conn: Connection, records: list[tuple]) -> bool: ...
    def write_members(self, conn: Connection, rows: Iterable[dict]) -> None: ...
    def write_channels(self, conn: Connection, rows: Iterable[dict]) -> None: ...
    def mark_group_dms(self, conn: Connection, channel_ids: Iterable[int]) -> None: ...
    def stored_channels(self, conn: Connection, channel_ids: Iterable[int]) -> dict[int, dict]: ...
    def stored_messages(self, conn: Connection, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], dict]: ...
    def defer_message_indexes(self, conn: Connection, new: int) -> list[str] | None: ...
    def restore_message_indexes(self, conn: Connection, statements: list[str]) -> None: ...


class IngestStore:
    def write_messages(self, conn: Connection, rows: Rows,
                       stored: Collection[tuple[int, int]] | None = None) -> None:
        """Upsert a batch inside the caller's transaction. A row may leave out optional columns
        (NULL); a naive timestamp fails as a StatementError, before anything is sent. `stored`:
        the (channel id, message id) keys of the rows already stored, as `stored_messages` has just
        read them in this transaction (PostgreSQL then does not ask again); None: asked here."""
        if not rows:
            return
        postgres = conn.dialect.name == "postgresql"
        sql = query("pg_staging_copy" if postgres else "sqlite_messages_upsert")
        try:
            records = _records(rows, not postgres)
        except ValueError as exc:  # like SQLite's bind error: a StatementError (-> StoreError)
            raise sa.exc.StatementError(str(exc), sql, None, exc) from exc
        self.write_message_records(conn, records, stored)

    def write_message_records(self, conn: Connection, records: list[tuple],
                              stored: Collection[tuple[int, int]] | None = None) -> None:
        """write_messages of rows made ready (the importer's, pipeline/ingest/batches.py): values
        in chat_history's column order, every column there, times in UTC — on SQLite as its stored
        text, on PostgreSQL aware datetimes. Nothing is converted or checked again here."""
        if not records:
            return
        if conn.dialect.name == "postgresql":
            _pg_copy_messages(conn, records, stored)
        else:
            _sqlite_upsert(conn, query("sqlite_messages_upsert"), records)

    def copy_new_messages(self, conn: Connection, records: list[tuple]) -> bool:
        """PostgreSQL: copy a batch of ready rows (as write_message_records takes them) straight
        into chat_history on the guess that none of them is stored yet, without reading first —
        under a savepoint, so that when one is (an earlier import, an earlier batch of this one,
        another writer's), nothing of the batch is kept and False is returned; the caller then
        reads what is stored and writes the batch as ever. True: every row was new and is written.
        Other databases: False, and nothing is done (SQLite's upsert costs the same either way)."""
        if not records or conn.dialect.name != "postgresql":
            return False
        return _pg_copy(conn, "pg_copy_new", records, savepoint=True)

    def write_members(self, conn: Connection, rows: Iterable[dict[str, Any]]) -> None:
        rows = list(rows)
        if rows and conn.dialect.name == "postgresql":  # one statement, not one per row
            conn.exec_driver_sql(query("pg_members_upsert"), {"members": _JSON.encode(rows).decode()})
        elif rows:
            try:  # seen_at as SQLite stores it (UtcDateTime's text), all at once
                seen = utc_texts([_utc(row["seen_at"], "seen_at") for row in rows])
            except ValueError as exc:  # a naive time: a StatementError, as the table's type raises it
                raise sa.exc.StatementError(str(exc), "sqlite_members_upsert", None, exc) from exc
            conn.exec_driver_sql(query("sqlite_members_upsert"), [
                (row["partition"], row["user_id"], row["display_name"], at) for row, at in zip(rows, seen)])

    def write_channels(self, conn: Connection, rows: Iterable[dict[str, Any]]) -> None:
        rows = list(rows)
        if rows:
            stmt = insert_for(conn)(channels)
            group = sa.or_(channels.c.is_group, stmt.excluded.is_group)  # a group flag once seen wins
            conn.execute(stmt.on_conflict_do_update(
                index_elements=[channels.c.channel_id],
                set_={"is_group": group,
                      # one-to-one only when said so and never said to be a group (fail closed)
                      "one_to_one": sa.and_(sa.or_(channels.c.one_to_one, stmt.excluded.one_to_one), sa.not_(group)),
                      "name": sa.func.coalesce(stmt.excluded.name, channels.c.name)}), rows)

    def mark_group_dms(self, conn: Connection, channel_ids: Iterable[int]) -> None:
        """Mark those of these DMs that two people have written in as groups, for good: retention,
        a deletion or an erase may later take the second writer's messages, never the audience
        they wrote to (a DM is one-to-one only while one person has ever written in it)."""
        ch, a, b = channels.c, chat_history.alias("a").c, chat_history.alias("b").c
        first = (sa.select(b.user_id).where(b.partition == ch.partition).limit(1)
                 .correlate(channels).scalar_subquery())
        second = sa.exists().where(a.partition == ch.partition, a.user_id != first).correlate(channels)
        for chunk in chunks(channel_ids):
            conn.execute(sa.update(channels).where(ch.channel_id.in_(chunk), ch.visibility == "dm",
                                                   sa.not_(ch.is_group), second).values(is_group=True, one_to_one=False))

    def stored_channels(self, conn: Connection, channel_ids: Iterable[int]) -> dict[int, dict]:
        """Guild, visibility and partition of the channels already stored, read inside the
        caller's transaction (ingest refuses to move a channel to another partition)."""
        cols = (channels.c.channel_id, channels.c.guild_id, channels.c.visibility, channels.c.partition)
        rows = select_in(conn, lambda ids: sa.select(*cols).where(channels.c.channel_id.in_(ids)), channel_ids)
        return {r.channel_id: dict(r._mapping) for r in rows}

    def stored_messages(self, conn: Connection, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], dict]:
        """Author, time, reply and edit time of the (channel id, message id) messages already
        stored, read inside the caller's transaction in one statement (ingest refuses a copy that
        changes the first three, and counts a newer edit as one)."""
        keys = list(keys)
        if not keys:
            return {}
        found = _stored(conn, keys)
        ts = chat_history.c.ts.type.result_processor(conn.dialect, None) or (lambda v: v)
        return {(channel_id, message_id): {"user_id": user_id, "ts": ts(at), "reply_to": reply_to,
                                           "edited_ts": ts(edited) if edited is not None else None}
                for channel_id, message_id, user_id, at, reply_to, edited in found}

    def defer_message_indexes(self, conn: Connection, new: int) -> list[str] | None:
        """When chat_history held no more rows before this import than the `new` ones it has added
        so far (the writer asks from DEFER_INDEXES_AFTER on, and at each doubling), drop its
        secondary indexes inside the import's transaction and return their CREATE statements, for
        `restore_message_indexes` at the import's end; else None. One build over all the rows
        costs less than half of keeping the indexes up to date row by row (SQLite, 1.05M messages:
        3.2 s to build, 7.8 s of upkeep; PostgreSQL, 1M rows: 1.6-2.0 s to build, 6-8 s of upkeep),
        and a rollback restores them with everything else. The primary key and any unique index
        stay: the writes need them.
        PostgreSQL: a dropped index holds the table's ACCESS EXCLUSIVE lock until the import
        commits — a bot's inserts into chat_history (and anything reading it) wait until then;
        reads of context rows do not. The lock is asked for with a lock_timeout of
        DEFER_LOCK_TIMEOUT: when another session holds the table (a run reading it, a bot's open
        transaction), the import keeps the indexes rather than queue everyone behind it (None).
        SQLite's one writer makes the bot wait anyway."""
        postgres = conn.dialect.name == "postgresql"
        if postgres:  # rows now = rows before + new: counted up to 2 * new + 1, a large table never whole
            now = conn.exec_driver_sql(query("pg_messages_count_upto"), {"upto": 2 * new + 1}).scalar_one()
        else:
            now = conn.exec_driver_sql(query("sqlite_messages_count_upto"), (2 * new + 1,)).scalar_one()
        if now > 2 * new:
            return None
        indexes = conn.exec_driver_sql(query("pg_message_indexes" if postgres else "sqlite_message_indexes")).all()
        if not indexes:
            return None
        if postgres:
            return _pg_drop_indexes(conn, indexes)
        for name, _sql in indexes:
            conn.exec_driver_sql('DROP INDEX "{}"'.format(name.replace('"', '""')))  # from sqlite_master
        return [sql for _name, sql in indexes]

    def restore_message_indexes(self, conn: Connection, statements: list[str]) -> None:
        """Build the indexes `defer_message_indexes` dropped, from their own CREATE statements,
        with SQLite's sorter allowed helper threads (PRAGMA threads, one per CPU up to
        SORT_THREADS; the connection's own setting back afterwards). The three indexes over 1.05M
        messages, 2 CPUs, /dev/shm: 2.0-2.1 s without, 1.4 s with 2 threads (1.6-1.7 s with 1,
        1.4-1.5 s with 4). PostgreSQL: the statements as they are (its own build uses
        max_parallel_maintenance_workers; a larger maintenance_work_mem bought nothing here)."""
        if conn.dialect.name == "postgresql":
            for sql in statements:
                conn.exec_driver_sql(sql)
            return
        before = conn.exec_driver_sql("PRAGMA threads").scalar_one()
        conn.exec_driver_sql(f"PRAGMA threads = {min(os.cpu_count() or 1, SORT_THREADS):d}")
        try:
            for sql in statements:
                conn.exec_driver_sql(sql)
        finally:
            conn.exec_driver_sql(f"PRAGMA threads = {int(before):d}")

    def count_messages(self) -> int:
        with self.reading("counting messages") as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(chat_history)).scalar_one()


# PostgreSQL bulk ingest. COPY has no ON CONFLICT. A batch's messages whose key is not stored
# (one read, or none: `copy_new_messages` guesses that no key is) are copied straight into
# chat_history — the fast path of every import of new messages, about 1.3x the upsert's speed
# here (bench/sections/ingest.py) — under a savepoint: should a concurrent writer store one of
# them meanwhile, the COPY fails on the key, is rolled back to the savepoint, and those rows join
# the others. The others (stored already: a re-import,
# an edit) go COPY -> temporary staging table -> one upsert into chat_history. All on the
# caller's connection and in its transaction: a failed import rolls back everything alike. The
# staging table lives as long as the transaction (ON COMMIT DROP; a rollback undoes its CREATE),
# so whether it exists is asked of the database and never remembered in Python.

def _pg_drop_indexes(conn: Connection, indexes: list) -> list[str] | None:
    """Drop `indexes` (name, CREATE statement) under a savepoint, waiting at most
    DEFER_LOCK_TIMEOUT for the table's lock; the session's lock_timeout is put back after. None
    (nothing dropped) when the lock did not come in time."""
    dbapi = conn.dialect.loaded_dbapi
    before = conn.exec_driver_sql("SELECT current_setting('lock_timeout')").scalar_one()
    conn.exec_driver_sql("SELECT set_config('lock_timeout', %(wait)s, true)", {"wait": DEFER_LOCK_TIMEOUT})
    try:
        with conn.begin_nested():
            for name, _sql in indexes:  # quoted by the catalog (regclass), never input
                conn.exec_driver_sql(f"DROP INDEX {name}")
    except sa.exc.OperationalError as exc:
        if not isinstance(exc.orig, dbapi.errors.LockNotAvailable):
            raise
        return None
    finally:
        conn.exec_driver_sql("SELECT set_config('lock_timeout', %(wait)s, true)", {"wait": before})
    return [sql for _name, sql in indexes]


def _pg_copy_messages(conn: Connection, records: list[tuple], stored: Collection[tuple[int, int]] | None) -> None:
    if stored is None:
        stored = {(channel_id, message_id) for channel_id, message_id, *_ in _stored(conn, [(r[2], r[0]) for r in records])}
    new = [r for r in records if (r[2], r[0]) not in stored] if stored else records
    merge = [r for r in records if (r[2], r[0]) in stored] if stored else []
    if new and not _pg_copy(conn, "pg_copy_new", new, savepoint=True):
        merge = records  # a concurrent writer stored one of them: all through the upsert
    if merge:
        if conn.exec_driver_sql(query("pg_staging_exists")).scalar_one():
            conn.exec_driver_sql(query("pg_staging_truncate"))
        else:
            conn.exec_driver_sql(query("pg_staging_create"))
        _pg_copy(conn, "pg_staging_copy", merge, savepoint=False)
        conn.exec_driver_sql(query("pg_staging_upsert"))


# executemany binds and steps a statement once per parameter row, and that per-execution cost,
# not SQLite's insert (0.43 s for the same rows by INSERT … SELECT), was most of it: 1,050,012
# pre-built rows into a bare table in /dev/shm took 5.1 s one row a statement, 3.3 s ten (plus
# 0.4 s to flatten them), 3.5 s fifty, 3.7 s two hundred.
_ROWS_PER_STATEMENT = 10
_MANY_ROWS: dict[str, str] = {}


def _sqlite_upsert(conn: Connection, sql: str, records: list[tuple]) -> None:
    """The upsert `sql` (one row of placeholders; any other shape: a row at a time) over
    `records`, ten rows a statement. SQLite upserts the rows of one VALUES list one after the
    other, each seeing the ones before it (a key twice: the second updates the first), as
    executemany did."""
    k = _ROWS_PER_STATEMENT
    if sql not in _MANY_ROWS:
        values = "(" + ", ".join("?" * len(MESSAGE_COLUMNS)) + ")"
        _MANY_ROWS[sql] = sql.replace(values, ", ".join([values] * k), 1) if values in sql else ""
    whole = len(records) // k * k if _MANY_ROWS[sql] else 0
    if whole:
        flat = itertools.chain.from_iterable
        conn.exec_driver_sql(_MANY_ROWS[sql], [tuple(flat(records[i:i + k])) for i in range(0, whole, k)])
    if whole < len(records):
        conn.exec_driver_sql(sql, records[whole:])


def _stored(conn: Connection, keys: list[tuple[int, int]]):
    """(channel id, message id, user id, ts, reply to, edited ts) of the stored messages among `keys`: one
    statement, the keys sent as one JSON text (both databases read it)."""
    keys_json = _JSON.encode(keys).decode()
    if conn.dialect.name == "postgresql":
        return conn.exec_driver_sql(query("pg_stored_messages"), {"keys": keys_json})
    return conn.exec_driver_sql(query("sqlite_stored_messages"), (keys_json,))


def _pg_copy(conn: Connection, name: str, records: list[tuple], *, savepoint: bool) -> bool:
    """Binary COPY (about 3x faster than text here; it needs each column's exact type) on the
    caller's transaction. With `savepoint`, a key already stored rolls back to it: False."""
    copy_sql = query(name)
    raw = conn.connection.driver_connection  # the psycopg connection: same session, same transaction
    dbapi = conn.dialect.loaded_dbapi
    try:
        with raw.cursor() as cur:
            if savepoint:
                cur.execute("SAVEPOINT mempipe_copy")
            try:
                with cur.copy(copy_sql) as copy:
                    copy.set_types(_pg_types(conn))
                    write = copy.write_row
                    for record in records:
                        write(record)
            except dbapi.errors.UniqueViolation:
                if not savepoint:
                    raise
                cur.execute("ROLLBACK TO SAVEPOINT mempipe_copy")
                return False
            if savepoint:
                cur.execute("RELEASE SAVEPOINT mempipe_copy")
            return True
    except dbapi.Error as exc:  # a SQLAlchemy error like any other statement's (-> StoreError)
        raise sa.exc.DBAPIError.instance(copy_sql, None, exc, dbapi.Error, dialect=conn.dialect) from exc


def _pg_types(conn: Connection) -> list[str]:
    return [c.type.compile(dialect=conn.dialect).lower() for c in chat_history.columns]


def _records(rows: Rows, sqlite: bool) -> list[tuple]:
    """The rows as tuples in table order (a missing column is NULL), each timestamp checked aware
    and in UTC; for SQLite rendered as its stored text (pipeline/utc_text.py, to_utc_text), column
    by column (psycopg sends an aware datetime as timestamptz). ValueError names a naive one."""
    try:  # the importer's rows have every column: one C call a row
        out = list(map(_MESSAGE_VALUES, rows))
    except KeyError:
        out = [tuple(map(row.get, MESSAGE_COLUMNS)) for row in rows]
    columns = list(zip(*out))
    for i in _MESSAGE_TIMES:
        column = columns[i]
        # the importer's rows are UTC already: one pass finds any that are not
        if any(value is not None and (type(value) is not dt.datetime or value.tzinfo is not UTC) for value in column):
            column = [None if value is None else _utc(value, MESSAGE_COLUMNS[i]) for value in column]
        columns[i] = utc_texts(column) if sqlite else column
    return list(zip(*columns))


def _utc(value: Any, name: str) -> dt.datetime:
    if not isinstance(value, dt.datetime) or value.utcoffset() is None:
        raise ValueError(f"timestamps must be timezone-aware datetimes, got {name}={value!r}")
    return value.astimezone(UTC)
