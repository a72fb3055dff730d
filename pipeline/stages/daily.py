"""Daily stage: one summarizer call per (partition, local day) -> one row per active user."""

from __future__ import annotations

import bisect
import dataclasses
import datetime as dt

from ..calendar import daily_item_key, day_bounds
from ..hashing import input_hash
from ..memory.requests import parse as parse_request
from ..summarize.base import ChatLine, PartitionDay
from ..summarize.markup import mentioned_channels, mentioned_ids
from ..summarize.markup import render as render_markup
from ..summarize.text import sentences
from .context import RunContext
from .extraction import fact_rows
from .forgetting import Applied
from .refresh import Item, ItemStatus, next_attempts, refresh_item
from .requests import noted


def _readable_channels(ctx: RunContext, partition: str, guild_id: int | None, messages: list[dict]) -> dict:
    """The channels these messages mention that the partition's audience can read, with their
    names: a restricted channel's readers can read their guild's public channels, nobody else
    reads another partition's channels."""
    wanted = set().union(*(mentioned_channels(m["text"]) for m in messages))
    if not wanted:
        return {}
    readable = {partition} | ({f"guild:{guild_id}"} if partition.startswith("channel:") else set())
    return {c: row.get("name") for c, row in ctx.store.channels(wanted).items() if row["partition"] in readable}


# Part of every daily input hash: the rendering of names changed (names as they stood at each
# message's time, issue 14), so no partition-day hashed the old way is taken as fresh.
DAILY_INPUT_VERSION = "names-at-time"


def _partition_day(partition: str, day: dt.date, messages: list[dict], names_at: "_NamesAt",
                   replied: dict[tuple[int, int], tuple[int, str | None]], channels: dict[int, str | None]) -> PartitionDay:
    """Names as they stood when each message was posted, so that a later first post, rename or
    import of a name never changes this day's input: a speaker is the name on their first named
    message of the day (else "member N"), a reply names the replied message's author_name, a
    mention the mentioned user's name in this partition at the message's time (else "@someone")."""
    speakers: dict[int, str | None] = {}
    for m in messages:
        if speakers.get(m["user_id"]) is None:
            speakers[m["user_id"]] = m["author_name"]
    speakers = {u: n or f"member {i}" for i, (u, n) in enumerate(speakers.items(), 1)}
    lines = []
    for m in messages:
        reply = replied.get((m["channel_id"], m["reply_to"])) if m["reply_to"] else None
        names = {u: n for u in mentioned_ids(m["text"]) if (n := names_at(u, m["ts"])) is not None}
        lines.append(ChatLine(
            message_id=m["message_id"], user_id=m["user_id"], name=speakers[m["user_id"]],
            text=render_markup(m["text"], names, channels), ts=m["ts"],
            reply_to_name=reply[1] if reply else None, channel_id=m["channel_id"],
            reply_to_user=reply[0] if reply else None,
        ))
    return PartitionDay(partition, day, tuple(lines), dict(sorted(speakers.items())))


class _NamesAt:
    """A user's display name in one partition at a time: the author_name of their latest named
    message there at or before it — from the window read (`stored`, ordered by time), else the
    name that stood when the window began (`earlier`, store.names_before). Only this partition's
    messages: a name is never taken from another partition (ARCHITECTURE.md, "names")."""

    def __init__(self, stored: list[dict], users: set[int], earlier: dict[int, str]):
        self.history: dict[int, tuple[list, list]] = {}
        for m in stored:
            if m["user_id"] in users and m["author_name"] is not None:
                times, names = self.history.setdefault(m["user_id"], ([], []))
                times.append(m["ts"])
                names.append(m["author_name"])
        self.earlier = earlier

    def __call__(self, user_id: int, ts: dt.datetime) -> str | None:
        times, names = self.history.get(user_id, ((), ()))
        i = bisect.bisect_right(times, ts)
        return names[i - 1] if i else self.earlier.get(user_id)


def build_partition_day(ctx: RunContext, partition: str, guild_id: int | None, day: dt.date) -> PartitionDay | None:
    """The summarizer's view of one partition-day, or None when nobody spoke."""
    return load_partition_days(ctx, partition, guild_id, [day]).get(day)


