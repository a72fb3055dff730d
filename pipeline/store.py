"""The storage layer: the only module that runs SQL.

Every public method maps driver errors to StoreError, so a database outage raises instead of
reading as "no data". Writes that belong together share one transaction.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import re
import threading
from collections import defaultdict
from typing import Any, Iterable, Iterator, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from .db import make_engine
from .db.migrations import require_current, upgrade
from .db.queries import query
from .db.tables import (
    DERIVED_TABLES,
    channels,
    chat_history,
    daily_summaries,
    forgotten_facts,
    historical_summaries,
    members,
    memory_context,
    partition_days,
    pipeline_runs,
    user_facts,
)
from .errors import StoreError

UTC = dt.timezone.utc


def _hashable(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        import json

        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


def _insert_for(conn: Connection):
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert


def _wrap(op: str):
    def deco(fn):
        @functools.wraps(fn)
        def inner(self, *args, **kwargs):
            try:
                return fn(self, *args, **kwargs)
            except sa.exc.SQLAlchemyError as exc:
                raise StoreError(
                    f"database error while {op}: {getattr(exc, 'orig', None) or exc} "
                    f"(database: {self.safe_url})"
                ) from exc
        return inner
    return deco


class Store:
    def __init__(self, engine: Engine):
        self.engine = engine

    @classmethod
    def open(cls, url: str, *, check_schema: bool = True, pool_size: int | None = None,
             max_overflow: int | None = None) -> "Store":
        """pool_size / max_overflow (PostgreSQL only; None: make_engine's defaults) usually come
        from settings.pool_size / settings.pool_max_overflow."""
        pool = {k: v for k, v in (("pool_size", pool_size), ("max_overflow", max_overflow)) if v is not None}
        store = cls(make_engine(url, **pool))
        if check_schema:
            try:
                require_current(store.engine)
            except BaseException as exc:
                store.close()
                if not isinstance(exc, sa.exc.SQLAlchemyError):
                    raise
                raise StoreError(f"cannot open database {store.safe_url}: {getattr(exc, 'orig', None) or exc}") from exc
        return store

    @property
    def safe_url(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def upgrade(self):
        return upgrade(self.engine)

    def close(self) -> None:
        _close_read(self)  # the bot read path's per-thread connection (defined below)
        self.engine.dispose()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        try:
            with self.engine.begin() as conn:
                yield conn
        except sa.exc.SQLAlchemyError as exc:
            raise StoreError(f"database error: {getattr(exc, 'orig', None) or exc} (database: {self.safe_url})") from exc

    # ------------------------------------------------------------------ ingest

    def write_messages(self, conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
        """Upsert a batch inside the caller's transaction. Idempotent by message id; an edit
        (a newer edited_ts) replaces the text.

        PostgreSQL: COPY into a per-transaction temporary staging table, then one
        INSERT … SELECT … ON CONFLICT (see _pg_copy_messages). SQLite: one executemany upsert."""
        if not rows:
            return
        if conn.dialect.name == "postgresql":
            self._pg_copy_messages(conn, rows)
            return
        insert = _insert_for(conn)
        stmt = insert(chat_history)
        newer = sa.and_(
            stmt.excluded.edited_ts.is_not(None),
            sa.or_(chat_history.c.edited_ts.is_(None), stmt.excluded.edited_ts > chat_history.c.edited_ts),
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=[chat_history.c.message_id],
            set_={"text": stmt.excluded.text, "edited_ts": stmt.excluded.edited_ts},
            where=newer,
        )
        conn.execute(stmt, list(rows))

    # PostgreSQL bulk ingest, write_messages' helpers. COPY has no ON CONFLICT, so a batch goes
    # COPY -> temporary staging table -> one INSERT … SELECT … ON CONFLICT into chat_history,
    # all on the caller's connection and in its transaction: a failed import rolls back the
    # staged and the upserted rows alike. The staging table lives as long as the transaction
    # (ON COMMIT DROP; a rollback undoes its CREATE), so whether it exists is asked of the
    # database (to_regclass in pg_temp) and never remembered in Python, where it would go stale
    # after a rollback.

    _PG_STAGING = "mempipe_stg_chat"
    _MESSAGE_COLUMNS = tuple(c.name for c in chat_history.columns)
    _MESSAGE_TIMES = frozenset(c.name for c in chat_history.columns
                               if isinstance(getattr(c.type, "impl", c.type), sa.DateTime))
    _PG_COLUMN_LIST = ", ".join(f'"{c}"' for c in _MESSAGE_COLUMNS)
    _PG_STAGING_EXISTS = f"SELECT to_regclass('pg_temp.{_PG_STAGING}') IS NOT NULL"
    _PG_STAGING_CREATE = (f"CREATE TEMPORARY TABLE {_PG_STAGING} (LIKE chat_history INCLUDING DEFAULTS) "
                          f"ON COMMIT DROP")
    _PG_STAGING_EMPTY = f"TRUNCATE {_PG_STAGING}"
    # Binary COPY: about 3x faster than text on this data; it needs each column's exact type,
    # compiled from the table (an int8 column gets a Python int, timestamptz an aware datetime).
    _PG_STAGING_COPY = f"COPY {_PG_STAGING} ({_PG_COLUMN_LIST}) FROM STDIN (FORMAT BINARY)"
    # The Core upsert's semantics: idempotent by message id; a strictly newer edited_ts replaces
    # text and edited_ts, nothing else changes. DISTINCT ON is defensive: the importer already
    # merges a batch per message id, keeping the newest edit.
    _PG_STAGING_UPSERT = (
        f"INSERT INTO chat_history ({_PG_COLUMN_LIST})\n"
        f"SELECT DISTINCT ON (message_id) {_PG_COLUMN_LIST} FROM {_PG_STAGING}\n"
        f"ORDER BY message_id, edited_ts DESC NULLS LAST\n"
        f"ON CONFLICT (message_id) DO UPDATE SET text = EXCLUDED.text, edited_ts = EXCLUDED.edited_ts\n"
        f"WHERE EXCLUDED.edited_ts IS NOT NULL\n"
        f"  AND (chat_history.edited_ts IS NULL OR EXCLUDED.edited_ts > chat_history.edited_ts)"
    )

    @classmethod
    def _pg_copy_messages(cls, conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
        try:  # bad values fail before anything is sent, as a StatementError like SQLite's bind error
            records = [cls._pg_copy_record(r) for r in rows]
        except ValueError as exc:
            raise sa.exc.StatementError(str(exc), cls._PG_STAGING_COPY, None, exc) from exc
        # Through SQLAlchemy: it begins the transaction if nothing has yet, and wraps errors.
        if conn.exec_driver_sql(cls._PG_STAGING_EXISTS).scalar_one():
            conn.exec_driver_sql(cls._PG_STAGING_EMPTY)
        else:
            conn.exec_driver_sql(cls._PG_STAGING_CREATE)
        raw = conn.connection.driver_connection  # the psycopg connection: same session, same transaction
        dbapi = conn.dialect.loaded_dbapi
        try:
            with raw.cursor() as cur, cur.copy(cls._PG_STAGING_COPY) as copy:
                copy.set_types([c.type.compile(dialect=conn.dialect).lower() for c in chat_history.columns])
                for record in records:
                    copy.write_row(record)
        except dbapi.Error as exc:  # a SQLAlchemy error like any other statement's (-> StoreError)
            raise sa.exc.DBAPIError.instance(cls._PG_STAGING_COPY, None, exc, dbapi.Error,
                                             dialect=conn.dialect) from exc
        conn.exec_driver_sql(cls._PG_STAGING_UPSERT)

    @classmethod
    def _pg_copy_record(cls, row: dict[str, Any]) -> tuple:
        """One row for COPY: columns in table order; timestamps as aware UTC datetimes (psycopg
        sends them as timestamptz), ids as the ints given. A missing optional column is NULL,
        as in the executemany path."""
        out = []
        for name in cls._MESSAGE_COLUMNS:
            value = row.get(name)
            if value is not None and name in cls._MESSAGE_TIMES:
                if not isinstance(value, dt.datetime) or value.utcoffset() is None:
                    raise ValueError(f"timestamps must be timezone-aware datetimes, got {name}={value!r}")
                value = value.astimezone(UTC)
            out.append(value)
        return tuple(out)

    def write_members(self, conn: Connection, rows: Iterable[dict[str, Any]]) -> None:
        rows = list(rows)
        if not rows:
            return
        insert = _insert_for(conn)
        stmt = insert(members)
        stmt = stmt.on_conflict_do_update(
            index_elements=[members.c.guild_key, members.c.user_id],
            set_={"display_name": stmt.excluded.display_name, "seen_at": stmt.excluded.seen_at},
            where=stmt.excluded.seen_at >= members.c.seen_at,
        )
        conn.execute(stmt, rows)

    def write_channels(self, conn: Connection, rows: Iterable[dict[str, Any]]) -> None:
        rows = list(rows)
        if not rows:
            return
        insert = _insert_for(conn)
        stmt = insert(channels)
        stmt = stmt.on_conflict_do_update(
            index_elements=[channels.c.channel_id],
            set_={
                "is_group": sa.or_(channels.c.is_group, stmt.excluded.is_group),
                "name": sa.func.coalesce(stmt.excluded.name, channels.c.name),
            },
        )
        conn.execute(stmt, rows)

    def stored_channels(self, conn: Connection, channel_ids: Iterable[int]) -> dict[int, dict]:
        """Guild, visibility and partition of the channels already stored, read inside the
        caller's transaction (ingest refuses to move a channel to another partition)."""
        ids = sorted(set(channel_ids))
        out: dict[int, dict] = {}
        for i in range(0, len(ids), 500):
            q = sa.select(channels.c.channel_id, channels.c.guild_id, channels.c.visibility,
                          channels.c.partition).where(channels.c.channel_id.in_(ids[i:i + 500]))
            out.update({r.channel_id: dict(r._mapping) for r in conn.execute(q)})
        return out

    @_wrap("counting messages")
    def count_messages(self) -> int:
        with self.engine.connect() as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(chat_history)).scalar_one()

    # ------------------------------------------------------------------ daily stage

    @_wrap("listing partitions")
    def partitions_between(self, start: dt.datetime, end: dt.datetime, guild_id: int | None = None) -> list[dict]:
        """Partitions with at least one message in [start, end), with their guild."""
        q = (
            sa.select(chat_history.c.partition, sa.func.max(chat_history.c.guild_id).label("guild_id"))
            .where(chat_history.c.ts >= start, chat_history.c.ts < end)
            .group_by(chat_history.c.partition)
            .order_by(chat_history.c.partition)
        )
        if guild_id is not None:
            q = q.where(chat_history.c.guild_id == guild_id)
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(q)]

    @_wrap("reading messages")
    def messages_between(self, partition: str, start: dt.datetime, end: dt.datetime) -> list[dict]:
        q = (
            sa.select(chat_history.c.message_id, chat_history.c.user_id, chat_history.c.text,
                      chat_history.c.ts, chat_history.c.reply_to, chat_history.c.guild_id)
            .where(chat_history.c.partition == partition, chat_history.c.ts >= start, chat_history.c.ts < end)
            .order_by(chat_history.c.ts, chat_history.c.message_id)
        )
        with self.engine.connect() as conn:
            return list(conn.execute(q).mappings())

    @_wrap("reading reply authors")
    def authors_of(self, message_ids: Iterable[int]) -> dict[int, int]:
        ids = sorted(set(message_ids))
        out: dict[int, int] = {}
        with self.engine.connect() as conn:
            for i in range(0, len(ids), 500):
                q = sa.select(chat_history.c.message_id, chat_history.c.user_id).where(
                    chat_history.c.message_id.in_(ids[i:i + 500]))
                out.update({m: u for m, u in conn.execute(q)})
        return out

    @_wrap("reading member names")
    def member_names(self, guild_key: int, user_ids: Iterable[int]) -> dict[int, str]:
        ids = sorted(set(user_ids))
        out: dict[int, str] = {}
        with self.engine.connect() as conn:
            for i in range(0, len(ids), 500):
                q = sa.select(members.c.user_id, members.c.display_name).where(
                    members.c.guild_key == guild_key, members.c.user_id.in_(ids[i:i + 500]))
                out.update({u: n for u, n in conn.execute(q)})
        return out

    @_wrap("reading a partition-day")
    def partition_day(self, partition: str, day: dt.date) -> dict | None:
        q = sa.select(partition_days).where(partition_days.c.partition == partition, partition_days.c.day == day)
        with self.engine.connect() as conn:
            row = conn.execute(q).first()
        return dict(row._mapping) if row else None

    # ------------------------------------------------------------------ historical / merge inputs

    @_wrap("reading daily summaries")
    def dailies(self, partition: str, first: dt.date, last: dt.date, user_id: int | None = None) -> list[dict]:
        q = (
            sa.select(daily_summaries.c.partition, daily_summaries.c.day, daily_summaries.c.user_id,
                      daily_summaries.c.summary, daily_summaries.c.degraded)
            .where(daily_summaries.c.partition == partition,
                   daily_summaries.c.day >= first, daily_summaries.c.day <= last)
            .order_by(daily_summaries.c.user_id, daily_summaries.c.day)
        )
        if user_id is not None:
            q = q.where(daily_summaries.c.user_id == user_id)
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(q)]

    @_wrap("reading historical summaries")
    def historicals(self, partition: str, day: dt.date) -> dict[int, dict]:
        q = sa.select(historical_summaries).where(
            historical_summaries.c.partition == partition, historical_summaries.c.day == day)
        with self.engine.connect() as conn:
            return {r.user_id: dict(r._mapping) for r in conn.execute(q)}

    @_wrap("deleting a historical summary")
    def delete_historical(self, partition: str, user_id: int, day: dt.date) -> None:
        with self.engine.begin() as conn:
            conn.execute(sa.delete(historical_summaries).where(
                historical_summaries.c.partition == partition, historical_summaries.c.user_id == user_id,
                historical_summaries.c.day == day))

    @_wrap("reading channels")
    def channel(self, channel_id: int) -> dict | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(channels).where(channels.c.channel_id == channel_id)).first()
        return dict(row._mapping) if row else None

    @_wrap("counting DM participants")
    def partition_speakers(self, partition: str) -> set[int]:
        q = sa.select(chat_history.c.user_id).where(chat_history.c.partition == partition).distinct()
        with self.engine.connect() as conn:
            return set(conn.execute(q).scalars())

    @_wrap("listing a user's partitions")
    def user_partitions(self, user_id: int) -> list[str]:
        q = (sa.select(chat_history.c.partition).where(chat_history.c.user_id == user_id)
             .distinct().order_by(chat_history.c.partition))
        with self.engine.connect() as conn:
            return list(conn.execute(q).scalars())

    # ------------------------------------------------------------------ facts

    @_wrap("reading facts")
    def facts(self, scope: str, user_id: int) -> str:
        q = sa.select(user_facts.c.facts).where(user_facts.c.scope == scope, user_facts.c.user_id == user_id)
        with self.engine.connect() as conn:
            return conn.execute(q).scalar_one_or_none() or ""

    @_wrap("listing facts")
    def facts_scopes(self) -> list[dict]:
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(
                sa.select(user_facts.c.scope, user_facts.c.user_id).order_by(user_facts.c.scope, user_facts.c.user_id))]

    @_wrap("reading forgotten facts")
    def forgotten(self, user_ids: Iterable[int]) -> dict[int, list[str]]:
        ids = sorted(set(user_ids))
        out: dict[int, list[str]] = defaultdict(list)
        with self.engine.connect() as conn:
            for i in range(0, len(ids), 500):
                q = (sa.select(forgotten_facts.c.user_id, forgotten_facts.c.fact)
                     .where(forgotten_facts.c.user_id.in_(ids[i:i + 500]))
                     .order_by(forgotten_facts.c.id))
                for uid, fact in conn.execute(q):
                    out[uid].append(fact)
        return dict(out)

    @_wrap("writing facts")
    def write_facts(self, scope: str, user_id: int, blob: str, now: dt.datetime,
                    forgotten: str | None = None, scrub=None) -> int:
        """Store a facts blob; with `forgotten`, also record it and scrub (via the `scrub`
        text function) every stored summary and context of the user — in the same transaction."""
        with self.engine.begin() as conn:
            insert = _insert_for(conn)
            stmt = insert(user_facts).values(scope=scope, user_id=user_id, facts=blob, updated_at=now)
            conn.execute(stmt.on_conflict_do_update(
                index_elements=[user_facts.c.scope, user_facts.c.user_id],
                set_={"facts": blob, "updated_at": now}))
            if forgotten is None:
                return 0
            changed = 0
            conn.execute(sa.insert(forgotten_facts).values(scope=scope, user_id=user_id, fact=forgotten, created_at=now))
            for table, col, keys in (
                (daily_summaries, "summary", ("partition", "day", "user_id")),
                (historical_summaries, "summary", ("partition", "user_id", "day")),
                (memory_context, "context", ("scope", "user_id")),
                (user_facts, "facts", ("scope", "user_id")),
            ):
                rows = conn.execute(sa.select(*[table.c[k] for k in keys], table.c[col])
                                    .where(table.c.user_id == user_id)).all()
                for row in rows:
                    text = row[-1]
                    cleaned = scrub(text)
                    if cleaned != text:
                        conn.execute(sa.update(table).where(*[table.c[k] == row[i] for i, k in enumerate(keys)])
                                     .values({col: cleaned}))
                        changed += 1
            return changed

    # ------------------------------------------------------------------ contexts

    @_wrap("reading a context")
    def context_full(self, scope: str, user_id: int) -> dict | None:
        q = sa.select(memory_context).where(memory_context.c.scope == scope, memory_context.c.user_id == user_id)
        with self.engine.connect() as conn:
            row = conn.execute(q).first()
        return dict(row._mapping) if row else None

    @_wrap("listing contexts")
    def contexts(self, scope: str | None = None, user_id: int | None = None) -> list[dict]:
        q = sa.select(memory_context).order_by(memory_context.c.scope, memory_context.c.user_id)
        if scope is not None:
            q = q.where(memory_context.c.scope == scope)
        if user_id is not None:
            q = q.where(memory_context.c.user_id == user_id)
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(q)]

    # ------------------------------------------------------------------ runs

    @_wrap("recording a run")
    def start_run(self, kind: str, date_from, date_to, guild_id, dry_run: bool, now: dt.datetime) -> int:
        with self.engine.begin() as conn:
            return conn.execute(sa.insert(pipeline_runs).values(
                kind=kind, date_from=date_from, date_to=date_to, guild_id=guild_id, dry_run=dry_run,
                started_at=now, status="running", partition_days=0, summarizer_calls=0, prompt_tokens=0,
                output_tokens=0, cache_hits=0, fallbacks=0, errors=0, dropped_user_ids=0,
            ).returning(pipeline_runs.c.id)).scalar_one()

    @_wrap("recording a run")
    def finish_run(self, run_id: int, status: str, counts: dict[str, int], now: dt.datetime,
                   error: str | None = None) -> None:
        with self.engine.begin() as conn:
            conn.execute(sa.update(pipeline_runs).where(pipeline_runs.c.id == run_id).values(
                status=status, finished_at=now, error=error, **counts))

    @_wrap("listing runs")
    def runs(self, limit: int = 20) -> list[dict]:
        q = sa.select(pipeline_runs).order_by(pipeline_runs.c.id.desc()).limit(limit)
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(q)]

    # ------------------------------------------------------------------ inspection

    @_wrap("dumping a table")
    def dump(self, table_name: str) -> list[tuple]:
        """Every row of a derived table in key order: tests compare these byte for byte."""
        table = {t.name: t for t in DERIVED_TABLES}[table_name]
        q = sa.select(table).order_by(*table.primary_key.columns)
        with self.engine.connect() as conn:
            return [tuple(_hashable(v) for v in r) for r in conn.execute(q)]

    @_wrap("counting rows")
    def table_counts(self) -> dict[str, int]:
        with self.engine.connect() as conn:
            return {t: n for t, n in conn.execute(sa.text(query("table_counts")))}


