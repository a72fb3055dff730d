"""The bot read path: one indexed SELECT by (scope, user_id).

From another language, run the `get_context` statement in sql/queries.sql (quoted in the README).

Without `store=`, the first call loads the settings (config/default.toml, MEMPIPE_* environment)
and each database URL gets one Store, kept for the life of the process; `reset()` forgets both
(tests, or a process whose configuration changed). Contexts themselves are never cached: the
database row is the truth, so a `facts forget` is seen by the very next read.
"""

from __future__ import annotations

import datetime as dt
import functools
import threading
from typing import NamedTuple

from .calendar import parse_scope
from .config import Settings, load_settings
from .ids import parse_id
from .store import Store

_settings: Settings | None = None
_stores: dict[str, Store] = {}
_lock = threading.Lock()  # guards the two above; the hot path only reads them


class Context(NamedTuple):
    """What a bot reads (a named tuple: the read path is hot)."""

    scope: str
    user_id: int
    text: str
    as_of_day: dt.date
    made_at: dt.datetime
    degraded: bool


# Bounded and thread-safe (C implementation, ~0.1 µs a hit): a bot reads few scopes, over and over.
# A bad scope raises, and exceptions are not cached.
@functools.lru_cache(maxsize=100_000)
def _check_scope(scope: str) -> str:
    parse_scope(scope)  # raises ScopeError with the accepted forms
    return scope


def _store_for(url: str | None) -> Store:
    global _settings
    settings = _settings
    key = url or (settings.database_url if settings is not None else None)
    if key is not None and (store := _stores.get(key)) is not None:
        return store  # the usual case: no lock
    with _lock:
        if _settings is None:
            _settings = load_settings()
        url = url or _settings.database_url
        if url not in _stores:
            # Store.open checks the schema: a database that is down raises StoreError, and
            # nothing is kept, so the next call tries again.
            _stores[url] = Store.open(url, pool_size=_settings.pool_size, max_overflow=_settings.pool_max_overflow)
        return _stores[url]


def reset() -> None:
    """Close the Stores get_context opened and forget the loaded settings and checked scopes:
    the next call loads the configuration again."""
    global _settings
    with _lock:
        stores = list(_stores.values())
        _stores.clear()
        _settings = None
        _check_scope.cache_clear()
    for store in stores:
        store.close()


def get_context(scope: str, user_id: int, *, store: Store | None = None, database_url: str | None = None) -> Context | None:
    """The context a bot should read before answering `user_id` in `scope`, or None when there is
    no memory for them there. Raises StoreError when the database fails (never returns None for
    an outage), IdError for bad input: a malformed scope (ScopeError, an IdError) or a user id
    that is not a 64-bit id (a float, a bool, out of range), before the database is asked.

    database_url: default, the configured one (settings loaded once per process, see `reset`)."""
    _check_scope(scope) if isinstance(scope, str) else parse_scope(scope)  # not a str: ScopeError, uncached
    user_id = parse_id(user_id, "user_id")  # int(1.16e18) would silently read another user's row
    row = (store or _store_for(database_url)).context_fast(scope, user_id)
    if row is None:
        return None
    text, as_of, made, degraded = row
    if isinstance(as_of, str):  # SQLite stores days and times as text
        as_of = dt.date.fromisoformat(as_of)
    if isinstance(made, str):
        made = dt.datetime.fromisoformat(made)
    return Context(scope, user_id, text, as_of, made, bool(degraded))
