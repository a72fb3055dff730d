"""The bot read path: one indexed SELECT by (scope, user_id).

From another language, run the `get_context` statement in sql/queries.sql (quoted in the README).
"""

from __future__ import annotations

import datetime as dt
import re
import threading
from typing import NamedTuple

from .calendar import parse_scope
from .config import load_settings
from .store import Store

_SCOPE = re.compile(r"(?:guild|channel|dm):[0-9]{1,19}")
_checked: set[str] = set()  # scopes already validated (the read path is hot)
_stores: dict[str, Store] = {}
_lock = threading.Lock()


class Context(NamedTuple):
    """What a bot reads (a named tuple: the read path is hot)."""

    scope: str
    user_id: int
    text: str
    as_of_day: dt.date
    made_at: dt.datetime
    degraded: bool


def _store_for(url: str | None) -> Store:
    settings = load_settings()
    url = url or settings.database_url
    with _lock:
        if url not in _stores:
            _stores[url] = Store.open(url, pool_size=settings.pool_size, max_overflow=settings.pool_max_overflow)
        return _stores[url]


def get_context(scope: str, user_id: int, *, store: Store | None = None, database_url: str | None = None) -> Context | None:
    """The context a bot should read before answering `user_id` in `scope`, or None when there is
    no memory for them there. Raises StoreError when the database fails (never returns None for
    an outage)."""
    if scope not in _checked:
        if not _SCOPE.fullmatch(scope):
            parse_scope(scope)  # raises with the accepted forms
        if len(_checked) < 100_000:
            _checked.add(scope)
    row = (store or _store_for(database_url)).context_fast(scope, int(user_id))
    if row is None:
        return None
    text, as_of, made, degraded = row
    if isinstance(as_of, str):  # SQLite stores days and times as text
        as_of = dt.date.fromisoformat(as_of)
    if isinstance(made, str):
        made = dt.datetime.fromisoformat(made)
    return Context(scope, int(user_id), text, as_of, made, bool(degraded))
