"""One item's refresh, the same for a partition-day, a historical row and a context row:

  fresh?  -> CACHED (counted as a cache hit)
  reused? -> REUSED: another key's stored row has this input hash (a historical row as of another
             day 1); its text is copied, no call (counted as a cache hit; a dry run writes nothing)
  dry run -> PLANNED (the item's estimate is added)
  claim   -> BUSY when another run holds it and the caller would rather come back later
  re-read under the claim (another run may have just written it) -> CACHED; then REUSED as above
             (an item whose compute costs no model call — `Item.free`: a rendered week or
             context, a copy — takes no claim and is not read again: two runs that meet on it
             make the same row from the same inputs, and a claim, a re-read and a write of its
             own would cost more round trips than the compute; its write waits for the batch)
  compute -> COMPUTED once its row is written (stages/writes.py: with a model, a group commit
             the item waits for, so a run waiting on the claim reads the row), or FAILED when
             the summarizer raised (counted, logged; the run goes on), or DEFERRED when an
             answer comes from a batch job (gemini.batch; pipeline/llm/batch.py): nothing
             written, not an error, counted as deferred; the run stops after this stage
"""

from __future__ import annotations

import asyncio
import enum
import logging
from dataclasses import dataclass
from typing import Awaitable, Callable

from ..errors import SummarizerError
from ..llm.batch import Deferred, item_done, item_requests
from ..store.locks import NullLock
from .context import RunContext

log = logging.getLogger(__name__)
POLL_S = 0.05  # how often a waiting claim asks again (never blocks the event loop)
Row = dict | None


class ItemStatus(enum.Enum):
    EMPTY = "empty"        # nothing to compute (nobody spoke, no inputs)
    CACHED = "cached"      # the stored row is fresh
    STALE = "stale"        # a newer row exists (a replay of an older range leaves it alone)
    PLANNED = "planned"    # dry run: would be computed
    REUSED = "reused"      # copied from a stored row with the same input hash, no call
    COMPUTED = "computed"
    FAILED = "failed"
    BUSY = "busy"          # another run holds the claim (only when the caller does not wait)
    DEFERRED = "deferred"  # waits for a batch job's answer (gemini.batch): a later run makes it
    WAITING = "waiting"    # today's fold of a few new messages waits for more (stages/daily.py _fold_waits)


@dataclass
class Item:
    key: str                                    # claim key and log label, e.g. "daily:guild:1:2026-11-01"
    input_hash: str
    stored: Row                                 # the row as read in bulk before the item ran
    reread: Callable[[], Row]                   # the row again, under the claim
    compute: Callable[[Row], Awaitable[None]]   # compute and hand the row to the writer
    plan: Callable[[], None] | None = None      # dry run: add this item's estimate
    settled: Callable[[Row], ItemStatus | None] | None = None  # an item-specific verdict first
    on_cached: Callable[[Row], None] | None = None             # a fresh row needs a small update
    reused: Row = None                          # a fresh row stored for another key, same input hash
    copy: Callable[[Row], None] | None = None   # hand `reused`, copied to this key, to the writer
    free: bool = False                          # compute makes no model call: no claim, no re-read


def next_attempts(existing: Row, own_degraded_reason: str | None) -> int:
    """How many runs in a row produced this row by a fallback (bounds later retries)."""
    if not own_degraded_reason:
        return 1
    return existing["attempts"] + 1 if existing and existing["degraded"] else 1


async def refresh_item(ctx: RunContext, item: Item, *, wait: bool = True) -> ItemStatus:
    def verdict(row: Row) -> ItemStatus | None:
        if item.settled is not None and (status := item.settled(row)) is not None:
            return status
        if ctx.is_fresh(row, item.input_hash):
            ctx.stats.cache_hits += 1
            if item.on_cached is not None and not ctx.dry_run:
                item.on_cached(row)
            return ItemStatus.CACHED
        return None

    def reuse() -> ItemStatus | None:
        if item.reused is None or item.copy is None:
            return None
        ctx.stats.cache_hits += 1
        if not ctx.dry_run:
            item.copy(item.reused)
        return ItemStatus.REUSED

    if (status := verdict(item.stored)) is not None:
        return status
    if ctx.dry_run:
        if (status := reuse()) is not None:
            return status
        if item.plan is not None:
            item.plan()
        return ItemStatus.PLANNED
    claimed = ctx.uses_claims and not item.free
    lock = ctx.claim_lock(item.key) if claimed else NullLock()
    try:
        while not lock.try_acquire():
            if not wait:
                return ItemStatus.BUSY
            await asyncio.sleep(POLL_S)
        existing = item.reread() if claimed else item.stored
        if (status := verdict(existing)) is not None or (status := reuse()) is not None:
            return status
        try:
            with item_requests(item.key) as batch_used:
                await item.compute(existing)
        except Deferred:
            ctx.stats.deferred += 1
            return ItemStatus.DEFERRED
        except SummarizerError as exc:
            ctx.stats.errors += 1
            log.warning("%s failed: %s", item.key, exc)
            return ItemStatus.FAILED
        await ctx.writer.written()  # its row is stored before the claim goes (stages/writes.py: group commit)
        item_done(ctx.summarizer, batch_used)  # the batch answers it used: deleted when the night is done
        return ItemStatus.COMPUTED
    finally:
        lock.release()
