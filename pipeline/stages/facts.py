"""remember / forget: a manual fact row (confidence 1, source "manual", at the level of the scope
it was said in, de-duplicated like an extracted one), or the deletion of every fact row that
states what to forget; then the contexts that read them are refreshed. Forgetting also scrubs
the stored summaries, profiles and contexts it applies to (stages/forgetting.py) and is
remembered, so facts and summaries made later from chat history leave it out too."""

from __future__ import annotations

from typing import Any, Callable

from ..calendar import parse_scope
from ..errors import InputError
from ..ids import parse_id
from ..safety import refusal_reason
from ..memory.validate import normalise_fact, raw_id_kind
from ..summarize.text import clean, mentions_fact
from .context import RunContext
from .extraction import manual_row
from .forgetting import reach_of_forget
from .merge import merge_one
from .merge_inputs import MergeInputs

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
    # the rule extracted facts follow too: a raw id in a fact would put it in front of every reader
    if kind := raw_id_kind(fact):
        raise InputError("facts", "fact", f"refused: it carries {kind} (a raw id). Say it in words, "
                                          f"e.g. \"Ana moderates the art channel\"")
    return fact


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


async def remember(ctx: RunContext, scope: str, user_id: int, fact: str, *, day=None, refresh: bool = True,
                   sources: list[str] | None = None) -> str:
    """Store a fact about the user in this scope; returns it as stored. `day`: when it was said
    (default today); `sources`: default ["manual"] (an in-chat request's: its message); `refresh`:
    refresh the user's contexts now (a run's merge stage does it otherwise)."""
    sc, user_id = parse_scope(scope), parse_id(user_id, "user_id")  # before anything is written
    fact = check_fact(fact)
    inputs = MergeInputs(ctx.store, [], [user_id])
    text = normalise_fact(fact, inputs.name(sc, user_id) or "")
    row = manual_row(ctx, str(sc), user_id, text, day or _today_in(ctx, inputs, str(sc)))
    if sources:
        row["sources"] = list(sources)
    ctx.stats.count_facts(ctx.store.apply_facts([row], ctx.settings.memory.same_fact))
    if not refresh:
        return text
    # Contexts that may read this scope's facts: the scope itself and every context of the user
    # (merge_one applies the audience rule to decide which facts each may use).
    await _refresh_contexts(ctx, user_id, sorted({str(sc)} | {r["scope"] for r in ctx.store.contexts(user_id=user_id, text=False)}))
    return text


def _readable_rows(inputs: MergeInputs, sources: list[str], user_id: int) -> list[dict]:
    """Every fact row of the user the scope can read or could once (superseded history too)."""
    allowed = set(sources)
    return [r for r in inputs.fact_rows.get(user_id, ()) if r["level"] == "global" or r["partition"] in allowed]


async def forget(ctx: RunContext, scope: str, user_id: int, fact: str, *, refresh: bool = True,
                 record: Callable[[Any, bool], None] | None = None) -> bool:
    """Forget a fact about the user in this scope; True when something stated it. `refresh`: as
    for `remember`. `record(conn, found)`: the control's audit row, in the forget's transaction."""
    sc, user_id = parse_scope(scope), parse_id(user_id, "user_id")  # before anything is written
    fact = clean(fact)
    if not fact:
        raise InputError("facts", "fact", "say what to forget")
    inputs = MergeInputs(ctx.store, [], [user_id])
    name = inputs.name(sc, user_id) or ""
    rows = _readable_rows(inputs, inputs.source_partitions(sc, user_id), user_id)
    outcome = await ctx.summarizer.forget([r["text"] for r in rows], fact, name)
    ctx.stats.record(outcome)
    # the model's answer, and every row that states it in any form (forgetting errs towards removing)
    hits = {i for i in outcome.value if 0 <= i < len(rows)}
    hits |= {i for i, r in enumerate(rows) if mentions_fact(r["text"], fact, name)}
    reach = reach_of_forget(ctx.store, inputs, scope, user_id, fact)
    audit = None if record is None else lambda conn, n: record(conn, bool(hits) or n > 0)
    changed = ctx.store.forget_fact(scope, user_id, fact, ctx.now(), delete_ids=[rows[i]["id"] for i in hits],
                                    scrub=reach, record=audit)
    ctx.forget_cache()  # the new forgotten fact applies to the merges below
    if not refresh:
        return bool(hits) or changed > 0
    # every context of the user: a deleted global fact was readable in all of them
    await _refresh_contexts(ctx, user_id, sorted({r["scope"] for r in ctx.store.contexts(user_id=user_id, text=False)}))
    return bool(hits) or changed > 0
