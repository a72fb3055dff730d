"""Facts from the daily stage's summarizer answer: each proposed fact (pipeline/memory/model.py
`Candidate`) is normalised, validated (pipeline/memory/validate.py: every rejection counted by
reason in pipeline_runs), kept out when it states something its subject asked to forget, given
its privacy level — the level of the partition it was said in, or `global` when the model marked
it safe and it passes pipeline/memory/promote.py — and turned into a memory_facts row. The rows
are written with their partition-day, in its transaction (stages/writes.py), where they are
de-duplicated against what is known (pipeline/memory/dedup.py).
"""

from __future__ import annotations

import dataclasses
import datetime as dt

from ..hashing import input_hash
from ..memory.model import CATEGORIES, Candidate, level_of
from ..memory.promote import global_refusal
from ..memory.validate import normalise_fact, raw_id_kind, rejection
from ..safety import refusal_reason
from ..summarize.base import PartitionDay
from ..summarize.text import mentions_fact
from .context import RunContext
from .forgetting import Applied

MAX_KEY_CHARS = 60


def _category(category) -> str:
    """Any summarizer's category word, held to the known ones (the table refuses others)."""
    return category if category in CATEGORIES else "other"


def _key(key) -> str | None:
    """The attribute name is stored and exported: short, plain, no id and no instruction."""
    if not isinstance(key, str) or not key.strip():
        return None
    key = " ".join(key.split())[:MAX_KEY_CHARS]
    return None if raw_id_kind(key) or refusal_reason(key) else key


def _forgotten_anywhere(ctx: RunContext, user_id: int, text: str, name: str) -> bool:
    """Whether the user forgot this in any scope: a fact forgotten somewhere never becomes
    global (it would follow them back there)."""
    return any(r["user_id"] == user_id and mentions_fact(text, r["fact"], name) for r in ctx.forgetting().rows)


def fact_rows(ctx: RunContext, pd: PartitionDay, given: PartitionDay, candidates: list[Candidate],
              forgotten: Applied, key: str) -> list[dict]:
    """memory_facts rows for the candidates that pass. `given` is the PartitionDay the summarizer
    was asked about (the whole day, or a fold's new messages): sources are positions in its lines."""
    settings = ctx.settings.memory
    now = ctx.now()
    rows: list[dict] = []
    replied = {ln.reply_to_name for ln in pd.lines if ln.reply_to_name}
    members: dict[int, str] | None = None  # every name known in the partition, read once if needed
    for c in candidates:
        name = given.speakers.get(c.user_id) or pd.speakers.get(c.user_id, "")
        c = dataclasses.replace(c, text=normalise_fact(c.text, name), category=_category(c.category),
                                key=_key(c.key), event_day=c.event_day if isinstance(c.event_day, dt.date) else None)
        reason = rejection(c, given, subject_name=name, settings=settings)
        if reason is None and forgotten.scrub(c.text, c.user_id, name) != c.text:
            reason = "forgotten"  # the subject asked to forget it where this was said
        if reason is not None:
            ctx.stats.reject_fact(reason)
            continue
        level = level_of(pd.partition)
        if c.global_safe and level == "guild_public" and members is None:
            # not only today's speakers: anyone with a name in this partition (spoke another day,
            # mentioned as <@id> and rendered by name) is another person a global fact must not name
            members = {u: n for (_p, u), n in ctx.store.member_names(None, [pd.partition]).items()}
        if c.global_safe and not _forgotten_anywhere(ctx, c.user_id, c.text, name) and global_refusal(
                c.text, category=c.category, confidence=c.confidence, level=level, key=c.key,
                other_names=[n for u, n in (pd.speakers | (members or {})).items() if u != c.user_id]
                + sorted(replied - {name}),
                settings=settings) is None:
            level = "global"
        cited = [given.lines[i] for i in sorted(set(c.sources))]
        rows.append({
            "user_id": c.user_id, "partition": pd.partition, "level": level, "category": c.category,
            "text": c.text, "fact_key": c.key, "confidence": round(float(c.confidence), 3),
            "event_day": c.event_day, "first_seen": pd.day, "last_seen": pd.day,
            "sources": [f"{ln.channel_id}:{ln.message_id}" for ln in cited],
            "origin": "extracted", "input_hash": key, "created_at": now, "updated_at": now,
        })
    return rows


def manual_row(ctx: RunContext, partition: str, user_id: int, text: str, day, category: str = "other") -> dict:
    """A `facts remember` fact: confidence 1, source "manual", at the level of the scope it was said in."""
    now = ctx.now()
    return {"user_id": user_id, "partition": partition, "level": level_of(partition), "category": category,
            "text": text, "fact_key": None, "confidence": 1.0, "event_day": None, "first_seen": day,
            "last_seen": day, "sources": ["manual"], "origin": "manual",
            "input_hash": input_hash("remember", partition, user_id, text), "created_at": now, "updated_at": now}
