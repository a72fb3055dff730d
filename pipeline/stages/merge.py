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


class StoreInputs:
    """What a merge reads, item by item from the store (a single merge: remember/forget)."""

    def __init__(self, ctx: RunContext):
        self.ctx = ctx
        self.store = ctx.store

    def channel(self, channel_id: int) -> dict | None:
        return self.store.channel(channel_id)

    def dm_speakers(self, partition: str) -> int:
        return len(self.store.partition_speakers(partition))

    def user_partitions(self, user_id: int) -> list[str]:
        return self.store.user_partitions(user_id)

    def facts_of_user(self, user_id: int) -> list[tuple[str, str]]:
        return self.store.facts_of_user(user_id)

    def daily(self, partition: str, day: dt.date, user_id: int) -> dict | None:
        return self.store.daily_of(partition, day, user_id)

    def historical(self, partition: str, day: dt.date, user_id: int) -> dict | None:
        return self.store.historical_of(partition, day, user_id)

    def name(self, guild_key: int, user_id: int) -> str | None:
        return self.store.member_names(guild_key, [user_id]).get(user_id)

    def context(self, scope: str, user_id: int) -> dict | None:
        return self.store.context_full(scope, user_id)


class BulkInputs(StoreInputs):
    """The same, read once for a whole run: a nightly run merges every active user."""

    def __init__(self, ctx: RunContext, day1s: set[dt.date]):
        super().__init__(ctx)
        store = ctx.store
        self._channels = store.all_channels()
        self._dm_speakers = store.dm_speaker_counts()
        self._facts: dict[int, list[tuple[str, str]]] = {}
        for r in store.all_facts():
            self._facts.setdefault(r["user_id"], []).append((r["scope"], r["facts"]))
        self._daily = {(r["partition"], r["day"], r["user_id"]): r for r in store.dailies_on(day1s)}
        self._hist = {(r["partition"], r["day"], r["user_id"]): r for r in store.historicals_on(day1s)}
        self._members = store.all_members()
        self._contexts = store.context_states()
        self._user_partitions: dict[int, list[str]] | None = None

    def preload_user_partitions(self, user_ids) -> None:
        self._user_partitions = self.store.partitions_of_users(user_ids)

    def channel(self, channel_id):
        return self._channels.get(channel_id)

    def dm_speakers(self, partition):
        return self._dm_speakers.get(partition, 0)

    def user_partitions(self, user_id):
        if self._user_partitions is None:
            return super().user_partitions(user_id)
        return self._user_partitions.get(user_id, [])

    def facts_of_user(self, user_id):
        return self._facts.get(user_id, [])

    def daily(self, partition, day, user_id):
        return self._daily.get((partition, day, user_id))

    def historical(self, partition, day, user_id):
        return self._hist.get((partition, day, user_id))

    def name(self, guild_key, user_id):
        return self._members.get((guild_key, user_id))

    def context(self, scope, user_id):
        return self._contexts.get((scope, user_id))


def guild_of_partition(ctx: RunContext, partition: str, inputs: StoreInputs | None = None) -> int | None:
    kind, _, ident = partition.partition(":")
    if kind == "guild":
        return int(ident)
    if kind == "channel":
        row = (inputs or StoreInputs(ctx)).channel(int(ident))
        return row["guild_id"] if row else None
    return None


def is_private_dm(ctx: RunContext, partition: str, inputs: StoreInputs | None = None) -> bool:
    inputs = inputs or StoreInputs(ctx)
    row = inputs.channel(int(partition.partition(":")[2]))
    if row is not None and row["is_group"]:
        return False
    return inputs.dm_speakers(partition) <= 1


def source_partitions(ctx: RunContext, scope: Scope, user_id: int, inputs: StoreInputs | None = None) -> list[str]:
    inputs = inputs or StoreInputs(ctx)
    own = str(scope)
    if scope.kind == "guild":
        return [own]
    if scope.kind == "channel":
        guild_id = guild_of_partition(ctx, own, inputs)
        return [own] + ([f"guild:{guild_id}"] if guild_id is not None else [])
    if is_private_dm(ctx, own, inputs):
        return [own] + [p for p in inputs.user_partitions(user_id) if p != own]
    return [own]


def fact_scopes(inputs: StoreInputs, sources: list[str], user_id: int) -> list[tuple[str, str]]:
    """(scope, facts) pairs readable in this scope: facts follow the same audience rule."""
    allowed = set(sources)
    return [(s, f) for s, f in inputs.facts_of_user(user_id) if s in allowed and f.strip()]


