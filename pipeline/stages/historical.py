"""Historical stage: per (partition, user, day 1), one summary of that user's days 2-7."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections import defaultdict

from ..calendar import days_between, history_days
from ..hashing import input_hash
from .context import RunContext
from .refresh import Item, next_attempts, refresh_item

BUILT_FROM_DEGRADED = "built from degraded summaries"


async def run_historical(ctx: RunContext, partition: str, guild_id: int | None, day1: dt.date) -> None:
    first, last = history_days(day1)
    per_user: dict[int, list[dict]] = defaultdict(list)
    for row in ctx.store.dailies(days_between(first, last), partition=partition):
        per_user[row["user_id"]].append(row)
    existing = {r["user_id"]: r for r in ctx.store.historicals([day1], partition=partition)}
    names = {u: n for (_p, u), n in ctx.store.member_names(per_user, [partition]).items()}  # this partition's
    forgetting = ctx.forgetting()
    fingerprint = ctx.summarizer.fingerprint("historical")

    async def one_user(uid: int, rows: list[dict]) -> None:
        name = names.get(uid, "this member")
        dailies = [(r["day"], r["summary"]) for r in rows]
        inputs_degraded = any(r["degraded"] for r in rows)
        forgotten = forgetting.applied([partition], [uid], [name, *(t for _d, t in dailies)])

        async def compute(old: dict | None) -> None:
            outcome = await ctx.summarizer.historical(name, dailies)
            ctx.stats.record(outcome)
            ctx.writer.historical({
                "partition": partition, "user_id": uid, "day": day1,
                "summary": forgotten.scrub(outcome.value, uid, name),
                "input_hash": key, "source_days": len(dailies),
                "degraded": outcome.degraded_reason is not None or inputs_degraded,
                "created_at": ctx.now(),
                "attempts": next_attempts(old, outcome.degraded_reason),
                "degraded_reason": outcome.degraded_reason or (BUILT_FROM_DEGRADED if inputs_degraded else None),
            })
            ctx.stats.historical_computed += 1

        key = input_hash("historical", partition, uid, name, fingerprint, dailies, forgotten.key())
        await refresh_item(ctx, Item(
            key=f"historical:{partition}:{uid}:{day1.isoformat()}", input_hash=key, stored=existing.get(uid),
            reread=lambda: next(iter(ctx.store.historicals([day1], partition=partition, user_ids=[uid])), None),
            compute=compute))

    # Users are independent: an LLM summarizer keeps several in flight within its limits.
    async def bounded(uid: int, rows: list[dict]) -> None:
        async with ctx.slot():
            await one_user(uid, rows)

    await asyncio.gather(*(bounded(uid, rows) for uid, rows in sorted(per_user.items())))
    gone = set(existing) - set(per_user)  # their dailies are gone (retention): so are these
    if gone and not ctx.dry_run:
        ctx.store.delete_historicals(partition, day1, gone)