def load_partition_days(ctx: RunContext, partition: str, guild_id: int | None,
                        days: list[dt.date], emptied: set[dt.date] | None = None) -> dict[dt.date, PartitionDay]:
    """Every partition-day of `days` with messages, from one read of the partition's messages.
    Messages of an exclusion window (stages/exclusions.py) are left out; `emptied`, when given,
    receives the days that had messages but none left."""
    if not days:
        return {}
    tz = ctx.tz_for_guild(guild_id)
    start, _ = day_bounds(min(days), tz)
    _, end = day_bounds(max(days), tz)
    stored = ctx.store.messages_between(partition, start, end)
    messages = ctx.erased().kept(partition, ctx.exclusions().kept(partition, stored))
    wanted = set(days)
    if emptied is not None and len(messages) < len(stored):
        emptied |= {d for m in stored if (d := m["ts"].astimezone(tz).date()) in wanted} - \
            {m["ts"].astimezone(tz).date() for m in messages}
    if not messages:
        return {}
    # a reply names a message of its own channel: (channel id, message id) -> (author, author_name)
    in_window = {(m["channel_id"], m["message_id"]): (m["user_id"], m["author_name"]) for m in stored}
    replies = {(m["channel_id"], m["reply_to"]) for m in messages if m["reply_to"]}
    replied = {r: in_window[r] for r in replies if r in in_window}
    replied |= ctx.store.authors_of(replies - set(replied)) if replies - set(replied) else {}
    mentioned = set().union(*(mentioned_ids(m["text"]) for m in messages))
    earlier = ctx.store.names_before(partition, mentioned, start) if mentioned else {}
    names_at = _NamesAt(stored, mentioned, earlier)
    by_day: dict[dt.date, list[dict]] = {}
    for m in messages:
        day = m["ts"].astimezone(tz).date()
        if day in wanted:
            by_day.setdefault(day, []).append(m)
    channels = _readable_channels(ctx, partition, guild_id, messages)
    return {day: _partition_day(partition, day, msgs, names_at, replied, channels)
            for day, msgs in sorted(by_day.items())}


def daily_input_hash(pd: PartitionDay, forgotten: list, fingerprint: str) -> str:
    """`forgotten`: the key of the forgotten facts that apply to the partition-day (Applied.key).
    Each time as the text hashing.py's encoder makes of it, made here: the same bytes without a
    call back into Python per message (1.7% of a 1M-message replay's samples went to that hook)."""
    return input_hash(
        "daily", DAILY_INPUT_VERSION, pd.partition, pd.day, fingerprint,
        sorted(pd.speakers.items()),
        [(ln.message_id, ln.user_id, ln.ts.isoformat(), ln.text, ln.reply_to_name) for ln in pd.lines],
        sorted(forgotten),
    )


def _forgotten(ctx: RunContext, pd: PartitionDay) -> Applied:
    """The forgotten facts of this partition that apply to what its speakers' summaries can say."""
    texts = [*pd.speakers.values(), *(ln.text for ln in pd.lines), *(ln.reply_to_name or "" for ln in pd.lines)]
    return ctx.forgetting().applied([pd.partition], pd.speakers, texts)


_UNKNOWN = object()


async def run_daily(ctx: RunContext, partition: str, guild_id: int | None, day: dt.date, *,
                    wait: bool = True, pd: PartitionDay | None | object = _UNKNOWN,
                    stored: dict | None | object = _UNKNOWN, drop_if_empty: bool = False,
                    may_wait: bool = False) -> ItemStatus:
    """Bring one partition-day up to date (BUSY when another run is computing it and `wait` is
    false). `pd` and `stored` (its partition_days row) may be passed in when the caller read
    them in bulk. `drop_if_empty`: when no message is left (deleted, excluded), the day's stored
    summaries and partition_days row go too (without it, an empty day is left as it is: retention
    takes chat history a day before the summaries made from it). `may_wait`: the day is today in
    a run as of now, not queued for a recompute — a fold of a few new messages may wait
    (WAITING: `_fold_waits`)."""
    if pd is _UNKNOWN:
        pd = build_partition_day(ctx, partition, guild_id, day)
    if pd is None:
        if drop_if_empty and not ctx.dry_run:
            row = ctx.store.partition_days_between(partition, day, day).get(day) if stored is _UNKNOWN else stored
            if row is not None:
                ctx.writer.drop_day(partition, day)
        return ItemStatus.EMPTY
    ctx.stats.partition_days += 1
    forgotten = _forgotten(ctx, pd)  # applied to what the model writes, never quoted to it
    key = daily_input_hash(pd, forgotten.key(), ctx.summarizer.fingerprint("daily"))

    def reread() -> dict | None:
        return ctx.store.partition_days_between(partition, day, day).get(day)

    def plan() -> None:  # dry run: whether a model would be asked (a summarizer without one: no estimate)
        estimate = getattr(ctx.summarizer, "estimate_daily", None)
        calls, tokens = estimate(pd) if estimate else (0, 0)
        if estimate is not None and not calls:
            ctx.stats.passed_fits += 1  # the day's text fits its length target: no request
        else:
            ctx.stats.summarized += 1
        ctx.stats.planned_llm_calls += calls
        ctx.stats.planned_prompt_tokens += tokens

    async def compute(existing: dict | None) -> None:
        fold_from = _foldable_prefix(ctx, pd, existing)
        if fold_from:
            await _fold_daily(ctx, pd, key, forgotten, existing, fold_from)
        else:
            await _compute_daily(ctx, pd, key, forgotten, existing)

    def waits(row: dict | None) -> ItemStatus | None:  # before the stored row is taken as stale
        return ItemStatus.WAITING if may_wait and _fold_waits(ctx, pd, row) else None

    status = await refresh_item(ctx, Item(
        key=daily_item_key(partition, day), input_hash=key,
        stored=reread() if stored is _UNKNOWN else stored, reread=reread, compute=compute, plan=plan,
        settled=waits), wait=wait)
    if status is ItemStatus.BUSY:
        ctx.stats.partition_days -= 1  # counted again when it is retried
    ctx.stats.passed_unchanged += status is ItemStatus.CACHED
    ctx.stats.passed_fold_waits += status is ItemStatus.WAITING
    return status


