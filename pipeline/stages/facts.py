"""remember / forget: rewrite a user's facts blob through the summarizer, then refresh the
contexts that read it. Forgetting also scrubs the stored summaries, facts and contexts it applies
to (stages/forgetting.py) and is remembered, so summaries recomputed later from chat history
leave the fact out too."""

from __future__ import annotations

from ..calendar import parse_scope
from ..errors import InputError
from ..ids import parse_id
from ..safety import refusal_reason
from ..summarize.text import clean
from .context import RunContext
from .forgetting import reach_of_forget
from .merge import MergeInputs, merge_one

MAX_FACT_CHARS = 300


def check_fact(fact: str) -> str:
    fact = clean(fact)
    if not fact:
        raise InputError("facts", "fact", "the fact is empty")
    if len(fact) > MAX_FACT_CHARS:
        raise InputError("facts", "fact", f"the fact is {len(fact)} characters; keep it under {MAX_FACT_CHARS}")
    # Facts are read by a bot before it answers: refuse text that tries to steer it or carries a
    # secret (pipeline/safety.py lists what and why).
    reason = refusal_reason(fact)
    if reason:
        raise InputError("facts", "fact", f"refused: {reason}. State something about the user instead, "
                                          f"e.g. \"Ana studies statistics\"")
    return fact


def _facts_blob(ctx: RunContext, scope: str, user_id: int) -> str:
    rows = ctx.store.facts(scope=scope, user_ids=[user_id])
    return rows[0]["facts"] if rows else ""


def _today_in(ctx: RunContext, inputs: MergeInputs, scope: str):
    return ctx.now().astimezone(ctx.tz_for_guild(inputs.guild_of(scope))).date()


async def _refresh_contexts(ctx: RunContext, user_id: int, scopes: list[str]) -> None:
    """Re-merge these contexts of the user, each as of the day it was made (today for a new one),
    from the user's rows read in bulk once per day 1."""
    existing = {r["scope"]: r["as_of_day"] for r in ctx.store.contexts(user_id=user_id, text=False)}
    probe = MergeInputs(ctx.store, [], [user_id])
    as_of = {s: existing.get(s) or _today_in(ctx, probe, s) for s in scopes}
    for day in sorted(set(as_of.values())):
        inputs = MergeInputs(ctx.store, [day], [user_id])
        for scope in (s for s in scopes if as_of[s] == day):
            await merge_one(ctx, parse_scope(scope), user_id, lambda _g, d=day: d, inputs)
    ctx.writer.flush()


async def remember(ctx: RunContext, scope: str, user_id: int, fact: str) -> str:
    sc, user_id = parse_scope(scope), parse_id(user_id, "user_id")  # before anything is written
    fact = check_fact(fact)
    outcome = await ctx.summarizer.remember(_facts_blob(ctx, scope, user_id), fact)
    ctx.stats.record(outcome)
    ctx.store.write_facts(scope, user_id, outcome.value, ctx.now())
    # Contexts that may read this scope's facts: the scope itself and every context of the user
    # (merge_one applies the audience rule to decide which facts each may use).
    await _refresh_contexts(ctx, user_id, sorted({str(sc)} | {r["scope"] for r in ctx.store.contexts(user_id=user_id, text=False)}))
    return outcome.value


async def forget(ctx: RunContext, scope: str, user_id: int, fact: str) -> bool:
    sc, user_id = parse_scope(scope), parse_id(user_id, "user_id")  # before anything is written
    fact = clean(fact)
    if not fact:
        raise InputError("facts", "fact", "say what to forget")
    inputs = MergeInputs(ctx.store, [], [user_id])
    name = inputs.name(sc, user_id) or ""
    blob = _facts_blob(ctx, scope, user_id)
    outcome = await ctx.summarizer.forget(blob, fact, name)
    ctx.stats.record(outcome)
    new_blob, found = outcome.value
    reach = reach_of_forget(ctx.store, inputs, scope, user_id, fact)
    scrubbed = ctx.store.write_facts(scope, user_id, new_blob, ctx.now(), forgotten=fact, scrub=reach)
    ctx.forget_cache()  # the new forgotten fact applies to the merges below
    await _refresh_contexts(ctx, user_id, sorted(s for s, u in reach.contexts if u == user_id))
    return found or scrubbed > 0