def _facts_of_user(self: Store, user_id: int) -> list[tuple[str, str]]:
    q = (sa.select(user_facts.c.scope, user_facts.c.facts).where(user_facts.c.user_id == user_id)
         .order_by(user_facts.c.scope))
    with self.engine.connect() as conn:
        return [(s, f) for s, f in conn.execute(q)]


def _daily_of(self: Store, partition: str, day: dt.date, user_id: int) -> dict | None:
    q = sa.select(daily_summaries).where(daily_summaries.c.partition == partition,
                                         daily_summaries.c.day == day, daily_summaries.c.user_id == user_id)
    with self.engine.connect() as conn:
        row = conn.execute(q).first()
    return dict(row._mapping) if row else None


def _historical_of(self: Store, partition: str, day: dt.date, user_id: int) -> dict | None:
    q = sa.select(historical_summaries).where(
        historical_summaries.c.partition == partition, historical_summaries.c.day == day,
        historical_summaries.c.user_id == user_id)
    with self.engine.connect() as conn:
        row = conn.execute(q).first()
    return dict(row._mapping) if row else None


Store.facts_of_user = _wrap("reading facts")(_facts_of_user)
Store.daily_of = _wrap("reading a daily summary")(_daily_of)
Store.historical_of = _wrap("reading a historical summary")(_historical_of)


