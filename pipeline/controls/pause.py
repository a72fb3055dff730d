"""`pause` / `resume`: from a pause on, the user's new messages in the scope's partition (or
everywhere) are not summarised or mined for facts — the daily stage leaves out what a
memory_exclusions window covers (pipeline/store/controls.py). The messages themselves are still
stored (the bot's own chat history may need them) and what was made before the pause stays
readable until cleared (`clear`). A resume closes the window: later messages count again, the
paused ones never do."""

from __future__ import annotations

import datetime as dt
from typing import Any, Iterable

from ..calendar import Scope, parse_scope
from ..clock import Clock, system_clock
from ..config import Settings
from ..ids import parse_id
from .audit import record
from .auth import authorize

ANY = "*"  # an exclusion of every partition


def is_open(exclusion: dict, now: dt.datetime) -> bool:
    return exclusion["until_ts"] is None or exclusion["until_ts"] > now


def open_pauses(exclusions: Iterable[dict], now: dt.datetime) -> list[dict]:
    """The pauses in force at `now`, oldest first."""
    return [e for e in exclusions if e["kind"] == "pause" and is_open(e, now)]


def _where(scope: str | Scope | None) -> str:
    """The partition a scope's own messages are in (a scope is named like its partition), or "*"."""
    if scope is None:
        return ANY
    return str(parse_scope(scope) if isinstance(scope, str) else scope)


def pause(store, settings: Settings, user_id: Any, *, requested_by: Any, scope: str | Scope | None = None,
          clock: Clock = system_clock) -> dict:
    """Stop summarising the user's messages in the scope's partition (None: everywhere) from now
    on. Returns {"user_id", "scope" ("*": everywhere), "since", "already" (it was paused there
    already: nothing was added)}. Recorded in the audit ("pause")."""
    user_id, where = parse_id(user_id, "user_id"), _where(scope)
    by = authorize(settings, "pause", user_id, requested_by)
    now = clock()
    existing = [p for p in open_pauses(store.exclusions([user_id]), now) if p["scope"] == where]
    with store.transaction() as conn:
        if not existing:
            store.add_exclusion(user_id, where, "pause", now, None, now, conn=conn)
        record(store, "pause", user_id, by, requested_by, None if where == ANY else where, now,
               {"memory_exclusions": 0 if existing else 1}, conn=conn)
    since = existing[0]["from_ts"] if existing else now
    return {"user_id": user_id, "scope": where, "since": since, "already": bool(existing)}


def resume(store, settings: Settings, user_id: Any, *, requested_by: Any, scope: str | Scope | None = None,
           clock: Clock = system_clock) -> dict:
    """End the user's pause in the scope's partition (None: every pause of the user, everywhere).
    Returns {"user_id", "resumed": [scopes whose pause ended], "still_paused": [pauses still in
    force: a pause everywhere ("*") outlives a resume of one scope]}. Recorded ("resume")."""
    user_id = parse_id(user_id, "user_id")
    where = None if scope is None else _where(scope)
    by = authorize(settings, "resume", user_id, requested_by)
    now = clock()
    pauses = open_pauses(store.exclusions([user_id]), now)
    ending = sorted({p["scope"] for p in pauses if where is None or p["scope"] == where})
    with store.transaction() as conn:
        ended = sum(store.end_exclusions(user_id, s, "pause", now, conn=conn) for s in ending)
        record(store, "resume", user_id, by, requested_by, where, now, {"memory_exclusions": ended}, conn=conn)
    still = sorted({p["scope"] for p in pauses if p["scope"] not in ending})
    return {"user_id": user_id, "resumed": ending, "still_paused": still}
