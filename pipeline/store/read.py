"""The bot read path. A bot reads one row by primary key before every answer: this runs the
README's statement (`get_context` in sql/queries.sql) on a connection each thread keeps for its
reads (autocommit, so it never holds a snapshot open), without building SQLAlchemy constructs
per call. Any driver error is a StoreError.

Per call it costs what a client holding its own connection pays (bench/RESULTS.md "Bot read"):
one round trip on PostgreSQL — no pool checkout, no ping, no BEGIN/COMMIT, and a statement
prepared on the server from the first read (psycopg `prepare=True`), so the server only binds and
runs it; on both databases positional parameters and the driver's plain tuple rows (no row
factory, no dict of parameters). The pool's ping at checkout is replaced by one retry: a kept
connection that turns out to be dead (the server restarted, an idle timeout) is replaced once,
and the read raises only if the fresh connection fails too.
"""

from __future__ import annotations

import functools
import re
import threading
import weakref
from typing import Protocol

from ..db.queries import query
from ..errors import StoreError

_NAMED = re.compile(r":(\w+)")
PARAMETERS = ["scope", "user_id"]  # the order context_fast binds them in


class ReadStorage(Protocol):
    def context_fast(self, scope: str, user_id: int) -> tuple | None: ...


class _ThreadReader(threading.local):
    """This thread's read connection (a DBAPI connection of its own, never returned to the pool)
    and its cursor's methods, bound once."""

    connection = None
    cursor = None
    execute = None  # execute(sql, (scope, user_id))
    fetchone = None
    sql = None
    closer = None  # closes the connection: called on an error, by close(), or when the thread ends
    thread_end = None  # dies with this thread's copy of the local, and its finalizer runs closer

    def __init__(self, open_connections: set):  # run again in every thread, with the same set
        self.open_connections = open_connections  # every thread's, for Store.close()


class _ThreadEnd:
    pass


def _close_connection(connection, open_connections: set) -> None:
    open_connections.discard(connection)
    try:
        connection.close()
    except Exception:  # pragma: no cover - best effort on a broken connection
        pass


def positional_statement(dialect: str) -> str:
    """The get_context statement with the driver's positional placeholders, so a call binds a
    tuple instead of building a dict (PostgreSQL: `%s`; SQLite: `?`)."""
    sql = query("get_context")
    names = _NAMED.findall(sql)
    if names != PARAMETERS:  # pragma: no cover - a guard on sql/queries.sql
        raise StoreError(f"the get_context statement in sql/queries.sql must bind :scope then :user_id (found {names})")
    return _NAMED.sub("%s" if dialect == "postgresql" else "?", sql)


class ReadStore:
    _read_local: _ThreadReader | None = None  # made on the first read (setdefault: one per Store)

    def context_fast(self, scope: str, user_id: int) -> tuple | None:
        """(context, as_of_day, made_at, degraded) or None. SQLite returns days and times as text."""
        local = self._read_local or self.__dict__.setdefault("_read_local", _ThreadReader(set()))
        execute = local.execute
        if execute is None:
            return self._read_fresh(local, scope, user_id)
        try:
            execute(local.sql, (scope, user_id))
            return local.fetchone()
        except Exception as exc:
            dead = self._dead_connection(local, exc)
            self._drop_reader(local)
            if not dead:
                raise self._read_error(exc) from None
        # The kept connection was dead (the server restarted, an idle timeout): nothing was read
        # on it, so the read runs once more on a fresh connection, whose checkout pings. If that
        # fails too, it is an outage and raises.
        return self._read_fresh(local, scope, user_id)

    def _read_fresh(self, local: _ThreadReader, scope: str, user_id: int) -> tuple | None:
        try:
            self._open_reader(local)(local.sql, (scope, user_id))
            return local.fetchone()
        except StoreError:  # NoDatabaseError: no file to open, and none was made
            self._drop_reader(local)
            raise
        except Exception as exc:
            self._drop_reader(local)
            raise self._read_error(exc) from None

    def _read_error(self, exc: Exception) -> StoreError:
        return self.error("reading a context", exc)  # a PostgreSQL database not there: NoDatabaseError

    def _open_reader(self, local: _ThreadReader):
        fairy = self.engine.raw_connection()  # made as the engine makes them (SQLite pragmas); PostgreSQL: pinged
        # Detached from the pool: the thread keeps it, so it must not hold one of the pool's
        # slots, and it must never go back to the pool in autocommit (a transaction there would
        # commit statement by statement). Closed by close() or when the thread ends.
        connection = fairy.driver_connection  # (a detached one no longer says)
        fairy.detach()
        local.connection = connection
        local.open_connections.add(connection)
        local.thread_end = _ThreadEnd()
        local.closer = weakref.finalize(local.thread_end, _close_connection, connection, local.open_connections)
        local.cursor = cursor = connection.cursor()
        execute = cursor.execute
        if self.dialect == "postgresql":
            connection.autocommit = True  # one round trip: no BEGIN before the SELECT, no COMMIT after
            execute = functools.partial(cursor.execute, prepare=True)
        local.fetchone, local.sql = cursor.fetchone, positional_statement(self.dialect)
        local.execute = execute  # last: a half-made reader is never used
        return execute

    def _dead_connection(self, local: _ThreadReader, exc: Exception) -> bool:
        """Whether the driver says the connection is gone (SQLAlchemy's own disconnect test)."""
        try:
            return bool(self.engine.dialect.is_disconnect(exc, local.connection, local.cursor))
        except Exception:  # pragma: no cover - a dialect that cannot tell: not retried
            return False

    @staticmethod
    def _drop_reader(local: _ThreadReader) -> None:
        closer = local.closer
        local.connection = local.cursor = local.execute = local.fetchone = local.closer = local.thread_end = None
        if closer is not None:
            closer()

    def close(self) -> None:
        """Closes every thread's read connection (a read after this opens a new one)."""
        local = self._read_local
        if local is not None:
            self._drop_reader(local)
            for connection in list(local.open_connections):
                _close_connection(connection, local.open_connections)
        super().close()