def _context_scopes(self: Store, prefix: str) -> list[str]:
    q = (sa.select(memory_context.c.scope).where(memory_context.c.scope.like(prefix + "%"))
         .distinct().order_by(memory_context.c.scope))
    with self.engine.connect() as conn:
        return list(conn.execute(q).scalars())


Store.context_scopes = _wrap("listing contexts")(_context_scopes)


class AdvisoryLock:
    """A PostgreSQL session advisory lock held on its own pooled connection."""

    def __init__(self, store: Store, key: int):
        self.store, self.key = store, key
        self.conn: Connection | None = None
        self.held = False

    def try_acquire(self) -> bool:
        try:
            if self.conn is None:
                self.conn = self.store.engine.connect()
            got = self.conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": self.key}).scalar_one()
            self.conn.commit()  # session-level lock: it outlives this transaction
        except sa.exc.SQLAlchemyError as exc:
            self.release()
            raise StoreError(f"database error while claiming work: {getattr(exc, 'orig', None) or exc}") from exc
        self.held = bool(got)
        return self.held

    def release(self) -> None:
        if self.conn is None:
            return
        try:
            if self.held:
                self.conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": self.key})
                self.conn.commit()
        except sa.exc.SQLAlchemyError:
            # the connection is broken: invalidate it so the pool never hands out a session that
            # might still hold the lock (the server drops it with the session)
            self.conn.invalidate()
        finally:
            self.conn.close()
            self.conn, self.held = None, False


