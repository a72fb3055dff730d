"""`remember` / `forget` as controls: the same library functions as `mempipe facts remember|forget`
(pipeline/stages/facts.py), with the authorization rule and an audit row (never the fact's text:
a forgotten fact's words stay in forgotten_facts alone)."""

from __future__ import annotations

from typing import Any

from ..calendar import parse_scope
from ..ids import parse_id
from ..stages import facts as stage
from ..stages.context import RunContext
from .audit import record
from .auth import authorize


async def remember(ctx: RunContext, scope: str, user_id: Any, fact: str, *, requested_by: Any,
                   via: str | None = None, refresh: bool = True, day=None, source: str | None = None) -> str:
    """Store a fact about the user in this scope (stages/facts.py `remember`) when the requester
    is the user or an admin; returns it as stored. Recorded ("remember"). `via="chat"`: an in-chat
    request (pipeline/stages/requests.py), said on `day`; the run's merge stage makes the contexts
    (`refresh=False`). `source`: the fact's source (an in-chat request's: its message,
    "channel:message", so that deleting the message takes the fact back); default `via`, else
    "manual"."""
    sc, user_id = parse_scope(scope), parse_id(user_id, "user_id")
    by = authorize(ctx.settings, "remember a fact in", user_id, requested_by)
    before = ctx.stats.facts_added + ctx.stats.facts_updated
    text = await stage.remember(ctx, str(sc), user_id, fact, day=day, refresh=refresh,
                                sources=[source or via] if source or via else None)
    record(ctx.store, "remember", user_id, by, requested_by, str(sc), ctx.now(),
           {"memory_facts": ctx.stats.facts_added + ctx.stats.facts_updated - before}, **({"via": via} if via else {}))
    return text


async def forget(ctx: RunContext, scope: str, user_id: Any, fact: str, *, requested_by: Any,
                 via: str | None = None, refresh: bool = True) -> bool:
    """Forget a fact about the user in this scope (stages/facts.py `forget`) when the requester is
    the user or an admin; True when something stated it. Recorded ("forget", whether found)."""
    sc, user_id = parse_scope(scope), parse_id(user_id, "user_id")
    by = authorize(ctx.settings, "forget a fact in", user_id, requested_by)

    def audit(conn, found: bool) -> None:
        # in the forget's own transaction: a run working meanwhile sees it (store/controls.py
        # refuse_after_removal); this context's own run (an in-chat forget) knows it already
        ctx.own_controls.add(record(ctx.store, "forget", user_id, by, requested_by, str(sc), ctx.now(),
                                    {"forgotten_facts": 1}, conn=conn, found=found, **({"via": via} if via else {})))

    found = await stage.forget(ctx, str(sc), user_id, fact, refresh=refresh, record=audit)
    ctx.store.drop_batch_requests()  # batch requests may quote the fact: dropped, asked again later
    return found
