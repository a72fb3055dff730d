"""One leader per database: only the process holding the lock runs the scheduler.

- PostgreSQL: a session advisory lock (`pg_try_advisory_lock(LEADER_KEY)`) on a dedicated
  connection held for the whole leadership (store.LeaderLock). A leader that dies loses its
  session and with it the lock; a leader whose connection drops sees it on its next heartbeat
  (`alive()`) and stops its jobs.
- SQLite: a file lock `<database file>.leader.lock` (filelock), taken without waiting. The OS
  releases it when the process dies.

A standby calls `try_acquire()` every `scheduler.takeover_s` seconds; so it takes over within
that time after the leader's lock is gone.
"""

from __future__ import annotations

import hashlib
import os
import socket

import filelock

from ..errors import StoreError
from ..store import Store

# A fixed signed 64-bit key, distinct from the per-item claim keys (sha256 of "daily:…" etc.).
LEADER_KEY = int.from_bytes(hashlib.sha256(b"mempipe:scheduler:leader").digest()[:8], "big", signed=True)


def default_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Leader:
    """`try_acquire()` (non-blocking), `alive()` (heartbeat check), `release()`."""

    def __init__(self, store: Store, *, identity: str | None = None, check_s: float = 10.0):
        self.store = store
        self.identity = identity or default_identity()
        self.host, self.pid = socket.gethostname(), os.getpid()
        self.held = False
        url = store.engine.url
        self._pg = store.leader_lock(LEADER_KEY, check_s=check_s) if store.dialect == "postgresql" else None
        self._file = None
        if self._pg is None and url.database and url.database != ":memory:":
            self.lock_path = url.database + ".leader.lock"
            self._file = filelock.FileLock(self.lock_path)
        else:
            self.lock_path = None

    @property
    def kind(self) -> str:
        return "advisory lock" if self._pg is not None else "lock file" if self._file is not None else "in-memory"

    def try_acquire(self) -> bool:
        if self.held:
            return True
        if self._pg is not None:
            self.held = self._pg.try_acquire()
        elif self._file is not None:
            try:
                self._file.acquire(timeout=0)
                self.held = True
            except filelock.Timeout:
                self.held = False
            except OSError as exc:
                raise StoreError(f"cannot take the scheduler lock file {self.lock_path}: {exc}") from exc
        else:  # an in-memory database has one process by definition
            self.held = True
        return self.held

    def alive(self) -> bool:
        """Still the leader? (PostgreSQL: the session still holds the lock; SQLite: we still
        hold the lock file and it was not deleted under us.)"""
        if not self.held:
            return False
        if self._pg is not None:
            ok = self._pg.alive()
        elif self._file is not None:
            ok = self._file.is_locked and os.path.exists(self.lock_path)
        else:
            ok = True
        if not ok:
            self.release()
        return ok

    def release(self) -> None:
        if self._pg is not None:
            self._pg.release()
        elif self._file is not None and self._file.is_locked:
            self._file.release(force=True)
        self.held = False