def _advisory_lock(self: Store, key: int) -> AdvisoryLock:
    return AdvisoryLock(self, key)


Store.advisory_lock = _advisory_lock


# ---------------------------------------------------------------------- retention

_RETENTION_KEYS = {
    "chat_history": ("message_id",),
    "partition_days": ("partition", "day"),
    "daily_summaries": ("partition", "day", "user_id"),
    "historical_summaries": ("partition", "user_id", "day"),
    "memory_context": ("scope", "user_id"),
}


def _delete_older_than(self: Store, table_name: str, column: str, cutoff, batch_size: int) -> int:
    """Delete rows whose `column` < cutoff, `batch_size` rows per transaction (short locks, a
    bot's reads and a running replay are never blocked for long). Returns rows deleted."""
    from .db.tables import metadata

    table = metadata.tables[table_name]
    keys = [table.c[k] for k in _RETENTION_KEYS[table_name]]
    total = 0
    while True:
        with self.engine.begin() as conn:
            batch = conn.execute(sa.select(*keys).where(table.c[column] < cutoff).limit(batch_size)).all()
            if not batch:
                return total
            if len(keys) == 1:
                conn.execute(sa.delete(table).where(keys[0].in_([r[0] for r in batch])))
            else:
                conn.execute(sa.delete(table).where(sa.tuple_(*keys).in_([tuple(r) for r in batch])))
            total += len(batch)
        if len(batch) < batch_size:
            return total


