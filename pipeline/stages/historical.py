"""Historical stage: per (partition, user, day 1), one summary of that user's days 2-7.

Reuse by input hash. A row's input hash covers everything its text depends on: the partition,
the user and the name the prompt gives them, the summarizer's fingerprint (kind, model, prompt
template, lengths: `Summarizer.fingerprint`), each daily summary with its own date, and the
forgotten facts scrubbed from the answer with the names that tie a sentence to their owner. It
does not hold day 1: the request never states it (prompts/historical.xml.j2 shows each daily's
absolute date and no "today"), so a model cannot write "yesterday" about it, and an answer that
names a date names one of the dailies' dates, which are in the hash. Two day 1s with the same
hash therefore send the same request, and a row as of another day 1 of the same (partition,
user) with this item's hash is copied (text, degraded flags, attempts) instead of calling the
summarizer: a nightly run where the user wrote nothing there on the new day 2 and nothing aged
out of day 7 reuses yesterday's text. Such a day 1 lies within the days that keep every daily in
its days 2-7 ([newest daily + 1, oldest daily + 6]); the copy is counted as a cache hit
(`stats.historical_reused` too). A source that is not fresh for this hash (a fallback due a
retry, or --force) is not copied: the item is computed.

Without a model when it fits (pipeline/stages/recent.py): when the dated dailies rendered one line
a day fit `week_room` (what a context leaves for the past week), that render is the row's text,
with no summarizer call (`stats.historical_rendered`), and `recent.RENDER` stands for the
summarizer's fingerprint in the hash. A week that exceeds it is, by default ([summary] condense =
"cut"), the same render with each day's summary cut to fit (`recent.render_week_within`: every
day keeps its lead; `recent.RENDER_FIT` and the room in the hash), still with no call; with
condense = "model" it is condensed by the summarizer instead.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..calendar import HISTORY_DAYS, days_between, historical_item_key, history_days
from ..hashing import input_hash
from .context import RunContext
from .recent import RENDER, RENDER_FIT, render_week, render_week_within, week_room
from .refresh import Item, ItemStatus, next_attempts, refresh_item

if TYPE_CHECKING:  # forgetting reads through merge, which imports the context module
    from .forgetting import Applied

BUILT_FROM_DEGRADED = "built from degraded summaries"


@dataclass(frozen=True)
class Inputs:
    name: str
    dailies: list[tuple[dt.date, str]]
    inputs_degraded: bool
    forgotten: "Applied"
    key: str
    rendered: str | None  # the dated lines, when they fit the week's room: the text, no call


def _inputs(partition: str, uid: int, name: str, fingerprint: str, rows: list[dict], forgetting,
            room: int, cut: bool) -> Inputs:
    dailies = [(r["day"], r["summary"]) for r in rows]
    rendered, how = render_week(dailies), RENDER
    if len(rendered) > room:
        rendered, how = (render_week_within(dailies, room), (RENDER_FIT, room)) if cut else (None, fingerprint)
    forgotten = forgetting.applied([partition], [uid], [name, *(t for _d, t in dailies)])
    scrubbed = [forgotten.key()]  # and the names by which scrub finds a fact's owner
    if forgotten.facts:
        scrubbed.append({str(u): list(ns) for u, ns in sorted(forgotten.names.items())})
    key = input_hash("historical", partition, uid, name, how, dailies, *scrubbed)
    return Inputs(name, dailies, any(r["degraded"] for r in rows), forgotten, key, rendered)


def _reusable(ctx: RunContext, partition: str, day1: dt.date, wanted: dict[int, Inputs]) -> dict[int, dict]:
    """For each user, a fresh stored row as of another day 1 with the same input hash (the
    nearest day 1, earlier first), read in one query for the days that could hold one."""
    days: set[dt.date] = set()
    for inp in wanted.values():
        newest, oldest = max(d for d, _t in inp.dailies), min(d for d, _t in inp.dailies)
        days.update(days_between(newest + dt.timedelta(days=1), oldest + dt.timedelta(days=HISTORY_DAYS)))
    days.discard(day1)
    if not days:
        return {}
    found: dict[int, dict] = {}
    rows = ctx.store.historicals(days, partition=partition, user_ids=list(wanted))
    for row in sorted(rows, key=lambda r: (abs((r["day"] - day1).days), r["day"] > day1)):
        uid = row["user_id"]
        if uid not in found and ctx.is_fresh(row, wanted[uid].key):
            found[uid] = row
    return found


async def run_historical(ctx: RunContext, partition: str, guild_id: int | None, day1: dt.date) -> None:
    first, last = history_days(day1)
    per_user: dict[int, list[dict]] = defaultdict(list)
    for row in ctx.store.dailies(days_between(first, last), partition=partition):
        per_user[row["user_id"]].append(row)
    existing = {r["user_id"]: r for r in ctx.store.historicals([day1], partition=partition)}
    names = {u: n for (_p, u), n in ctx.store.member_names(per_user, [partition]).items()}  # this partition's
    forgetting = ctx.forgetting()
    fingerprint = ctx.summarizer.fingerprint("historical")
    room = week_room(ctx.settings.summary)
    cut = ctx.settings.summary.condense == "cut"
    inputs = {uid: _inputs(partition, uid, names.get(uid, "this member"), fingerprint, rows, forgetting, room, cut)
              for uid, rows in per_user.items()}
    reusable = _reusable(ctx, partition, day1, {uid: inp for uid, inp in inputs.items()  # a render costs less
                                                if inp.rendered is None and not ctx.is_fresh(existing.get(uid), inp.key)})

    async def one_user(uid: int, inp: Inputs) -> None:
        name, dailies, key = inp.name, inp.dailies, inp.key

        def row(summary: str, own_reason: str | None, attempts: int) -> dict:
            return {
                "partition": partition, "user_id": uid, "day": day1, "summary": summary,
                "input_hash": key, "source_days": len(dailies),
                "degraded": own_reason is not None or inp.inputs_degraded, "created_at": ctx.now(),
                "attempts": attempts,
                "degraded_reason": own_reason or (BUILT_FROM_DEGRADED if inp.inputs_degraded else None),
            }

        async def compute(old: dict | None) -> None:
            if inp.rendered is not None:  # fits, or cut to fit: the dated lines themselves, no call
                ctx.writer.historical(row(inp.forgotten.scrub(inp.rendered, uid, name), None, 1), called=False)
                ctx.stats.historical_rendered += 1
                return
            outcome = await ctx.summarizer.historical(name, dailies)
            ctx.stats.record(outcome)
            ctx.stats.summarized += 1
            ctx.writer.historical(row(inp.forgotten.scrub(outcome.value, uid, name), outcome.degraded_reason,
                                      next_attempts(old, outcome.degraded_reason)))
            ctx.stats.historical_computed += 1

        def copy(source: dict) -> None:  # the same request as `source`'s: its answer, no call
            reason = source["degraded_reason"]
            own = None if reason is None or reason == BUILT_FROM_DEGRADED else reason
            ctx.writer.historical(row(source["summary"], own, source["attempts"]), called=False)

        def plan() -> None:  # dry run: rendered, or a summarizer call (and its estimate, for a model)
            if inp.rendered is not None:
                ctx.stats.historical_rendered += 1
                return
            ctx.stats.summarized += 1
            estimate = getattr(ctx.summarizer, "estimate", None)
            calls, tokens = estimate("historical", name, dailies) if estimate else (0, 0)
            ctx.stats.planned_llm_calls += calls
            ctx.stats.planned_prompt_tokens += tokens

        status = await refresh_item(ctx, Item(
            key=historical_item_key(partition, uid, day1), input_hash=key, stored=existing.get(uid),
            reread=lambda: next(iter(ctx.store.historicals([day1], partition=partition, user_ids=[uid])), None),
            compute=compute, plan=plan, reused=reusable.get(uid), copy=copy,
            free=inp.rendered is not None or uid in reusable))  # a render or a copy: no call
        ctx.stats.historical_items += 1
        ctx.stats.historical_reused += status is ItemStatus.REUSED  # a dry run: would be
        ctx.stats.passed_unchanged += status is ItemStatus.CACHED

    # Users are independent: an LLM summarizer keeps several in flight within its limits.
    async def bounded(uid: int, inp: Inputs) -> None:
        async with ctx.slot():
            await one_user(uid, inp)

    await asyncio.gather(*(bounded(uid, inp) for uid, inp in sorted(inputs.items())))
    gone = set(existing) - set(per_user)  # their dailies are gone (retention): so are these
    if gone and not ctx.dry_run:
        ctx.store.delete_historicals(partition, day1, gone)
