"""Claims: two runs on one database never compute the same row at the same time.

PostgreSQL: a session advisory lock per item (partition-day, historical row, context row) on a
dedicated pooled connection, polled with pg_try_advisory_lock so a waiting coroutine never
blocks the event loop. The holder computes and commits; the waiter then re-reads the row, finds
the hash it would have written, and counts a cache hit instead of a second summarizer call.
A crashed holder's session ends and PostgreSQL releases its locks.

SQLite has one writer at a time anyway, and cheap (in-process) summarizers are not worth a lock
per item: there the runner takes a whole-run lock instead (pipeline/runner.py) and runs take
turns, so these claims are no-ops.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from typing import AsyncIterator

from .context import RunContext

POLL_S = 0.05


def lock_key(key: str) -> int:
    """A stable signed 64-bit advisory-lock key for a text key."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big", signed=True)


class Busy(Exception):
    """Another run holds this item's claim (raised only when the caller asked not to wait)."""


@contextlib.asynccontextmanager
async def claim(ctx: RunContext, key: str, *, wait: bool = True) -> AsyncIterator[None]:
    if not ctx.uses_claims:
        yield
        return
    lock = ctx.store.advisory_lock(lock_key(key))
    try:
        while not lock.try_acquire():
            if not wait:
                raise Busy(key)
            await asyncio.sleep(POLL_S)
        yield
    finally:
        lock.release()
