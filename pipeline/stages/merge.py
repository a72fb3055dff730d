"""Merge stage: facts + day-1 daily + historical -> one memory_context row per (scope, user).

Privacy lives here. A context for scope S is built only from partitions whose audience contains
everyone who can read S (DESIGN.md, "scope"):
  guild:G   <- guild:G
  channel:C <- channel:C and guild:G (C's guild)
  dm:D      <- dm:D, plus the user's own rows from every partition they posted in, but only when
               D is a one-to-one conversation; a group DM gets dm:D alone.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Callable

from ..calendar import Scope, parse_scope
from ..errors import SummarizerError
from ..hashing import input_hash
from ..summarize.text import scrub
from .claims import claim
from .context import RunContext

Day1For = Callable[[int | None], dt.date]  # guild id (None for DMs) -> that guild's day 1


def guild_of_partition(ctx: RunContext, partition: str) -> int | None:
    kind, _, ident = partition.partition(":")
    if kind == "guild":
        return int(ident)
    if kind == "channel":
        row = ctx.store.channel(int(ident))
        return row["guild_id"] if row else None
    return None


def is_private_dm(ctx: RunContext, partition: str) -> bool:
    row = ctx.store.channel(int(partition.partition(":")[2]))
    if row is not None and row["is_group"]:
        return False
    return len(ctx.store.partition_speakers(partition)) <= 1


def source_partitions(ctx: RunContext, scope: Scope, user_id: int) -> list[str]:
    own = str(scope)
    if scope.kind == "guild":
        return [own]
    if scope.kind == "channel":
        guild_id = guild_of_partition(ctx, own)
        return [own] + ([f"guild:{guild_id}"] if guild_id is not None else [])
    if is_private_dm(ctx, own):
        return [own] + [p for p in ctx.store.user_partitions(user_id) if p != own]
    return [own]


def fact_scopes(ctx: RunContext, scope: Scope, sources: list[str], user_id: int) -> list[tuple[str, str]]:
    """(scope, facts) pairs readable in this scope: facts follow the same audience rule."""
    allowed = set(sources)
    return [(s, f) for s, f in ctx.store.facts_of_user(user_id) if s in allowed and f.strip()]


async def merge_one(ctx: RunContext, scope: Scope, user_id: int, day1_for: Day1For) -> str:
    """Bring one context row up to date. Returns 'empty', 'cached', 'stale', 'planned' or 'written'."""
    own_guild = guild_of_partition(ctx, str(scope))
    as_of = day1_for(own_guild)
    sources = source_partitions(ctx, scope, user_id)
    facts_pairs = fact_scopes(ctx, scope, sources, user_id)
    day1_rows, hist_rows = [], []
    for partition in sources:
        d1 = day1_for(guild_of_partition(ctx, partition))
        row = ctx.store.daily_of(partition, d1, user_id)
        if row:
            day1_rows.append(row)
        hist = ctx.store.historical_of(partition, d1, user_id)
        if hist:
            hist_rows.append(hist)
    names = ctx.store.member_names(own_guild or 0, [user_id])
    if user_id not in names and own_guild is None:  # DM without a name: use any guild's
        names = {}
    name = names.get(user_id, "this member")
    forgotten = ctx.store.forgotten([user_id]).get(user_id, [])

    facts = "\n".join(f for _s, f in facts_pairs)
    day1 = "\n".join(r["summary"] for r in day1_rows)
    historical = "\n".join(r["summary"] for r in hist_rows)
    inputs = {
        "facts": [[s, input_hash(f)] for s, f in facts_pairs],
        "day1": [[r["partition"], r["day"].isoformat(), r["input_hash"]] for r in day1_rows],
        "historical": [[r["partition"], r["day"].isoformat(), r["input_hash"]] for r in hist_rows],
    }
    non_empty = [t for t in (facts, day1, historical) if t]
    if not non_empty:
        return "empty"
    key = input_hash("merge", str(scope), user_id, name, ctx.summarizer.fingerprint("merge"),
                     facts, day1, historical, forgotten)
    def decide(existing: dict | None) -> str | None:
        if existing is not None and existing["as_of_day"] > as_of:
            return "stale"  # a replay of an older range never overwrites a newer context
        if existing is not None and existing["input_hash"] == key and not ctx.force and not ctx.retry_degraded(existing):
            ctx.stats.cache_hits += 1
            if existing["as_of_day"] != as_of and not ctx.dry_run:
                ctx.store.touch_context(str(scope), user_id, as_of)
            return "cached"
        return None

    verdict = decide(ctx.store.context_full(str(scope), user_id))
    if verdict is not None:
        return verdict
    if ctx.dry_run:
        return "planned"
    async with claim(ctx, f"merge:{scope}:{user_id}"):
        existing = ctx.store.context_full(str(scope), user_id)  # another run may have just written it
        verdict = decide(existing)
        if verdict is not None:
            return verdict
        degraded_reason = None
        if len(non_empty) == 1:
            text = non_empty[0]  # nothing to merge: no summarizer call
        else:
            try:
                outcome = await ctx.summarizer.merge(name, facts, day1, historical)
            except SummarizerError:
                ctx.stats.errors += 1
                return "failed"
            ctx.stats.record(outcome)
            text, degraded_reason = outcome.value, outcome.degraded_reason
        if degraded_reason is None and any(r["degraded"] for r in day1_rows + hist_rows):
            degraded_reason = "built from degraded summaries"
        ctx.store.upsert_context({
            "scope": str(scope), "user_id": user_id,
            "context": scrub(text, forgotten, name),
            "as_of_day": as_of, "made_at": ctx.now(), "input_hash": key, "inputs": inputs,
            "degraded": degraded_reason is not None, "degraded_reason": degraded_reason,
            "attempts": (existing["attempts"] + 1 if existing and existing["degraded"] else 1)
            if degraded_reason and not degraded_reason.startswith("built from") else 1,
        })
        ctx.stats.contexts_written += 1
        return "written"


def users_for_scope(ctx: RunContext, partition: str, day1: dt.date) -> set[int]:
    """Who gets a context in the scope named like this partition: anyone with a day-1 daily,
    a historical summary or facts there."""
    users = ctx.store.users_in_day(partition, day1)
    users |= set(ctx.store.historicals(partition, day1))
    users |= ctx.store.fact_users(partition)
    if partition.startswith("dm:"):  # a DM context also draws on the user's other partitions
        users |= ctx.store.context_users(partition)
    return users


async def run_merges(ctx: RunContext, partitions: list[str], day1_for: Day1For) -> None:
    """Every (scope, user) of these scopes; independent, so an LLM summarizer keeps several in
    flight within its limits."""
    jobs = []
    for partition in partitions:
        d1 = day1_for(guild_of_partition(ctx, partition))
        jobs.extend((parse_scope(partition), user_id) for user_id in sorted(users_for_scope(ctx, partition, d1)))
    async def bounded(scope: Scope, user_id: int) -> None:
        async with ctx.slot():
            await merge_one(ctx, scope, user_id, day1_for)

    await asyncio.gather(*(bounded(scope, user_id) for scope, user_id in jobs))