Store.delete_older_than = _wrap("applying retention")(_delete_older_than)


# ---------------------------------------------------------------------- bulk reads, batched writes
# A nightly run touches every partition: these read what a stage needs for many items in one
# query and write many items in one transaction (each item's rows still all-or-nothing).


def _partition_days_between(self: Store, partition: str, first: dt.date, last: dt.date) -> dict[dt.date, dict]:
    q = sa.select(partition_days).where(partition_days.c.partition == partition,
                                        partition_days.c.day >= first, partition_days.c.day <= last)
    with self.engine.connect() as conn:
        return {r.day: dict(r._mapping) for r in conn.execute(q)}


def _all_forgotten(self: Store) -> dict[int, list[str]]:
    out: dict[int, list[str]] = defaultdict(list)
    with self.engine.connect() as conn:
        for uid, fact in conn.execute(sa.select(forgotten_facts.c.user_id, forgotten_facts.c.fact)
                                      .order_by(forgotten_facts.c.id)):
            out[uid].append(fact)
    return dict(out)


def _dailies_on(self: Store, days: Iterable[dt.date]) -> list[dict]:
    q = sa.select(daily_summaries).where(daily_summaries.c.day.in_(sorted(set(days))))
    with self.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(q)]


def _historicals_on(self: Store, days: Iterable[dt.date]) -> list[dict]:
    q = sa.select(historical_summaries).where(historical_summaries.c.day.in_(sorted(set(days))))
    with self.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(q)]


