"""Historical stage: per (partition, user, day 1), one summary of that user's days 2-7."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections import defaultdict

from ..calendar import history_days
from ..errors import SummarizerError
from ..hashing import input_hash
from ..summarize.text import scrub
from .claims import claim
from .context import RunContext


async def run_historical(ctx: RunContext, partition: str, guild_id: int | None, day1: dt.date) -> None:
    first, last = history_days(day1)
    per_user: dict[int, list[dict]] = defaultdict(list)
    for row in ctx.store.dailies(partition, first, last):
        per_user[row["user_id"]].append(row)
    existing = ctx.store.historicals(partition, day1)
    names = ctx.store.member_names(guild_id or 0, per_user)
    forgotten = ctx.forgotten_for(per_user)
    fingerprint = ctx.summarizer.fingerprint("historical")

    async def one_user(uid: int, rows: list[dict]) -> None:
        name = names.get(uid, "this member")
        dailies = [(r["day"], r["summary"]) for r in rows]
        key = input_hash("historical", partition, uid, name, fingerprint, dailies, forgotten.get(uid, []))

        def fresh(row: dict | None) -> bool:
            return row is not None and row["input_hash"] == key and not ctx.force and not ctx.retry_degraded(row)

        if fresh(existing.get(uid)):
            ctx.stats.cache_hits += 1
            return
        if ctx.dry_run:
            return
        async with claim(ctx, f"historical:{partition}:{uid}:{day1.isoformat()}"):
            # another run may have just written it (only possible where claims are in use)
            old = ctx.store.historical_of(partition, day1, uid) if ctx.uses_claims else existing.get(uid)
            if fresh(old):
                ctx.stats.cache_hits += 1
                return
            try:
                outcome = await ctx.summarizer.historical(name, dailies)
            except SummarizerError:
                ctx.stats.errors += 1
                return
            ctx.stats.record(outcome)
            ctx.writer.historical({
                "partition": partition, "user_id": uid, "day": day1,
                "summary": scrub(outcome.value, forgotten.get(uid, []), name),
                "input_hash": key, "source_days": len(dailies),
                "degraded": outcome.degraded_reason is not None or any(r["degraded"] for r in rows),
                "created_at": ctx.now(),
                "attempts": (old["attempts"] + 1 if old and old["degraded"] else 1) if outcome.degraded_reason else 1,
                "degraded_reason": outcome.degraded_reason
                or ("built from degraded summaries" if any(r["degraded"] for r in rows) else None),
            })
            ctx.stats.historical_computed += 1

    # Users are independent: an LLM summarizer keeps several in flight within its limits.
    async def bounded(uid: int, rows: list[dict]) -> None:
        async with ctx.slot():
            await one_user(uid, rows)

    await asyncio.gather(*(bounded(uid, rows) for uid, rows in sorted(per_user.items())))
    for uid in set(existing) - set(per_user):  # its dailies are gone (retention): so is it
        if not ctx.dry_run:
            ctx.store.delete_historical(partition, uid, day1)
