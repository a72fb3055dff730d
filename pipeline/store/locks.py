"""One lock seam for everything that must not run twice at once: the run lock (runs that take
turns), per-item claims (runs that share model work), and the scheduler leader.

- PgAdvisoryLock: a PostgreSQL session advisory lock. Pooled (a connection from the engine's
  pool in autocommit, for short claims: a session lock needs no transaction, so taking and
  releasing one is a statement each, not BEGIN, statement, COMMIT) or dedicated (its own unpooled connection with TCP keepalives, for a
  leadership held for days: a leader that vanishes loses its session, and the lock, when the
  server's keepalives give up, ~3 × check_s).
- FileLock: a lock file next to a SQLite database (the OS releases it when the process dies).
- NullLock: always granted (an in-memory database, or where no other process can compete).

All take the lock without waiting (`try_acquire`), so a caller that waits polls and never blocks
its event loop.
"""

from __future__ import annotations

import hashlib
import os
from typing import Protocol

import filelock
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool

from ..db.queries import query
from ..errors import StoreError
from .base import driver_message


def lock_key(name: str) -> int:
    """A stable signed 64-bit advisory-lock key for a name ("mempipe:run", "daily:guild:1:…")."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


class Lock(Protocol):
    kind: str

    def try_acquire(self) -> bool: ...
    def alive(self) -> bool: ...
    def release(self) -> None: ...


class NullLock:
    kind = "in-memory"

    def try_acquire(self) -> bool:
        return True

    def alive(self) -> bool:
        return True

    def release(self) -> None:
        pass


class FileLock:
    kind = "lock file"

    def __init__(self, path: str):
        self.path = path
        self._lock = filelock.FileLock(path)

    def try_acquire(self) -> bool:
        try:
            self._lock.acquire(timeout=0)
            return True
        except filelock.Timeout:
            return False
        except OSError as exc:
            raise StoreError(f"cannot take the lock file {self.path}: {exc}") from exc

    def alive(self) -> bool:
        """Still held, and the file was not deleted under us."""
        return self._lock.is_locked and os.path.exists(self.path)

    def release(self) -> None:
        if self._lock.is_locked:
            self._lock.release(force=True)


class PgAdvisoryLock:
    kind = "advisory lock"

    def __init__(self, engine: Engine, name: str, *, dedicated: bool = False, check_s: float = 10.0):
        self.engine, self.name, self.key = engine, name, lock_key(name)
        self.dedicated, self.check_s = dedicated, max(1, round(check_s))
        self.safe_url = engine.url.render_as_string(hide_password=True)
        self._own_engine: Engine | None = None
        self.conn: Connection | None = None
        self.held = False
        self.backend_pid: int | None = None  # dedicated only: alive() compares it

    def _connect(self) -> Connection:
        if self.conn is not None:
            return self.conn
        if not self.dedicated:
            # autocommit for as long as it is checked out (the pool resets it on return)
            self.conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            return self.conn
        s = self.check_s
        self._own_engine = sa.create_engine(self.engine.url, poolclass=NullPool, connect_args={
            "connect_timeout": max(2, 2 * s), "keepalives": 1, "keepalives_idle": s,
            "keepalives_interval": s, "keepalives_count": 3, "tcp_user_timeout": 3 * s * 1000})
        self.conn = self._own_engine.connect()
        for name, value in (("tcp_keepalives_idle", s), ("tcp_keepalives_interval", s),
                            ("tcp_keepalives_count", 3), ("tcp_user_timeout", 3 * s * 1000)):
            self.conn.execute(sa.text(query("session_keepalive")), {"name": name, "value": str(int(value))})
        self.conn.commit()
        return self.conn

    def try_acquire(self) -> bool:
        """Non-blocking. True when this session now holds the lock."""
        try:
            conn = self._connect()
            got = conn.execute(sa.text(query("advisory_try_lock")), {"key": self.key}).scalar_one()
            if got and self.dedicated:
                self.backend_pid = conn.execute(sa.text(query("advisory_backend_pid"))).scalar_one()
            conn.commit()  # a session-level lock: it outlives this transaction
        except sa.exc.SQLAlchemyError as exc:
            self._discard()
            raise StoreError(f"database error while taking the lock {self.name!r}: "
                             f"{driver_message(exc)} (database: {self.safe_url})") from None
        self.held = bool(got)
        return self.held

    def alive(self) -> bool:
        """Does this session still hold the lock? False when the connection dropped (a new
        session would not hold it, hence the backend pid check) or the lock is gone."""
        if self.conn is None or not self.held:
            return False
        try:
            pid, held = self.conn.execute(sa.text(query("advisory_held"))).one()
            self.conn.commit()
        except sa.exc.SQLAlchemyError:
            self._discard()
            return False
        return (not self.dedicated or pid == self.backend_pid) and bool(held)

    def release(self) -> None:
        """Unlock and give the connection back (a broken one is invalidated, never pooled: the
        server drops its locks with the session)."""
        if self.conn is not None and self.held:
            try:
                self.conn.execute(sa.text(query("advisory_unlock")), {"key": self.key})
                self.conn.commit()
            except sa.exc.SQLAlchemyError:
                self._discard()
                return
        if self.conn is not None and not self.dedicated:
            self.conn.close()
            self.conn, self.held = None, False
        else:
            self._discard()

    def _discard(self) -> None:
        if self.conn is not None:
            try:
                self.conn.invalidate()  # really close the DBAPI connection: the session ends
                self.conn.close()
            except sa.exc.SQLAlchemyError:
                pass
        if self._own_engine is not None:
            self._own_engine.dispose()
        self.conn, self._own_engine, self.backend_pid, self.held = None, None, None, False


class LockStore:
    def lock(self, name: str, *, file_suffix: str | None = None, dedicated: bool = False,
             check_s: float = 10.0) -> Lock:
        """The lock called `name` on this database. PostgreSQL: an advisory lock. SQLite: a lock
        file `<database>.<file_suffix>.lock` when a suffix is given and the database is a file;
        otherwise a NullLock (SQLite has one writer at a time anyway)."""
        if self.dialect == "postgresql":
            return PgAdvisoryLock(self.engine, name, dedicated=dedicated, check_s=check_s)
        database = self.engine.url.database
        if file_suffix and database and database != ":memory:":
            return FileLock(f"{database}.{file_suffix}.lock")
        return NullLock()