def _fold_waits(ctx: RunContext, pd: PartitionDay, existing: dict | None) -> bool:
    """Today's stored running summaries stay as they are, without a request, while the only
    change since they were made is a few new messages (`_foldable_prefix`): fewer characters of
    text than `refresh.fold_min_chars` or, with [summary] condense = "model", than the running
    summaries of their speakers (which that fold reads again), the oldest younger than
    `refresh.fold_max_wait_h` hours — the fold's fixed prompt (~600 tokens) and those summaries
    would outweigh them — or, for a trickle (under `refresh.fold_quiet_chars`, less than that
    fixed part), younger than `refresh.fold_quiet_wait_h`. Never with an in-process
    summarizer (its fold costs nothing), nor when the fold would make no request
    (`_fold_is_free`), nor with --force, nor when a new message reads like an in-chat memory
    request (stages/requests.py: "forget what I said about …" is applied within the hour); any
    other change is computed at once."""
    rule = ctx.settings.refresh
    if ctx.cheap or existing is None or not rule.fold_min_chars:
        return False
    n = existing["message_count"]
    if not 0 < n < len(pd.lines):
        return False  # fresh (CACHED follows), or not a pure append
    new = pd.lines[n:]
    chars = sum(len(ln.text) for ln in new)
    waited = ctx.now() - min(ln.ts for ln in new)
    if waited >= dt.timedelta(hours=rule.fold_max_wait_h) and \
            (chars >= rule.fold_quiet_chars or waited >= dt.timedelta(hours=rule.fold_quiet_wait_h)):
        return False
    if any(parse_request(s) for ln in new for s in sentences(ln.text)):
        return False
    # a busy hour: worth its fold once it outweighs what it re-reads (condense = "model": the
    # running summaries of its speakers; with "cut" a fold reads only the new messages)
    if chars >= rule.fold_min_chars:
        if ctx.settings.summary.condense != "model":
            return False
        speakers = sorted({ln.user_id for ln in new})
        if chars >= sum(len(r["summary"]) for r in ctx.store.dailies([pd.day], partition=pd.partition,
                                                                     user_ids=speakers)):
            return False
    return _foldable_prefix(ctx, pd, existing) == n and not _fold_is_free(ctx, pd, new)


def _fold_is_free(ctx: RunContext, pd: PartitionDay, new: tuple[ChatLine, ...]) -> bool:
    """The fold of `new` would make no request (the summarizer's `fold_is_free`: the new text and
    its speakers' running summaries fit the daily length as written): waiting would save nothing,
    so the text joins the running summaries now."""
    free = getattr(ctx.summarizer, "fold_is_free", None)
    if free is None:
        return False
    users = sorted({ln.user_id for ln in new})
    previous = {r["user_id"]: r["summary"] for r in ctx.store.dailies([pd.day], partition=pd.partition, user_ids=users)}
    return free(dataclasses.replace(pd, lines=new, speakers={u: pd.speakers[u] for u in users}), previous)