def _all_facts(self: Store) -> list[dict]:
    with self.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(
            sa.select(user_facts.c.scope, user_facts.c.user_id, user_facts.c.facts)
            .order_by(user_facts.c.scope, user_facts.c.user_id))]


def _context_states(self: Store) -> dict[tuple[str, int], dict]:
    cols = [memory_context.c[k] for k in ("scope", "user_id", "input_hash", "as_of_day", "degraded",
                                          "degraded_reason", "attempts")]
    with self.engine.connect() as conn:
        return {(r.scope, r.user_id): dict(r._mapping) for r in conn.execute(sa.select(*cols))}


def _all_members(self: Store) -> dict[tuple[int, int], str]:
    with self.engine.connect() as conn:
        return {(g, u): n for g, u, n in conn.execute(
            sa.select(members.c.guild_key, members.c.user_id, members.c.display_name))}


def _all_channels(self: Store) -> dict[int, dict]:
    with self.engine.connect() as conn:
        return {r.channel_id: dict(r._mapping) for r in conn.execute(sa.select(channels))}


def _dm_speaker_counts(self: Store) -> dict[str, int]:
    q = (sa.select(chat_history.c.partition, sa.func.count(sa.distinct(chat_history.c.user_id)))
         .where(chat_history.c.visibility == "dm").group_by(chat_history.c.partition))
    with self.engine.connect() as conn:
        return {p: n for p, n in conn.execute(q)}


def _write_batch(self: Store, dailies=(), historicals=(), contexts=(), touches=()) -> None:
    """One transaction for many items. A partition-day's summaries are replaced whole."""
    with self.engine.begin() as conn:
        insert = _insert_for(conn)
        if dailies:
            for record, summaries, now in dailies:
                conn.execute(sa.delete(daily_summaries).where(
                    daily_summaries.c.partition == record["partition"], daily_summaries.c.day == record["day"]))
            rows = [{"partition": record["partition"], "day": record["day"], "user_id": uid, "summary": text,
                     "input_hash": record["input_hash"], "degraded": record["degraded"], "created_at": now}
                    for record, summaries, now in dailies for uid, text in sorted(summaries.items())]
            if rows:
                conn.execute(sa.insert(daily_summaries), rows)
            stmt = insert(partition_days)
            keys = [k for k in dailies[0][0] if k not in ("partition", "day")] + ["computed_at"]
            conn.execute(stmt.on_conflict_do_update(
                index_elements=[partition_days.c.partition, partition_days.c.day],
                set_={k: stmt.excluded[k] for k in keys}),
                [{**record, "computed_at": now} for record, _s, now in dailies])
        if historicals:
            stmt = insert(historical_summaries)
            keys = [k for k in historicals[0] if k not in ("partition", "user_id", "day")]
            conn.execute(stmt.on_conflict_do_update(
                index_elements=[historical_summaries.c.partition, historical_summaries.c.user_id,
                                historical_summaries.c.day],
                set_={k: stmt.excluded[k] for k in keys}), list(historicals))
        if contexts:
            stmt = insert(memory_context)
            keys = [k for k in contexts[0] if k not in ("scope", "user_id")]
            conn.execute(stmt.on_conflict_do_update(
                index_elements=[memory_context.c.scope, memory_context.c.user_id],
                set_={k: stmt.excluded[k] for k in keys}), list(contexts))
        if touches:
            conn.execute(sa.update(memory_context)
                         .where(memory_context.c.scope == sa.bindparam("b_scope"),
                                memory_context.c.user_id == sa.bindparam("b_user"))
                         .values(as_of_day=sa.bindparam("b_day")),
                         [{"b_scope": t["scope"], "b_user": t["user_id"], "b_day": t["as_of_day"]} for t in touches])


Store.partition_days_between = _wrap("reading partition-days")(_partition_days_between)
Store.all_forgotten = _wrap("reading forgotten facts")(_all_forgotten)
Store.dailies_on = _wrap("reading daily summaries")(_dailies_on)
Store.historicals_on = _wrap("reading historical summaries")(_historicals_on)
Store.all_facts = _wrap("reading facts")(_all_facts)
Store.context_states = _wrap("reading contexts")(_context_states)
Store.all_members = _wrap("reading members")(_all_members)
Store.all_channels = _wrap("reading channels")(_all_channels)
Store.dm_speaker_counts = _wrap("counting DM participants")(_dm_speaker_counts)
Store.write_batch = _wrap("writing results")(_write_batch)


