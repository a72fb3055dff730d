"""`user_show`: everything the bots may read about a user, scope by scope — the context row, the
profile, the facts the scope may read (pipeline/memory/views.py `facts_for`, the audience rule of
contexts), the user's daily and historical summaries of the scope's source partitions, and
whether the user paused memory there."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..calendar import Scope, parse_scope
from ..clock import Clock, system_clock
from ..config import Settings
from ..ids import parse_id
from ..memory.views import fact_line, facts_for
from ..stages.merge_inputs import MergeInputs
from .audit import record
from .auth import authorize
from .pause import ANY, open_pauses

CONTEXT_KEYS = ("context", "as_of_day", "made_at", "degraded", "degraded_reason")
PROFILE_KEYS = ("profile", "fact_count", "as_of_day", "made_at")
FACT_KEYS = ("id", "text", "level", "category", "confidence", "event_day", "first_seen", "last_seen", "partition",
             "sources", "origin", "status")
DAILY_KEYS = ("partition", "day", "summary", "degraded")
HISTORICAL_KEYS = ("partition", "day", "summary", "source_days", "degraded")


def _pick(row: dict | None, keys: tuple[str, ...]) -> dict | None:
    return None if row is None else {k: row.get(k) for k in keys}


def scopes_of(store, user_id: int) -> list[str]:
    """Every scope the user has a context, a profile or facts in (a fact's scope: the partition it
    was said in)."""
    found = {r["scope"] for r in store.contexts(user_id=user_id, text=False)}
    found |= {r["scope"] for r in store.profiles(user_id=user_id, text=False)}
    found |= {r["partition"] for r in store.memory_facts(user_ids=[user_id])}
    return sorted(found)


def user_show(store, settings: Settings, user_id: Any, *, requested_by: Any, scope: str | Scope | None = None,
              clock: Clock = system_clock) -> dict:
    """What the bots may read about the user: {"user_id", "paused": [open pauses: scope ("*":
    everywhere), since], "cleared": [clear windows: scope, until], "scopes": [one entry per
    scope: scope, partitions (what it is built from), paused, context, profile, facts,
    daily_summaries, historical_summaries]} — for `scope`, or every scope the user has a context,
    a profile or facts in. Recorded in the audit ("show")."""
    user_id = parse_id(user_id, "user_id")
    sc = parse_scope(scope) if isinstance(scope, str) else scope
    by = authorize(settings, "show", user_id, requested_by)
    now = clock()
    exclusions = store.exclusions([user_id])
    pauses = open_pauses(exclusions, now)
    inputs = MergeInputs(store, [], [user_id])  # the audience data (channels, DM kinds), the user's rows
    summaries = store.summaries_of_user(user_id)
    contexts = {r["scope"]: r for r in store.contexts(user_id=user_id)}
    profiles = {r["scope"]: r for r in store.profiles(user_id=user_id)}
    entries = []
    for s in [str(sc)] if sc is not None else scopes_of(store, user_id):
        one = parse_scope(s)
        sources = inputs.source_partitions(one, user_id)
        allowed = set(sources)
        order = {p: i for i, p in enumerate(sources)}  # the scope's own partition first

        def rows(table: str, keys: tuple[str, ...]) -> list[dict]:
            found = [r for r in summaries[table] if r["partition"] in allowed]
            return [_pick(r, keys) for r in sorted(found, key=lambda r: (order[r["partition"]], r["day"]))]

        entries.append({
            "scope": s, "partitions": sources,
            "paused": any(p["scope"] in (s, ANY) for p in pauses),
            "context": _pick(contexts.get(s), CONTEXT_KEYS),
            "profile": _pick(profiles.get(s), PROFILE_KEYS),
            "facts": [_pick(r, FACT_KEYS) for r in facts_for(store, user_id, one)],
            "daily_summaries": rows("daily_summaries", DAILY_KEYS),
            "historical_summaries": rows("historical_summaries", HISTORICAL_KEYS),
        })
    cleared = [{"scope": e["scope"], "until": e["until_ts"]} for e in exclusions if e["kind"] == "clear"]
    record(store, "show", user_id, by, requested_by, None if sc is None else str(sc), now)
    return {"user_id": user_id, "paused": [{"scope": p["scope"], "since": p["from_ts"]} for p in pauses],
            "cleared": cleared, "scopes": entries}


def show_text(report: dict) -> str:
    """`mempipe user show` as text: per scope, what the bots read, then what it was made from."""
    out = [f"user {report['user_id']}"]
    for p in report["paused"]:
        where = "everywhere" if p["scope"] == ANY else p["scope"]
        out.append(f"paused {where} since {_when(p['since'])}")
    for c in report["cleared"]:
        out.append(f"cleared {'everywhere' if c['scope'] == ANY else c['scope']} before {_when(c['until'])}")
    if not report["scopes"]:
        out.append("nothing stored that a bot may read")
    for e in report["scopes"]:
        out.append("")
        out.append(f"== {e['scope']}{' (paused)' if e['paused'] else ''}  built from {', '.join(e['partitions'])}")
        ctx = e["context"]
        out.append(f"-- context (as of {ctx['as_of_day']}):\n{ctx['context']}" if ctx else "-- no context")
        if e["facts"]:
            out.append(f"-- facts ({len(e['facts'])}):")
            out += [f"  {fact_line(f)}" for f in e["facts"]]
        for table, label in (("daily_summaries", "day"), ("historical_summaries", "week up to")):
            for r in e[table]:
                out.append(f"-- {label} {r['day']} ({r['partition']}): {r['summary']}")
    return "\n".join(out)


def _when(value: dt.datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value else "the beginning"