def _foldable_prefix(ctx: RunContext, pd: PartitionDay, existing: dict | None) -> int:
    """How many leading messages the stored summaries already cover, when the only change since
    is messages appended after them (the live day between refreshes); 0 when a full recompute is
    needed (an edit, a late message before the cursor, a rename, a prompt or model change)."""
    if existing is None or existing["degraded"] or ctx.force or existing["summarizer"] != ctx.summarizer.kind:
        return 0
    n = existing["message_count"]
    if not 0 < n < len(pd.lines):
        return 0
    prefix = pd.lines[:n]
    users = {ln.user_id for ln in prefix}
    prefix_pd = PartitionDay(pd.partition, pd.day, prefix, {u: pd.speakers[u] for u in sorted(users)})
    prefix_key = daily_input_hash(prefix_pd, _forgotten(ctx, prefix_pd).key(), ctx.summarizer.fingerprint("daily"))
    return n if prefix_key == existing["input_hash"] else 0


async def _fold_daily(ctx: RunContext, pd: PartitionDay, key: str, forgotten: Applied,
                      existing: dict, n: int) -> None:
    """Fold only the messages after the first `n` into the running summaries."""
    ctx.writer.flush()  # the running summaries may still be in the buffer
    previous = {r["user_id"]: r["summary"] for r in ctx.store.dailies([pd.day], partition=pd.partition)}
    new_lines = pd.lines[n:]
    new_users = sorted({ln.user_id for ln in new_lines})
    new_pd = dataclasses.replace(pd, lines=new_lines, speakers={u: pd.speakers[u] for u in new_users})
    outcome = await ctx.summarizer.fold(new_pd, {u: previous[u] for u in new_users if u in previous})
    ctx.folds[(pd.partition, pd.day)] = existing["input_hash"]  # growth, not a rewrite (stages/recent.py)
    _store_outcome(ctx, pd, key, forgotten, existing, outcome, new_pd, dict(previous))
    ctx.stats.daily_computed += 1
    ctx.stats.daily_folded += 1


async def _compute_daily(ctx: RunContext, pd: PartitionDay, key: str, forgotten: Applied,
                         existing: dict | None) -> None:
    outcome = await ctx.summarizer.daily(pd)
    _store_outcome(ctx, pd, key, forgotten, existing, outcome, pd, {})
    ctx.stats.daily_computed += 1


def _store_outcome(ctx: RunContext, pd: PartitionDay, key: str, forgotten: Applied,
                   existing: dict | None, outcome, given: PartitionDay, summaries: dict[int, str]) -> None:
    """Keep the summaries of the speakers we asked about (`given`: the whole day, or a fold's new
    messages; any other id is dropped and counted), with forgotten facts scrubbed, and write the
    partition-day whole, with the facts the answer proposed that pass validation (only a fold's
    new messages are read for facts: the earlier ones were, at the last refresh)."""
    asked = given.speakers
    ctx.stats.record(outcome)
    if outcome.passthrough:  # the text fits its length target: kept without asking the model
        ctx.stats.passed_fits += 1
    else:
        ctx.stats.summarized += 1
    for uid, text in outcome.value.items():
        if uid not in asked:  # the summarizer named someone who did not speak
            ctx.stats.dropped_user_ids += 1
            continue
        summaries[uid] = text
    # every summary, also the running ones a fold keeps: a fact forgotten since applies to them too
    summaries = {uid: forgotten.scrub(text, uid, pd.speakers.get(uid, "")) for uid, text in summaries.items()}
    # an erased user's name, whatever the summarizer answers: out of summaries, facts and requests
    unnamed = ctx.erased().scrubber(pd.partition, (ln.ts for ln in pd.lines))  # stages/erased.py
    if unnamed is not None:
        summaries = {uid: unnamed(text) for uid, text in summaries.items()}
    degraded = outcome.degraded_reason is not None
    # in-chat memory requests (stages/requests.py): noted, applied after the stage; never facts
    asked = noted(ctx, pd, given, list(outcome.requests), unnamed)
    facts = [c for c in outcome.facts if not asked & set(c.sources)]
    for _c in range(len(outcome.facts) - len(facts)):
        ctx.stats.reject_fact("request")
    rows = fact_rows(ctx, pd, given, facts, forgotten, key)
    ctx.writer.daily(
        {
            "partition": pd.partition, "day": pd.day, "input_hash": key,
            "message_count": len(pd.lines), "user_count": len(pd.speakers),
            "summarizer": ctx.summarizer.kind,
            "degraded": degraded,
            "degraded_reason": outcome.degraded_reason,
            "attempts": next_attempts(existing, outcome.degraded_reason),
        },
        summaries,
        ctx.now(),
        rows if unnamed is None else [{**row, "text": unnamed(row["text"])} for row in rows],
    )
