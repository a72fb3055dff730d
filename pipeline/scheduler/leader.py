"""One leader per database: only the process holding the lock runs the scheduler.

- PostgreSQL: a session advisory lock on a dedicated connection held for the whole leadership
  (pipeline/store/locks.py, PgAdvisoryLock). A leader that dies loses its session and with it
  the lock; a leader whose connection drops sees it on its next heartbeat (`alive()`) and stops
  its jobs.
- SQLite: a lock file `<database file>.leader.lock`, taken without waiting. The OS releases it
  when the process dies.

A standby calls `try_acquire()` every `scheduler.takeover_s` seconds; so it takes over within
that time after the leader's lock is gone.
"""

from __future__ import annotations

import os
import socket

from ..store import Store, lock_key

LEADER_LOCK = "mempipe:scheduler:leader"
LEADER_KEY = lock_key(LEADER_LOCK)  # distinct from the per-item claim keys ("daily:…" etc.)


def default_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Leader:
    """`try_acquire()` (non-blocking), `alive()` (heartbeat check), `release()`."""

    def __init__(self, store: Store, *, identity: str | None = None, check_s: float = 10.0):
        self.store = store
        self.identity = identity or default_identity()
        self.host, self.pid = socket.gethostname(), os.getpid()
        self.held = False
        self._lock = store.lock(LEADER_LOCK, file_suffix="leader", dedicated=True, check_s=check_s)
        self.lock_path = getattr(self._lock, "path", None)

    @property
    def kind(self) -> str:
        return self._lock.kind

    def try_acquire(self) -> bool:
        if not self.held:
            self.held = self._lock.try_acquire()
        return self.held

    def alive(self) -> bool:
        """Still the leader? (PostgreSQL: the session still holds the lock; SQLite: we still
        hold the lock file and it was not deleted under us.)"""
        if not self.held:
            return False
        ok = self._lock.alive()
        if not ok:
            self.release()
        return ok

    def release(self) -> None:
        self._lock.release()
        self.held = False
