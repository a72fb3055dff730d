"""Merge stage: facts + day-1 daily + historical -> one memory_context row per (scope, user).

Privacy lives here. A context for scope S is built only from partitions whose audience contains
everyone who can read S (ARCHITECTURE.md, "scope"):
  guild:G   <- guild:G
  channel:C <- channel:C and guild:G (C's guild)
  dm:D      <- dm:D, plus the user's own rows from every partition they posted in, but only when
               D is a one-to-one conversation; a group DM, or one whose kind the input never
               stated, gets dm:D alone (fail closed).
The name a merge is given is the user's name in the scope's own partition (ARCHITECTURE.md, "names").
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections import defaultdict
from typing import Callable, Iterable

from ..calendar import Scope, parse_scope
from ..hashing import input_hash
from ..store import StageStorage
from ..store.derived import CONTEXT_STATE
from .context import RunContext
from .historical import BUILT_FROM_DEGRADED
from .refresh import Item, ItemStatus, next_attempts, refresh_item

Day1For = Callable[[int | None], dt.date]  # guild id (None for DMs) -> that guild's day 1


class MergeInputs:
    """What merges read, in bulk: for a whole run (every user), or narrowed to a few users (a
    remember / forget refreshes one user's contexts) with the same queries."""

    def __init__(self, store: StageStorage, day1s: Iterable[dt.date], user_ids: Iterable[int] | None = None):
        self.store = store
        users = None if user_ids is None else sorted(set(user_ids))
        self.channels = store.channels()
        self.dm_speakers = store.dm_speaker_counts()
        self.facts: dict[int, list[tuple[str, str]]] = defaultdict(list)
        for r in store.facts(user_ids=users):
            self.facts[r["user_id"]].append((r["scope"], r["facts"]))
        self.daily = {(r["partition"], r["day"], r["user_id"]): r for r in store.dailies(day1s, user_ids=users)}
        self.hist = {(r["partition"], r["day"], r["user_id"]): r for r in store.historicals(day1s, user_ids=users)}
        self.names = store.member_names(users)
        rows = store.contexts(text=False) if users is None \
            else [r for u in users for r in store.contexts(user_id=u, text=False)]
        self.contexts = {(r["scope"], r["user_id"]): {k: r[k] for k in CONTEXT_STATE} for r in rows}
        self._user_partitions: dict[int, list[str]] = {}

    def preload_user_partitions(self, user_ids: Iterable[int]) -> None:
        wanted = set(user_ids) - set(self._user_partitions)
        if wanted:
            found = self.store.partitions_of_users(wanted)
            self._user_partitions.update({u: found.get(u, []) for u in wanted})

    def user_partitions(self, user_id: int) -> list[str]:
        self.preload_user_partitions([user_id])
        return self._user_partitions[user_id]

    def guild_of(self, partition: str) -> int | None:
        kind, _, ident = partition.partition(":")
        if kind == "guild":
            return int(ident)
        if kind == "channel":
            row = self.channels.get(int(ident))
            return row["guild_id"] if row else None
        return None

    def is_private_dm(self, partition: str) -> bool:
        """One-to-one only when the input said so (and never that it is a group) and at most one
        person has written in it; an unknown DM, or one whose kind was never stated, is not."""
        row = self.channels.get(int(partition.partition(":")[2]))
        if row is None or not row["one_to_one"] or row["is_group"]:
            return False
        return self.dm_speakers.get(partition, 0) <= 1

    def source_partitions(self, scope: Scope, user_id: int) -> list[str]:
        own = str(scope)
        if scope.kind == "guild":
            return [own]
        if scope.kind == "channel":
            guild_id = self.guild_of(own)
            return [own] + ([f"guild:{guild_id}"] if guild_id is not None else [])
        if self.is_private_dm(own):
            return [own] + [p for p in self.user_partitions(user_id) if p != own]
        return [own]

    def name(self, scope: Scope | str, user_id: int) -> str | None:
        """The user's display name in the scope's own partition (a one-to-one DM: the DM's own)."""
        return self.names.get((str(scope), user_id))


async def merge_one(ctx: RunContext, scope: Scope, user_id: int, day1_for: Day1For,
                    inputs: MergeInputs) -> ItemStatus:
    """Bring one context row up to date."""
    own_guild = inputs.guild_of(str(scope))
    as_of = day1_for(own_guild)
    sources = inputs.source_partitions(scope, user_id)
    allowed = set(sources)  # facts follow the same audience rule
    facts_pairs = [(s, f) for s, f in inputs.facts.get(user_id, []) if s in allowed and f.strip()]
    day1_rows, hist_rows = [], []
    for partition in sources:
        d1 = day1_for(inputs.guild_of(partition))
        if row := inputs.daily.get((partition, d1, user_id)):
            day1_rows.append(row)
        if hist := inputs.hist.get((partition, d1, user_id)):
            hist_rows.append(hist)
    name = inputs.name(scope, user_id) or "this member"

    facts = "\n".join(f for _s, f in facts_pairs)
    day1 = "\n".join(r["summary"] for r in day1_rows)
    historical = "\n".join(r["summary"] for r in hist_rows)
    # the forgotten facts of every partition this context reads (stages/forgetting.py)
    forgotten = ctx.forgetting().applied(sources, [user_id], [name, facts, day1, historical])
    made_from = {
        "facts": [[s, input_hash(f)] for s, f in facts_pairs],
        "day1": [[r["partition"], r["day"].isoformat(), r["input_hash"]] for r in day1_rows],
        "historical": [[r["partition"], r["day"].isoformat(), r["input_hash"]] for r in hist_rows],
    }
    non_empty = [t for t in (facts, day1, historical) if t]
    if not non_empty:
        return ItemStatus.EMPTY
    key = input_hash("merge", str(scope), user_id, name, ctx.summarizer.fingerprint("merge"),
                     facts, day1, historical, forgotten.key())

    async def compute(existing: dict | None) -> None:
        degraded_reason = None
        if len(non_empty) == 1:
            text = non_empty[0]  # nothing to merge: no summarizer call
        else:
            outcome = await ctx.summarizer.merge(name, facts, day1, historical)
            ctx.stats.record(outcome)
            text, degraded_reason = outcome.value, outcome.degraded_reason
        own_reason = degraded_reason
        if degraded_reason is None and any(r["degraded"] for r in day1_rows + hist_rows):
            degraded_reason = BUILT_FROM_DEGRADED
        ctx.writer.context({
            "scope": str(scope), "user_id": user_id, "context": forgotten.scrub(text, user_id, name),
            "as_of_day": as_of, "made_at": ctx.now(), "input_hash": key, "inputs": made_from,
            "degraded": degraded_reason is not None, "degraded_reason": degraded_reason,
            "attempts": next_attempts(existing, own_reason),
        })
        ctx.stats.contexts_written += 1

    def reread() -> dict | None:
        return next(iter(ctx.store.contexts(str(scope), user_id, text=False)), None)

    def newer(row: dict | None) -> ItemStatus | None:
        # a replay of an older range never overwrites a context made as of a later day
        return ItemStatus.STALE if row is not None and row["as_of_day"] > as_of else None

    def moved(row: dict) -> None:  # unchanged inputs, now valid as of a later day 1
        if row["as_of_day"] != as_of:
            ctx.writer.touch(str(scope), user_id, as_of)

    return await refresh_item(ctx, Item(
        key=f"merge:{scope}:{user_id}", input_hash=key, stored=inputs.contexts.get((str(scope), user_id)),
        reread=reread, compute=compute, settled=newer, on_cached=moved))


async def run_merges(ctx: RunContext, partitions: list[str], day1_for: Day1For) -> None:
    """Every (scope, user) of these scopes, from inputs read once; the items are independent, so
    an LLM summarizer keeps several in flight within its limits."""
    ctx.writer.flush()  # merges read the dailies and historicals written so far
    channels = ctx.store.channels()
    guilds = {c["guild_id"] for c in channels.values()}
    day1s = {day1_for(g) for g in guilds | {None}} | {day1_for(int(p.split(":")[1])) for p in partitions
                                                     if p.startswith("guild:")}
    inputs = MergeInputs(ctx.store, day1s)
    by_partition: dict[str, dict[dt.date, set[int]]] = {}
    for (p, d, u) in list(inputs.daily) + list(inputs.hist):
        by_partition.setdefault(p, {}).setdefault(d, set()).add(u)
    jobs = []
    dm_users: set[int] = set()
    for partition in partitions:
        users = set(by_partition.get(partition, {}).get(day1_for(inputs.guild_of(partition)), set()))
        users |= {u for u, pairs in inputs.facts.items() if any(s == partition for s, _f in pairs)}
        if partition.startswith("dm:"):
            users |= {u for (s, u) in inputs.contexts if s == partition}
            dm_users |= users
        jobs.extend((parse_scope(partition), user_id) for user_id in sorted(users))
    inputs.preload_user_partitions(dm_users)

    async def bounded(scope: Scope, user_id: int) -> None:
        async with ctx.slot():
            await merge_one(ctx, scope, user_id, day1_for, inputs)

    await asyncio.gather(*(bounded(scope, user_id) for scope, user_id in jobs))
    ctx.writer.flush()
