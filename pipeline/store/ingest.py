"""Ingest: messages, members and channels, written inside the importer's one transaction.

PostgreSQL takes a batch through binary COPY into a per-transaction staging table, then one
INSERT … SELECT … ON CONFLICT (the named queries `pg_staging_*` in sql/queries.sql); SQLite
takes one executemany upsert. Both: idempotent by (channel id, message id); a strictly newer
edited_ts replaces text and edited_ts, nothing else changes (author_name keeps the name at the
message's time), and never for another author (the
importer refuses such a copy first; the upserts would leave the stored message alone).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Any, Iterable, Protocol, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.queries import query
from ..db.tables import channels, chat_history, members
from .base import Rows, insert_for, select_in

UTC = dt.timezone.utc
MESSAGE_COLUMNS = tuple(c.name for c in chat_history.columns)
MESSAGE_IDENTITY = ("user_id", "ts", "reply_to")  # what a later copy of a message (an edit) may not change
_MESSAGE_TIMES = frozenset(c.name for c in chat_history.columns
                           if isinstance(getattr(c.type, "impl", c.type), sa.DateTime))


class IngestStorage(Protocol):
    """What the importer uses (pipeline/ingest/importer.py)."""

    def transaction(self): ...
    def write_messages(self, conn: Connection, rows: Rows) -> None: ...
    def write_members(self, conn: Connection, rows: Iterable[dict]) -> None: ...
    def write_channels(self, conn: Connection, rows: Iterable[dict]) -> None: ...
    def stored_channels(self, conn: Connection, channel_ids: Iterable[int]) -> dict[int, dict]: ...
    def stored_messages(self, conn: Connection, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], dict]: ...


class IngestStore:
    def write_messages(self, conn: Connection, rows: Rows) -> None:
        """Upsert a batch inside the caller's transaction."""
        if not rows:
            return
        if conn.dialect.name == "postgresql":
            _pg_copy_messages(conn, rows)
            return
        stmt = insert_for(conn)(chat_history)
        newer = sa.and_(
            stmt.excluded.edited_ts.is_not(None),
            sa.or_(chat_history.c.edited_ts.is_(None), stmt.excluded.edited_ts > chat_history.c.edited_ts),
            chat_history.c.user_id == stmt.excluded.user_id,
        )
        conn.execute(stmt.on_conflict_do_update(
            index_elements=[chat_history.c.channel_id, chat_history.c.message_id],
            set_={"text": stmt.excluded.text, "edited_ts": stmt.excluded.edited_ts}, where=newer), list(rows))

    def write_members(self, conn: Connection, rows: Iterable[dict[str, Any]]) -> None:
        rows = list(rows)
        if rows:
            stmt = insert_for(conn)(members)
            conn.execute(stmt.on_conflict_do_update(
                index_elements=[members.c.partition, members.c.user_id],
                set_={"display_name": stmt.excluded.display_name, "seen_at": stmt.excluded.seen_at},
                where=stmt.excluded.seen_at >= members.c.seen_at), rows)

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

    def stored_channels(self, conn: Connection, channel_ids: Iterable[int]) -> dict[int, dict]:
        """Guild, visibility and partition of the channels already stored, read inside the
        caller's transaction (ingest refuses to move a channel to another partition)."""
        cols = (channels.c.channel_id, channels.c.guild_id, channels.c.visibility, channels.c.partition)
        rows = select_in(conn, lambda ids: sa.select(*cols).where(channels.c.channel_id.in_(ids)), channel_ids)
        return {r.channel_id: dict(r._mapping) for r in rows}

    def stored_messages(self, conn: Connection, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], dict]:
        """Author, time and reply of the (channel id, message id) messages already stored, read
        inside the caller's transaction (ingest refuses a copy that changes them)."""
        by_channel: dict[int, list[int]] = defaultdict(list)
        for channel_id, message_id in keys:
            by_channel[channel_id].append(message_id)
        c = chat_history.c
        out = {}
        for channel_id, ids in sorted(by_channel.items()):
            rows = select_in(conn, lambda chunk, ch=channel_id: sa.select(c.channel_id, c.message_id, *(
                c[k] for k in MESSAGE_IDENTITY)).where(c.channel_id == ch, c.message_id.in_(chunk)), ids)
            out.update({(r.channel_id, r.message_id): {k: r._mapping[k] for k in MESSAGE_IDENTITY} for r in rows})
        return out

    def count_messages(self) -> int:
        with self.reading("counting messages") as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(chat_history)).scalar_one()


# PostgreSQL bulk ingest. COPY has no ON CONFLICT, so a batch goes COPY -> temporary staging
# table -> one upsert into chat_history, all on the caller's connection and in its transaction:
# a failed import rolls back the staged and the upserted rows alike. The staging table lives as
# long as the transaction (ON COMMIT DROP; a rollback undoes its CREATE), so whether it exists
# is asked of the database and never remembered in Python, where it would go stale.

def _pg_copy_messages(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    copy_sql = query("pg_staging_copy")
    try:  # bad values fail before anything is sent, as a StatementError like SQLite's bind error
        records = [_pg_copy_record(r) for r in rows]
    except ValueError as exc:
        raise sa.exc.StatementError(str(exc), copy_sql, None, exc) from exc
    # Through SQLAlchemy: it begins the transaction if nothing has yet, and wraps errors.
    if conn.exec_driver_sql(query("pg_staging_exists")).scalar_one():
        conn.exec_driver_sql(query("pg_staging_truncate"))
    else:
        conn.exec_driver_sql(query("pg_staging_create"))
    raw = conn.connection.driver_connection  # the psycopg connection: same session, same transaction
    dbapi = conn.dialect.loaded_dbapi
    try:
        # Binary COPY (about 3x faster than text here) needs each column's exact type.
        with raw.cursor() as cur, cur.copy(copy_sql) as copy:
            copy.set_types([c.type.compile(dialect=conn.dialect).lower() for c in chat_history.columns])
            for record in records:
                copy.write_row(record)
    except dbapi.Error as exc:  # a SQLAlchemy error like any other statement's (-> StoreError)
        raise sa.exc.DBAPIError.instance(copy_sql, None, exc, dbapi.Error, dialect=conn.dialect) from exc
    conn.exec_driver_sql(query("pg_staging_upsert"))


def _pg_copy_record(row: dict[str, Any]) -> tuple:
    """One row for COPY: columns in table order; timestamps as aware UTC datetimes (psycopg
    sends them as timestamptz). A missing optional column is NULL, as in the executemany path."""
    out = []
    for name in MESSAGE_COLUMNS:
        value = row.get(name)
        if value is not None and name in _MESSAGE_TIMES:
            if not isinstance(value, dt.datetime) or value.utcoffset() is None:
                raise ValueError(f"timestamps must be timezone-aware datetimes, got {name}={value!r}")
            value = value.astimezone(UTC)
        out.append(value)
    return tuple(out)
