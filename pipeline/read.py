"""The bot read path: one indexed SELECT by (scope, user_id).

From another language, run the `get_context` statement in sql/queries.sql (quoted in the README).
"""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import dataclass

from .calendar import parse_scope
from .config import load_settings
from .store import Store

_stores: dict[str, Store] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class Context:
    scope: str
    user_id: int
    text: str
    as_of_day: dt.date
    made_at: dt.datetime
    degraded: bool


def _store_for(url: str | None) -> Store:
    url = url or load_settings().database_url
    with _lock:
        if url not in _stores:
            _stores[url] = Store.open(url)
        return _stores[url]


def get_context(scope: str, user_id: int, *, store: Store | None = None, database_url: str | None = None) -> Context | None:
    """The context a bot should read before answering `user_id` in `scope`, or None when there is
    no memory for them there. Raises StoreError when the database fails (never returns None for
    an outage)."""
    parse_scope(scope)  # refuse malformed scopes loudly
    row = (store or _store_for(database_url)).context_row(scope, int(user_id))
    if row is None:
        return None
    as_of = row["as_of_day"]
    made = row["made_at"]
    if isinstance(as_of, str):  # SQLite through the raw named query returns text
        as_of = dt.date.fromisoformat(as_of)
    if isinstance(made, str):
        made = dt.datetime.strptime(made, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc)
    return Context(scope, int(user_id), row["context"], as_of, made, bool(row["degraded"]))
