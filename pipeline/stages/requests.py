"""In-chat memory requests (README, "In-chat memory requests"; pipeline/memory/requests.py finds
them): noted when a partition-day is summarised, applied after the daily stage of a run.

- Noted (`noted`): each request of a summarizer answer becomes a pending chat_requests row, keyed
  by its message, unless that message's request is already known — a day made again never
  applies a request twice. The request message is never mined for facts (its extracted facts are
  dropped, counted as facts_rejected_request).
- Applied (`apply_requests`, by the runner once the day's summaries and facts are written, in the
  order they were said), each by the one run that claims it (pending -> applied / refused, so two
  overlapping runs never both apply it; a crash between claim and apply loses it, never repeats
  it): through the controls of pipeline/controls/facts.py with the speaker as
  requester and subject, in the scope of the partition it was said in (so at its privacy level: a
  remember there is a fact of that partition, confidence 1, its source the request's message
  (deleting that message takes the fact back, as for any fact resting on it); a forget works like
  `facts forget` in that scope). A refused request (about someone else; a fact `facts remember`
  would refuse) changes nothing. Each is audited (control_actions, "via": "chat", never the text)
  and counted in pipeline_runs. The contexts are made by the run's merge stage that follows.
"""

from __future__ import annotations

from typing import Callable

from ..calendar import parse_scope
from ..controls.audit import record
from ..controls.facts import forget, remember
from ..errors import InputError
from ..memory.requests import FORGET, UNSAFE
from ..summarize.base import PartitionDay
from .context import RunContext
from .merge_inputs import MergeInputs


def noted(ctx: RunContext, pd: PartitionDay, given: PartitionDay, requests: list,
          unnamed: Callable[[str], str] | None = None) -> set[int]:
    """Record the requests of one answer (positions in `given.lines`) as pending; returns their
    positions (those messages are requests, not facts). `unnamed`: applied to each request's
    text (the day's erased names, stages/erased.py `ErasedNames.scrubber`)."""
    if not requests:
        return set()
    rows = []
    for r in requests:
        line = given.lines[r.position]
        text = None if r.refused else r.text if unnamed is None else unnamed(r.text)
        rows.append({"channel_id": line.channel_id, "message_id": line.message_id, "user_id": r.user_id,
                     "partition": pd.partition, "day": pd.day, "ts": line.ts, "kind": r.kind,
                     "text": text, "reason": r.refused, "detected_at": ctx.now()})
    record_requests = getattr(ctx.store, "record_requests", None)  # the SQL store's
    if not ctx.dry_run and record_requests is not None:
        record_requests(rows)
    return {r.position for r in requests}


async def apply_requests(ctx: RunContext) -> set[str]:
    """Apply every pending request, oldest first. Returns the partitions whose forgotten facts
    changed (their days are made again in this run, so the summaries never say it)."""
    pending = getattr(ctx.store, "pending_requests", None)
    if ctx.dry_run or pending is None:
        return set()
    touched: set[str] = set()
    for r in pending():  # each with its text, read before the claim clears it
        user_id, scope, reason = r["user_id"], r["partition"], r["reason"]
        # claimed first: of two overlapping runs only one applies it; a crash after the claim
        # leaves it handled but not applied (at most once, never twice)
        if not ctx.store.claim_request(r["channel_id"], r["message_id"], "refused" if reason else "applied",
                                       reason, ctx.now()):
            continue
        if reason is None:
            try:
                if r["kind"] == FORGET:
                    await forget(ctx, scope, user_id, r["text"], requested_by=user_id, via="chat", refresh=False)
                    ctx.stats.requests_forgotten += 1
                    touched |= set(MergeInputs(ctx.store, [], [user_id]).source_partitions(parse_scope(scope), user_id))
                else:
                    await remember(ctx, scope, user_id, r["text"], requested_by=user_id, via="chat", refresh=False,
                                   day=r["day"], source=f"{r['channel_id']}:{r['message_id']}")
                    ctx.stats.requests_remembered += 1
            except InputError:  # refused by the rules of `facts remember` (pipeline/safety.py, raw ids)
                reason = UNSAFE
                ctx.store.handled_request(r["channel_id"], r["message_id"], "refused", reason, ctx.now())
        if reason is not None:
            name = f"requests_refused_{reason}"
            setattr(ctx.stats, name, getattr(ctx.stats, name) + 1)
            record(ctx.store, r["kind"], user_id, "subject", user_id, scope, ctx.now(), {}, via="chat", refused=reason)
    return touched
