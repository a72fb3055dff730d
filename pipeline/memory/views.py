"""Read-only views of long-term memory for people (the CLI's `facts show` and `profile`): a
user's fact rows, all of them or the ones one scope may read, and a stored profile.

"May read" is the audience rule of contexts (ARCHITECTURE.md, "scope"): the facts of the
partitions `MergeInputs.source_partitions(scope, user)` returns, plus the user's `global` facts
(the same selection as profile.py `visible`, without its as-of day: a view shows what is stored
now). Superseded rows are history: left out unless asked for.
"""

from __future__ import annotations

from typing import Any

from ..calendar import Scope, parse_scope
from ..errors import MempipeError
from ..ids import parse_id
from ..store import StageStorage
from ..stages.merge_inputs import MergeInputs
from .model import CATEGORIES, LEVELS

SOURCES_SHOWN = 3  # a fact's sources listed on its line; the rest counted (--json has them all)


class NoProfileError(MempipeError):
    """No profile is stored for this (scope, user)."""


def readable_partitions(inputs: MergeInputs, scope: Scope, user_id: int) -> set[str]:
    """The partitions whose facts and summaries of `user_id` a context for `scope` is built from."""
    return set(inputs.source_partitions(scope, user_id))


def _order(r: dict) -> tuple:
    # active before superseded; the most widely shared level first; then category, confidence,
    # recency (last seen), and the id for a stable order
    return (r["status"] != "active", -LEVELS.index(r["level"]) if r["level"] in LEVELS else 0,
            CATEGORIES.index(r["category"]) if r["category"] in CATEGORIES else len(CATEGORIES),
            -r["confidence"], -r["last_seen"].toordinal(), r["id"])


def facts_for(store: StageStorage, user_id: Any, scope: str | Scope | None = None,
              include_superseded: bool = False) -> list[dict]:
    """The fact rows of a user (every column of memory_facts), most widely shared first.

    scope: only the facts that scope may read (its source partitions for this user, plus the
    user's global facts); None: every fact of the user, at every level. Superseded rows only with
    `include_superseded`. A bad user id or scope is an IdError / ScopeError, before any read."""
    user_id = parse_id(user_id, "user_id")
    sc = parse_scope(scope) if isinstance(scope, str) else scope
    inputs = MergeInputs(store, [], [user_id])  # reads the user's fact rows once, with the audience data
    rows = list(inputs.fact_rows.get(user_id, ()))
    if sc is not None:
        allowed = readable_partitions(inputs, sc, user_id)
        rows = [r for r in rows if r["level"] == "global" or r["partition"] in allowed]
    if not include_superseded:
        rows = [r for r in rows if r["status"] == "active"]
    return sorted(rows, key=_order)


def profile_of(store: StageStorage, scope: str | Scope, user_id: Any) -> dict:
    """The stored profile row of (scope, user); NoProfileError when there is none."""
    sc = parse_scope(scope) if isinstance(scope, str) else scope
    user_id = parse_id(user_id, "user_id")
    rows = store.profiles(str(sc), user_id)
    if not rows:
        raise NoProfileError(
            f"no profile for user {user_id} in {sc}: profiles are made by `mempipe run` (or `mempipe replay`) "
            f"from the facts {sc} may read. Run it; if there is still none, the user has no facts there "
            f"(see `mempipe facts show --user {user_id} --scope {sc}`)")
    return rows[0]


def _span(first, last) -> str:
    return first.isoformat() if first == last else f"{first.isoformat()}..{last.isoformat()}"


def fact_line(r: dict) -> str:
    """One fact on one line, e.g.
    `[guild_public · identity · 0.90 · 2026-09-01..2026-09-20] Lives in Lisbon  (guild:1150…; sources 1170…:1190…)`:
    level, category, confidence, first..last seen, the event date of an episodic fact and the
    day a superseded fact was replaced; then where it was said and its origin: `manual` (a
    `facts remember`) or the messages it was extracted from."""
    tags = [r["level"], r["category"], f"{r['confidence']:.2f}", _span(r["first_seen"], r["last_seen"])]
    if r.get("event_day"):
        tags.append(f"event {r['event_day'].isoformat()}")
    if r["status"] != "active":
        on = r.get("superseded_on")
        tags.append(f"{r['status']} {on.isoformat()}" if on else r["status"])
    sources = [s for s in (r.get("sources") or []) if s != "manual"]
    if r["origin"] == "manual" and not sources:
        origin = "manual"
    else:
        shown = ", ".join(sources[:SOURCES_SHOWN]) or "none"
        more = f" +{len(sources) - SOURCES_SHOWN} more" if len(sources) > SOURCES_SHOWN else ""
        origin = f"{r['origin']}; sources {shown}{more}"
    return f"[{' · '.join(tags)}] {r['text']}  ({r['partition']}; {origin})"