async def merge_one(ctx: RunContext, scope: Scope, user_id: int, day1_for: Day1For,
                    inputs: StoreInputs | None = None) -> str:
    """Bring one context row up to date. Returns 'empty', 'cached', 'stale', 'planned' or 'written'."""
    inputs = inputs or StoreInputs(ctx)
    own_guild = guild_of_partition(ctx, str(scope), inputs)
    as_of = day1_for(own_guild)
    sources = source_partitions(ctx, scope, user_id, inputs)
    facts_pairs = fact_scopes(inputs, sources, user_id)
    day1_rows, hist_rows = [], []
    for partition in sources:
        d1 = day1_for(guild_of_partition(ctx, partition, inputs))
        row = inputs.daily(partition, d1, user_id)
        if row:
            day1_rows.append(row)
        hist = inputs.historical(partition, d1, user_id)
        if hist:
            hist_rows.append(hist)
    name = inputs.name(own_guild or 0, user_id) or "this member"
    forgotten = ctx.forgotten_for([user_id]).get(user_id, [])

    facts = "\n".join(f for _s, f in facts_pairs)
    day1 = "\n".join(r["summary"] for r in day1_rows)
    historical = "\n".join(r["summary"] for r in hist_rows)
    made_from = {
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
                ctx.writer.touch(str(scope), user_id, as_of)
            return "cached"
        return None

    verdict = decide(inputs.context(str(scope), user_id))
    if verdict is not None:
        return verdict
    if ctx.dry_run:
        return "planned"
    async with claim(ctx, f"merge:{scope}:{user_id}"):
        # another run may have just written it (only possible where claims are in use)
        existing = ctx.store.context_full(str(scope), user_id) if ctx.uses_claims \
            else inputs.context(str(scope), user_id)
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
        ctx.writer.context({
            "scope": str(scope), "user_id": user_id,
            "context": scrub(text, forgotten, name),
            "as_of_day": as_of, "made_at": ctx.now(), "input_hash": key, "inputs": made_from,
            "degraded": degraded_reason is not None, "degraded_reason": degraded_reason,
            "attempts": (existing["attempts"] + 1 if existing and existing["degraded"] else 1)
            if degraded_reason and not degraded_reason.startswith("built from") else 1,
        })
        ctx.stats.contexts_written += 1
        return "written"


async def run_merges(ctx: RunContext, partitions: list[str], day1_for: Day1For) -> None:
    """Every (scope, user) of these scopes, from inputs read once; the items are independent, so
    an LLM summarizer keeps several in flight within its limits."""
    ctx.writer.flush()  # merges read the dailies and historicals written so far
    channels = ctx.store.all_channels()

    def guild_of(p: str) -> int | None:
        kind, _, ident = p.partition(":")
        if kind == "guild":
            return int(ident)
        if kind == "channel":
            row = channels.get(int(ident))
            return row["guild_id"] if row else None
        return None

    day1s = {day1_for(guild_of(p)) for p in partitions} | {day1_for(None)}
    day1s |= {day1_for(g) for g in {c["guild_id"] for c in channels.values()}}
    inputs = BulkInputs(ctx, day1s)
    by_partition: dict[str, dict[dt.date, set[int]]] = {}
    for (p, d, u) in list(inputs._daily) + list(inputs._hist):
        by_partition.setdefault(p, {}).setdefault(d, set()).add(u)
    jobs = []
    dm_users: set[int] = set()
    for partition in partitions:
        d1 = day1_for(guild_of(partition))
        users = set(by_partition.get(partition, {}).get(d1, set()))
        users |= {u for u, pairs in inputs._facts.items() if any(s == partition for s, _f in pairs)}
        if partition.startswith("dm:"):
            users |= {u for (s, u) in inputs._contexts if s == partition}
            dm_users |= users
        jobs.extend((parse_scope(partition), user_id) for user_id in sorted(users))
    if dm_users:
        inputs.preload_user_partitions(dm_users)

    async def bounded(scope: Scope, user_id: int) -> None:
        async with ctx.slot():
            await merge_one(ctx, scope, user_id, day1_for, inputs)

    await asyncio.gather(*(bounded(scope, user_id) for scope, user_id in jobs))
    ctx.writer.flush()