def _partitions_of_users(self: Store, user_ids: Iterable[int]) -> dict[int, list[str]]:
    ids = sorted(set(user_ids))
    out: dict[int, list[str]] = defaultdict(list)
    with self.engine.connect() as conn:
        for i in range(0, len(ids), 500):
            q = (sa.select(chat_history.c.user_id, chat_history.c.partition)
                 .where(chat_history.c.user_id.in_(ids[i:i + 500])).distinct())
            for uid, p in conn.execute(q):
                out[uid].append(p)
    return {u: sorted(ps) for u, ps in out.items()}


Store.partitions_of_users = _wrap("listing users' partitions")(_partitions_of_users)


# ---------------------------------------------------------------------- scheduler (mempipe serve)
# Per-job state and the current leader, written by the leading `mempipe serve` and read by
# `mempipe status`; and the leader's PostgreSQL lock. (The APScheduler job store is in memory:
# what has to survive a restart — when each job last ran and how it ended — lives here.)

def _scheduler_tables():
    from .db.tables import scheduler_leader, scheduler_state

    return scheduler_state, scheduler_leader


def _upsert_job_state(conn: Connection, job_id: str, values: dict[str, Any]) -> None:
    state, _ = _scheduler_tables()
    insert = _insert_for(conn)
    stmt = insert(state).values(job_id=job_id, **values)
    conn.execute(stmt.on_conflict_do_update(index_elements=[state.c.job_id],
                                            set_={k: stmt.excluded[k] for k in values}))


def _scheduler_job_started(self: Store, job_id: str, now: dt.datetime) -> None:
    with self.engine.begin() as conn:
        _upsert_job_state(conn, job_id, {"last_started_at": now, "last_outcome": "running", "last_error": None})


def _scheduler_job_finished(self: Store, job_id: str, *, outcome: str, started_at: dt.datetime,
                            now: dt.datetime, error: str | None = None, run_id: int | None = None,
                            report: dict | None = None) -> None:
    """Record how a run ended. An ok run also moves `last_ok_at` to its start: every scheduled
    fire up to then is covered by it (the catch-up rule in scheduler/schedule.py reads this)."""
    values: dict[str, Any] = {"last_finished_at": now, "last_outcome": outcome, "last_error": error,
                              "last_run_id": run_id, "last_report": report}
    if outcome == "ok":
        values["last_ok_at"] = started_at
    with self.engine.begin() as conn:
        _upsert_job_state(conn, job_id, values)


def _scheduler_next_runs(self: Store, next_runs: dict[str, dt.datetime | None]) -> None:
    with self.engine.begin() as conn:
        for job_id, at in sorted(next_runs.items()):
            _upsert_job_state(conn, job_id, {"next_run_at": at})


def _scheduler_states(self: Store) -> dict[str, dict]:
    state, _ = _scheduler_tables()
    with self.engine.connect() as conn:
        return {r.job_id: dict(r._mapping) for r in conn.execute(sa.select(state).order_by(state.c.job_id))}


def _leader_heartbeat(self: Store, holder: str, pid: int, host: str, since: dt.datetime, now: dt.datetime) -> None:
    """The leader's row (id = 1): who, since when, last heartbeat. Informational only — the
    lock (advisory lock / lock file) decides who leads."""
    _, leader = _scheduler_tables()
    with self.engine.begin() as conn:
        insert = _insert_for(conn)
        values = {"holder": holder, "pid": pid, "host": host, "since": since, "heartbeat_at": now,
                  "released_at": None}
        stmt = insert(leader).values(id=1, **values)
        conn.execute(stmt.on_conflict_do_update(index_elements=[leader.c.id],
                                                set_={k: stmt.excluded[k] for k in values}))


def _leader_released(self: Store, holder: str, now: dt.datetime) -> None:
    _, leader = _scheduler_tables()
    with self.engine.begin() as conn:
        conn.execute(sa.update(leader).where(leader.c.id == 1, leader.c.holder == holder)
                     .values(released_at=now, heartbeat_at=now))


def _scheduler_leader(self: Store) -> dict | None:
    _, leader = _scheduler_tables()
    with self.engine.connect() as conn:
        row = conn.execute(sa.select(leader).where(leader.c.id == 1)).first()
    return dict(row._mapping) if row else None


Store.scheduler_job_started = _wrap("recording a scheduler job")(_scheduler_job_started)
Store.scheduler_job_finished = _wrap("recording a scheduler job")(_scheduler_job_finished)
Store.scheduler_next_runs = _wrap("recording the schedule")(_scheduler_next_runs)
Store.scheduler_states = _wrap("reading the scheduler state")(_scheduler_states)
Store.leader_heartbeat = _wrap("recording the scheduler leader")(_leader_heartbeat)
Store.leader_released = _wrap("recording the scheduler leader")(_leader_released)
Store.scheduler_leader = _wrap("reading the scheduler leader")(_scheduler_leader)


