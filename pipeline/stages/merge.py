"""Merge stage: profile + day-1 daily + historical -> one memory_context row per (scope, user).

A context is the user's profile (the facts the scope may read, pipeline/memory/profile.py), then
the recent part: today and the past week, rendered without a model when they fit
`[summary] context_chars` (pipeline/stages/recent.py), else cut to fit (`[summary] condense` =
"cut", the default) or the summarizer's merge of them (condense = "model"); or,
when the user was silent all week, "Last active: <date>". The recent part is kept with its hash,
so a changed profile re-renders the context without a model call; a same-day hourly refresh keeps
a merged recent part whose inputs changed only immaterially (`recent.keeps_stored`), and on a
material change renders today with the past week cut to fit (`recent.render_recent_within`): the
model merges at most once per context and day 1 in hourly refreshes, the first time. Every
(scope, user) with durable memory has a context as of the current day 1; one left with no input
at all is removed (never a stale "Today" from months ago).

Privacy lives here. A context for scope S is built only from partitions whose audience contains
everyone who can read S (ARCHITECTURE.md, "scope"): the rule is pipeline/memory/audience.py
`source_partitions` (shared with search), fed here with the run's audience data read in bulk.
The name a merge is given is the user's name in the scope's own partition (ARCHITECTURE.md, "names").
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable

from ..calendar import Scope, merge_item_key, parse_scope
from ..hashing import input_hash
from ..memory.profile import UserFacts
from ..safety import safe_name
from ..summarize.safe_text import SAFE_TEXT, clean
from .context import RunContext
from .historical import BUILT_FROM_DEGRADED
from .merge_inputs import MERGED_FACT_COLUMNS, MergeInputs
from .recent import (RENDER, RENDER_CUT, RENDER_FIT, dated, join_recent, keeps_stored, recent_parts, render_recent_within,
                     where_labels, word_marks)
from .refresh import Item, ItemStatus, next_attempts, refresh_item

Day1For = Callable[[int | None], dt.date]  # guild id (None for DMs) -> that guild's day 1
log = logging.getLogger(__name__)


async def merge_one(ctx: RunContext, scope: Scope, user_id: int, day1_for: Day1For,
                    inputs: MergeInputs) -> ItemStatus:
    """Bring one context row (and its profile) up to date."""
    key_of = (str(scope), user_id)
    as_of = day1_for(inputs.guild_of(str(scope)))
    sources = inputs.source_partitions(scope, user_id)
    # made from beyond its own partition (a one-to-one DM): not written should the DM have become
    # a group since its audience was read (store.write_batch `wider`; migration 0025 for stored rows)
    wider = scope.kind == "dm" and any(p != key_of[0] for p in sources)
    name = safe_name(inputs.name(scope, user_id))  # a name shown in the context, safe to paste
    memory = ctx.settings.memory
    user_facts = inputs.user_facts(user_id)
    seen = user_facts.visible(sources, as_of)  # profile.visible: the same audience rule as summaries
    facts = [r for _i, r in seen]
    day1_rows, hist_rows = [], []
    for partition in sources:
        d1 = day1_for(inputs.guild_of(partition))
        if row := inputs.daily.get((partition, d1, user_id)):
            day1_rows.append(row)
        if hist := inputs.hist.get((partition, d1, user_id)):
            hist_rows.append(hist)
    # what a render shows and a merge is given: lines that say when (and in a DM scope where), safe to paste
    where = where_labels(str(scope), [r["partition"] for r in day1_rows + hist_rows])
    today, week = recent_parts([(r["day"], r["summary"], where[r["partition"]]) for r in day1_rows],
                               [(r["day"], r["summary"], where[r["partition"]]) for r in hist_rows])
    day1, historical = "\n".join(today), "\n".join(week)
    stored = inputs.contexts.get(key_of)
    if not facts and not day1 and not historical:
        _remove_stale(ctx, inputs, key_of, as_of)
        return ItemStatus.EMPTY
    # the forgotten facts of every partition this context reads (stages/forgetting.py)
    forgotten = ctx.forgetting().applied(sources, [user_id], [name, day1, historical, *(f["text"] for f in facts)])
    pkey = user_facts.key(name, seen, max_words=memory.profile_words, same_fact=memory.same_fact) if facts else None
    lengths = ctx.settings.summary
    rendered = join_recent(today, week)
    renders = len(rendered) <= lengths.context_chars  # fits: the render is the recent part
    fingerprint = RENDER if renders else ctx.summarizer.fingerprint("merge")
    if not renders and lengths.condense == "cut":  # over budget: cut to fit, no call (recent.py)
        rendered = render_recent_within(today, week, lengths.context_chars)
        renders, fingerprint = True, (RENDER_FIT, lengths.context_chars)
    recent_key = input_hash("recent", name, fingerprint, day1, historical,
                            forgotten.key()) if day1 or historical else None
    last_active = None if recent_key else inputs.last_active(sources, user_id, as_of, facts)
    key = input_hash("merge", str(scope), user_id, name, pkey, recent_key, last_active, forgotten.key(), SAFE_TEXT)
    made_from = {
        "profile": pkey,
        "day1": [[r["partition"], r["day"].isoformat(), r["input_hash"]] for r in day1_rows],
        "historical": [[r["partition"], r["day"].isoformat(), r["input_hash"]] for r in hist_rows],
        # what a kept recent part must still agree with (recent.keeps_stored): all but day 1's text
        "terms": input_hash("terms", name, fingerprint, historical, forgotten.key()) if recent_key else None,
    }
    profile = _Profile(ctx, inputs, key_of, name, (user_facts, seen), pkey, as_of, forgotten)

    async def compute(existing: dict | None) -> None:
        recent, recent_hash, degraded_reason, own_reason, attempts = "", recent_key, None, None, None
        row_key, called = key, False  # called: a model call made it (writes.py writes it at once)
        reusable = existing is not None and not ctx.force and not ctx.retry_degraded(existing)
        if renders and recent_key:
            recent = rendered
            ctx.stats.contexts_rendered += 1
        elif recent_key and reusable and existing.get("recent_hash") == recent_key:
            row = ctx.store.contexts(str(scope), user_id)[0]  # only the profile changed: no call
            recent, degraded_reason, attempts = row["recent"] or "", row["degraded_reason"], row["attempts"]
            made_from["day1_words"] = (row["inputs"] or {}).get("day1_words")
            ctx.stats.passed_unchanged += 1  # the recent part is unchanged since the last run
        elif recent_key:
            row = ctx.store.contexts(str(scope), user_id)[0] if reusable and ctx.run_kind == "refresh" else None
            if keeps_stored(row, as_of=as_of, terms=made_from["terms"], day1_rows=day1_rows, folds=ctx.folds,
                            day1=day1):  # a same-day refresh, no material change: no call
                recent, recent_hash, degraded_reason = row["recent"], row["recent_hash"], row["degraded_reason"]
                attempts, made_from["day1_words"] = row["attempts"], row["inputs"].get("day1_words")
                ctx.stats.merges_kept += 1
                ctx.stats.cache_hits += 1
                ctx.stats.passed_unchanged += 1
            elif row is not None and row["as_of_day"] == as_of:
                # a same-day refresh after this day 1's merge, with a material change: today's
                # texts with the past week cut to fit, no call; the next run of another kind
                # (rollover, run, replay) merges with the model (its key differs from this row's)
                recent = render_recent_within(today, week, ctx.settings.summary.context_chars)
                recent_hash = input_hash("recent", name, RENDER_CUT, day1, historical, forgotten.key())
                row_key = input_hash("merge", str(scope), user_id, name, pkey, recent_hash, last_active,
                                     forgotten.key(), SAFE_TEXT)
                made_from["day1_words"] = word_marks(day1)
                ctx.stats.contexts_rendered += 1
            else:
                outcome = await ctx.summarizer.merge(name, day1, historical)
                called = True
                ctx.stats.record(outcome)
                ctx.stats.summarized += 1
                # each line says when: the answer's own dated lines, the rest under the days merged
                first = min([r["day"] for r in day1_rows] + [r["day"] - dt.timedelta(days=6) for r in hist_rows])
                recent = dated(outcome.value, first, as_of, ", ".join(dict.fromkeys(w for w in where.values() if w)))
                degraded_reason = outcome.degraded_reason
                own_reason = degraded_reason
                made_from["day1_words"] = word_marks(day1)  # the basis of the next refresh's rule
        else:
            ctx.stats.passed_no_recent += 1  # no summary to merge: the profile, "Last active"
        if recent_key:
            if degraded_reason is None and any(r["degraded"] for r in day1_rows + hist_rows):
                degraded_reason = BUILT_FROM_DEGRADED
            recent = clean(forgotten.scrub(recent, user_id, name)).text
        parts = [profile.text(), recent, f"Last active: {last_active.isoformat()}" if last_active else ""]
        # the final check: nothing in a stored context reads as an instruction to the bot that
        # pastes it, carries a secret or is markup (pipeline/summarize/safe_text.py)
        text, left_out = clean(forgotten.scrub("\n\n".join(p for p in parts if p), user_id, name))
        if left_out:
            log.info("context %s user %s: left out %d sentence(s) that read as an instruction to the bot or "
                     "carry a secret", scope, user_id, left_out)
        ctx.writer.context({
            "scope": str(scope), "user_id": user_id,
            "context": text,
            "as_of_day": as_of, "made_at": ctx.now(), "input_hash": row_key, "inputs": made_from,
            "degraded": degraded_reason is not None, "degraded_reason": degraded_reason,
            "attempts": attempts if attempts is not None else next_attempts(existing, own_reason),
            "recent": recent or None, "recent_hash": recent_hash,
        }, profile=profile.pending(), touch_profile=profile.moves, called=called, wider=wider)
        ctx.stats.contexts_written += 1

    def reread() -> dict | None:
        return next(iter(ctx.store.contexts(str(scope), user_id, text=False)), None)

    def newer(row: dict | None) -> ItemStatus | None:
        # a replay of an older range never overwrites a context made as of a later day
        return ItemStatus.STALE if row is not None and row["as_of_day"] > as_of else None

    def moved(row: dict) -> None:  # unchanged inputs, now valid as of a later day 1 (its profile too)
        if row["as_of_day"] != as_of or profile.moves:
            ctx.writer.touch(str(scope), user_id, as_of)
        if (pending := profile.pending()) is not None:  # the context is fresh, its profile row was not
            ctx.writer.profile(pending, wider=wider)

    def plan() -> None:  # dry run: rendered, kept, or (at most) a summarizer call
        if not recent_key:
            ctx.stats.passed_no_recent += 1
        elif renders:
            ctx.stats.contexts_rendered += 1
        elif stored is not None and not ctx.force and not ctx.retry_degraded(stored) \
                and stored.get("recent_hash") == recent_key:
            ctx.stats.passed_unchanged += 1  # only the profile would change
        else:
            ctx.stats.summarized += 1
            estimate = getattr(ctx.summarizer, "estimate", None)
            calls, tokens = estimate("merge", name, day1, historical) if estimate else (0, 0)
            ctx.stats.planned_llm_calls += calls
            ctx.stats.planned_prompt_tokens += tokens

    status = await refresh_item(ctx, Item(
        key=merge_item_key(scope, user_id), input_hash=key, stored=stored,
        reread=reread, compute=compute, plan=plan, settled=newer, on_cached=moved,
        free=renders or not recent_key))  # rendered, or the profile and "Last active" alone: no call
    if status is ItemStatus.STALE:
        ctx.stats.contexts_stale += 1
    else:
        ctx.stats.context_items += 1
        ctx.stats.passed_unchanged += status is ItemStatus.CACHED
    return status


class _Profile:
    """The (scope, user)'s profile for this merge: its text, rendered at most once and only when
    something needs it, and the row to write when its fact set changed (`pending`) or when it is
    unchanged but now valid as of a later day 1 (`moves`). Never over one made as of a later day.

    An unchanged profile's text is the stored one, not rendered again: its key holds everything
    the render reads (the facts seen, the name, the budget, the template), so the render would be
    the same text — unless a forgotten fact applies (a forget scrubs stored profiles in place, and
    a fresh render is scrubbed afresh: rendered then), or the run is forced. Choice and render were
    33 of 134 s of the large bench's steady nightly (py-spy, one process); there two thirds of the
    profiles change every night (its summarizer proposes a fact per speaker per day), so keeping
    the other third saved 2-7 s; a night in which fewer users gain facts keeps more."""

    def __init__(self, ctx: RunContext, inputs: MergeInputs, key_of: tuple[str, int], name: str,
                 facts: tuple[UserFacts, list[tuple[int, dict]]], pkey: str | None, as_of: dt.date, forgotten):
        self.ctx, self.key_of, self.name, self.facts, self.forgotten = ctx, key_of, name, facts, forgotten
        self.pkey, self.as_of = pkey, as_of
        self._text: str | None = None
        self.fact_count = 0
        state = inputs.profiles.get(key_of)
        usable = bool(pkey) and not ctx.dry_run and not (state is not None and state["as_of_day"] > as_of)
        self.changed = usable and (state is None or state["input_hash"] != pkey)
        self.moves = usable and not self.changed and state["as_of_day"] < as_of
        kept = state.get("profile") if usable and not self.changed and not forgotten.facts and not ctx.force else None
        if kept is not None:
            self._text = kept
        if usable:  # its text only when it is the stored one (a changed profile's is rendered, later)
            inputs.profiles[key_of] = {"scope": key_of[0], "user_id": key_of[1], "input_hash": pkey, "as_of_day": as_of,
                                       "profile": None if self.changed else state.get("profile")}

    def text(self) -> str:
        if self._text is None:
            memory = self.ctx.settings.memory
            user_facts, seen = self.facts
            made = user_facts.render(self.name, seen, max_words=memory.profile_words, same_fact=memory.same_fact,
                                     key=self.pkey) if seen else None
            self._text = self.forgotten.scrub(made.text, self.key_of[1], self.name) if made else ""
            self.fact_count = len(made.fact_ids) if made else 0
        return self._text

    def pending(self) -> dict | None:
        if not self.changed:
            return None
        return {"scope": self.key_of[0], "user_id": self.key_of[1], "profile": self.text(), "input_hash": self.pkey,
                "fact_count": self.fact_count, "as_of_day": self.as_of, "made_at": self.ctx.now()}


def _remove_stale(ctx: RunContext, inputs: MergeInputs, key_of: tuple[str, int], as_of: dt.date) -> None:
    """Nothing is left to build this context from as of this day 1: its row (and profile) go,
    unless made as of a later day (a replay of an older range leaves those alone)."""
    if ctx.dry_run:
        return
    stored = inputs.contexts.get(key_of)
    if stored is not None and stored["as_of_day"] <= as_of:
        ctx.writer.remove("context", *key_of)
        inputs.contexts.pop(key_of, None)
    state = inputs.profiles.get(key_of)
    if state is not None and state["as_of_day"] <= as_of:
        ctx.writer.remove("profile", *key_of)
        inputs.profiles.pop(key_of, None)


async def run_merges(ctx: RunContext, partitions: list[str], day1_for: Day1For,
                     in_run: Callable[[int | None], bool] | None = None) -> None:
    """Every (scope, user) of these scopes (`plan_merges`), from inputs read once; the items are
    independent, so an LLM summarizer keeps several in flight within its limits."""
    ctx.writer.flush()  # merges read the dailies and historicals written so far
    plan = plan_merges(ctx, partitions, day1_for, in_run)
    await run_merge_jobs(ctx, plan.jobs, day1_for, plan.inputs)


@dataclass
class MergePlan:
    inputs: MergeInputs          # what the merges read, for every user
    day1s: set[dt.date]          # the day 1s those inputs were read for
    jobs: list[tuple[Scope, int]]


def plan_merges(ctx: RunContext, partitions: list[str], day1_for: Day1For,
                in_run: Callable[[int | None], bool] | None = None, *, plan_only: bool = False) -> MergePlan:
    """The (scope, user) merges of a run: every user of these scopes with a day-1 daily, a
    historical row or a context, and everyone with facts where they may be answered. `in_run` (a
    guild filter: None for DMs): also every scope in it where a user has durable memory or a
    context — memory outlives the week, so those contexts move to the new day 1 even when nobody
    spoke there. In scope order, each scope's users in id order. `plan_only`: the plan's inputs
    are only what planning reads (MergeInputs `plan_only`), for a caller whose merges read their own."""
    channels = ctx.store.channels()
    guilds = {c["guild_id"] for c in channels.values()}
    day1s = {day1_for(g) for g in guilds | {None}} | {day1_for(int(p.split(":")[1])) for p in partitions
                                                     if p.startswith("guild:")}
    inputs = MergeInputs(ctx.store, day1s, fact_columns=MERGED_FACT_COLUMNS, plan_only=plan_only)
    users_of: dict[str, set[int]] = defaultdict(set)
    for (p, d, u) in list(inputs.daily) + list(inputs.hist):
        if d == day1_for(inputs.guild_of(p)):
            users_of[p].add(u)
    for (s, u) in inputs.contexts:
        users_of[s].add(u)
    inputs.preload_user_partitions(inputs.fact_rows)
    for u, rows in inputs.fact_rows.items():  # where each user with facts may be answered
        for s in {r["partition"] for r in rows} | set(inputs.user_partitions(u)):
            users_of[s].add(u)
    scopes = list(dict.fromkeys(partitions))
    if in_run is not None:
        scopes += sorted(s for s in set(users_of) - set(scopes) if in_run(inputs.guild_of(s)))
    return MergePlan(inputs, day1s, [(parse_scope(s), u) for s in scopes for u in sorted(users_of.get(s, ()))])


async def run_merge_jobs(ctx: RunContext, jobs: list[tuple[Scope, int]], day1_for: Day1For,
                         inputs: MergeInputs) -> None:
    """These merges, from `inputs` (a whole run's, or narrowed to their users: a worker's job,
    pipeline/workers/), user by user, bounded by the run's slots; then every row is written."""
    inputs.preload_user_partitions({u for sc, u in jobs if sc.kind == "dm"})
    # A user's scopes one after another (each user's in the given order): their facts, profile
    # and summary lines are still in the caches (UserFacts, clean_line, reads_unsafe) for the
    # next one. In scope order they were not, at scale: 14% of a 1M-message merge stage.
    jobs = sorted(jobs, key=lambda job: job[1])

    async def bounded(scope: Scope, user_id: int) -> None:
        async with ctx.slot():
            await merge_one(ctx, scope, user_id, day1_for, inputs)

    await asyncio.gather(*(bounded(scope, user_id) for scope, user_id in jobs))
    ctx.writer.flush()
