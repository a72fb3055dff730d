"""Message deletion (a bot's message-delete event, `mempipe messages delete`, a JSONL row with
`"deleted": true`).

One transaction: the chat_history rows go; each one's partition-day (the local day in its
guild's timezone, as the daily stage cuts days) is queued for the next run, which recomputes it
wherever it is in time (pipeline/runner.py; a day left with no message loses its summaries);
facts lose the deleted messages from their provenance (`memory_facts.sources`), and a fact that
rested only on them is deleted; a control_actions row per user whose data changed records how
many rows (never a text); batch mode's stored requests that may quote the text go (their days',
their partitions' past weeks, every merge; asked again), and the in-chat requests of the
deleted messages (a pending one is then never applied; one already applied stays applied). The historical rows and contexts built from those days follow at that
run, by their input hashes.

A message is (channel id, message id); a bare message id deletes every stored message with that
id (Discord's ids are unique across channels). An id that matches nothing is counted, not an error.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections import Counter, defaultdict
from typing import Any, Iterable

from ..clock import Clock, system_clock
from ..config import Settings
from ..errors import IdError
from ..ids import parse_id

ACTION = "delete_messages"
REASON = "message deleted"
MessageRef = Any  # (channel id, message id), a message id, or "CHANNEL:MESSAGE" / "MESSAGE" text


def parse_message_refs(ids: Iterable[MessageRef]) -> tuple[list[tuple[int, int]], list[int]]:
    """(channel, message) pairs and bare message ids, each checked by the one id rule (IdError)."""
    pairs: list[tuple[int, int]] = []
    bare: list[int] = []
    for ref in ids:
        if isinstance(ref, str) and ":" in ref:
            ref = tuple(ref.split(":", 1))
        if isinstance(ref, (tuple, list)):
            if len(ref) != 2:
                raise IdError(f"a message is (channel id, message id), got {ref!r}")
            pairs.append((parse_id(ref[0], "channel id"), parse_id(ref[1], "message id")))
        else:
            bare.append(parse_id(ref, "message id"))
    return pairs, bare


def partition_days_of(messages: Iterable[dict], tz_for_guild) -> set[tuple[str, dt.date]]:
    """The (partition, local day) of each message (with `partition`, `guild_id` and `ts`): the day
    in its guild's timezone (DMs: the default), as the daily stage cuts days."""
    return {(m["partition"], m["ts"].astimezone(tz_for_guild(m["guild_id"])).date()) for m in messages}


def delete_messages(store, ids: Iterable[MessageRef], settings: Settings, *, clock: Clock = system_clock,
                    requested_by: int | None = None, conn=None) -> dict[str, int]:
    """Delete messages and everything made only from them (see the module's docstring), in one
    transaction — the caller's when `conn` is given (`store.transaction()`). `ids`: (channel id,
    message id) pairs, or bare message ids. `requested_by` goes to the audit rows (None: the
    operator). Returns counts: requested, deleted, unknown, partition_days_queued, facts_deleted,
    facts_updated."""
    pairs, bare = parse_message_refs(ids)
    now = clock()
    opened = store.transaction() if conn is None else contextlib.nullcontext(conn)
    with opened as c:
        return delete_in(store, c, pairs, bare, settings, now, requested_by=requested_by)


def delete_in(store, conn, pairs: list[tuple[int, int]], bare: list[int], settings: Settings, now: dt.datetime, *,
              requested_by: int | None = None) -> dict[str, int]:
    """delete_messages inside the caller's transaction (an import with deletion rows)."""
    found = store.find_messages(pairs, bare, conn=conn)
    keys = [(m["channel_id"], m["message_id"]) for m in found]
    pairs, bare = set(pairs), set(bare)
    unknown = len(pairs - set(keys)) + len(bare - {k[1] for k in keys})
    counts = {"requested": len(pairs) + len(bare), "deleted": 0, "unknown": unknown,
              "partition_days_queued": 0, "facts_deleted": 0, "facts_updated": 0}
    if not found:
        return counts
    store.lock_removals(conn)  # runs' write batches under way commit first (their facts lose these sources below)
    counts["deleted"] = store.delete_message_rows(keys, conn=conn)
    days = partition_days_of(found, settings.timezones.for_guild)
    # batch mode's requests that may quote the deleted text go (asked again); the rest of a night stays
    store.drop_batch_requests(partition_days=days, conn=conn)
    store.drop_chat_requests(keys, conn=conn)  # an in-chat request said in a deleted message (pending: never applied)
    counts["partition_days_queued"] = store.enqueue_days(
        [{"partition": p, "day": d, "reason": REASON} for p, d in sorted(days)], now, conn=conn)
    facts = store.drop_fact_sources({m["partition"] for m in found}, {f"{c}:{m}" for c, m in keys}, conn=conn)
    per_user: dict[int, Counter] = defaultdict(Counter)
    for m in found:
        per_user[m["user_id"]]["messages"] += 1
    for user_id, days_of in _days_by_user(found, settings).items():
        per_user[user_id]["partition_days"] = len(days_of)
    for user_id, changed in facts.items():
        per_user[user_id].update(changed)
        counts["facts_deleted"] += changed["facts_deleted"]
        counts["facts_updated"] += changed["facts_updated"]
    for user_id, detail in sorted(per_user.items()):
        detail = {k: detail.get(k, 0) for k in ("messages", "partition_days", "facts_deleted", "facts_updated")}
        store.record_action(ACTION, str(user_id), requested_by, None, now,
                            detail["messages"] + detail["facts_deleted"] + detail["facts_updated"], detail, conn=conn)
    return counts


def _days_by_user(found: list[dict], settings: Settings) -> dict[int, set]:
    out: dict[int, set] = defaultdict(set)
    for m in found:
        out[m["user_id"]] |= partition_days_of([m], settings.timezones.for_guild)
    return out