class LeaderLock:
    """PostgreSQL: the scheduler leader's session advisory lock, on a dedicated connection (its
    own unpooled engine) held for as long as the leadership lasts. The lock lives exactly as long
    as that session: a leader that exits or is killed loses it at once (the server drops the
    session with the socket); one that vanishes without closing its socket (power loss, network
    partition) loses it when the server's TCP keepalives give up (~3 × `check_s`, set per session
    below). `alive()` asks the server whether this very session still holds the lock."""

    def __init__(self, store: Store, key: int, *, check_s: float = 10.0):
        self.url, self.safe_url, self.key = store.engine.url, store.safe_url, key
        self.check_s = max(1, round(check_s))
        self.engine: Engine | None = None
        self.conn: Connection | None = None
        self.backend_pid: int | None = None

    def _connect(self) -> Connection:
        if self.conn is None:
            s = self.check_s
            from sqlalchemy.pool import NullPool

            self.engine = sa.create_engine(self.url, poolclass=NullPool, connect_args={
                "connect_timeout": max(2, 2 * s), "keepalives": 1, "keepalives_idle": s,
                "keepalives_interval": s, "keepalives_count": 3, "tcp_user_timeout": 3 * s * 1000})
            self.conn = self.engine.connect()
            for name, value in (("tcp_keepalives_idle", s), ("tcp_keepalives_interval", s),
                                ("tcp_keepalives_count", 3), ("tcp_user_timeout", 3 * s * 1000)):
                # set_config via pg_settings: a server without the setting (tcp_user_timeout < 12) skips it
                self.conn.execute(sa.text("SELECT set_config(name, :v, false) FROM pg_settings WHERE name = :n"),
                                  {"n": name, "v": str(int(value))})
            self.conn.commit()
        return self.conn

    def try_acquire(self) -> bool:
        """Non-blocking. True when this session now holds the lock."""
        try:
            conn = self._connect()
            got = conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": self.key}).scalar_one()
            self.backend_pid = conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one() if got else None
            conn.commit()  # session-level lock: it outlives this transaction
        except sa.exc.SQLAlchemyError as exc:
            self._discard()
            raise StoreError(f"database error while taking the scheduler leader lock: "
                             f"{getattr(exc, 'orig', None) or exc} (database: {self.safe_url})") from exc
        return bool(got)

    def alive(self) -> bool:
        """Does this session still hold the lock? False when the connection dropped (a new
        session would not hold it, hence the backend pid check) or the lock is gone."""
        if self.conn is None or self.backend_pid is None:
            return False
        try:
            pid, held = self.conn.execute(sa.text(
                "SELECT pg_backend_pid(), EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' "
                "AND pid = pg_backend_pid() AND granted)")).one()
            self.conn.commit()
        except sa.exc.SQLAlchemyError:
            self._discard()
            return False
        return pid == self.backend_pid and bool(held)

    def release(self) -> None:
        """Unlock and close the dedicated connection (closing alone would also release it)."""
        if self.conn is not None and self.backend_pid is not None:
            try:
                self.conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": self.key})
                self.conn.commit()
            except sa.exc.SQLAlchemyError:
                pass  # the session is gone, and the lock with it
        self._discard()

    def _discard(self) -> None:
        if self.conn is not None:
            try:
                self.conn.invalidate()  # really close the DBAPI connection: the session ends
                self.conn.close()
            except sa.exc.SQLAlchemyError:
                pass
        if self.engine is not None:
            self.engine.dispose()
        self.conn, self.engine, self.backend_pid = None, None, None


def _leader_lock(self: Store, key: int, *, check_s: float = 10.0) -> LeaderLock:
    return LeaderLock(self, key, check_s=check_s)


Store.leader_lock = _leader_lock


# ---------------------------------------------------------------------- the bot read path
# A bot reads one row by primary key before every answer: this runs the README's statement on
# a dedicated driver connection per thread (autocommit, so it never holds a snapshot open),
# without building SQLAlchemy constructs per call. Any driver error is a StoreError.

_NAMED = re.compile(r":(\w+)")


class _ReadConnection(threading.local):
    raw = None
    driver = None
    cursor = None
    sql = None


def _context_fast(self: Store, scope: str, user_id: int):
    local = self.__dict__.get("_read_local")
    if local is None:
        local = self.__dict__.setdefault("_read_local", _ReadConnection())
    try:
        if local.driver is None:
            raw = self.engine.raw_connection()
            driver = raw.driver_connection
            sql = query("get_context")
            if self.dialect == "postgresql":
                driver.autocommit = True
                sql = _NAMED.sub(r"%(\1)s", sql)
            local.raw, local.driver, local.cursor, local.sql = raw, driver, driver.cursor(), sql
        cur = local.cursor
        cur.execute(local.sql, {"scope": scope, "user_id": user_id})
        return cur.fetchone()
    except Exception as exc:
        raw, local.raw, local.driver, local.cursor = local.raw, None, None, None
        if raw is not None:
            try:
                raw.invalidate()
            except Exception:  # pragma: no cover - best effort on a broken connection
                pass
        raise StoreError(f"database error while reading a context: {exc} (database: {self.safe_url})") from exc


def _close_read(self: Store) -> None:
    local = self.__dict__.get("_read_local")
    if local is not None and local.raw is not None:
        local.cursor.close()
        local.raw.close()
        local.raw = local.driver = local.cursor = None


Store.context_fast = _context_fast
