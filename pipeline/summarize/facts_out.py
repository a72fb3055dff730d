"""The facts of the daily and fold calls (ARCHITECTURE.md, "facts"): the one summarizer call of a
partition-day also proposes durable facts per speaker, as `Candidate`s (pipeline/memory/model.py).

Every message of a daily or fold prompt has a handle, `m{N}`, N its position in the lines of the
PartitionDay the summarizer was given, plus one: positions across the whole partition-day, so the
chunks of a map-reduced day map back; never a raw message id. A fact's sources are handles;
read back, they are those positions (a handle that was not in the request is dropped)."""

from __future__ import annotations

import dataclasses
from typing import Iterable

from ..memory.model import Candidate
from .base import ChatLine, PartitionDay
from .budget import clip_names
from .schemas import DailyOut


def numbered(pd: PartitionDay) -> PartitionDay:
    """The copy of a partition-day the prompts are rendered from: each line's message_id is its
    position in `pd.lines`. The position survives chunking and the cutting of a long message
    (budget.py copies lines with dataclasses.replace); a raw message id never reaches a prompt."""
    return dataclasses.replace(pd, lines=tuple(dataclasses.replace(ln, message_id=i)
                                               for i, ln in enumerate(pd.lines)))


def prepared(pd: PartitionDay) -> PartitionDay:
    """The partition-day as the daily and fold prompts render it: names clipped, lines numbered."""
    return numbered(clip_names(pd))


def handle(line: ChatLine) -> str:
    """A numbered line's handle."""
    return f"m{line.message_id + 1}"


def messages(lines: Iterable[ChatLine]) -> list[tuple[str, ChatLine]]:
    """(handle, line) of numbered lines: what the daily and fold templates list as <m>."""
    return [(handle(ln), ln) for ln in lines]


def candidates(answer: DailyOut, handles: dict[int, str], lines: Iterable[ChatLine]) -> list[Candidate]:
    """The facts of one daily or fold answer to a request over `lines` (numbered). `handles`:
    speaker handle by user id. Kept: facts about a speaker who wrote in the request; a source that
    is not the handle of one of its messages is dropped."""
    lines = list(lines)
    by_handle = {h: uid for uid, h in handles.items()}
    writers = {ln.user_id for ln in lines}
    positions = {handle(ln): ln.message_id for ln in lines}
    out: list[Candidate] = []
    for item in answer.summaries:
        uid = by_handle.get(item.speaker.strip())
        if uid is None or uid not in writers:  # not a speaker of this request: never trusted
            continue
        for fact in item.facts:
            sources = tuple(sorted({positions[s] for s in fact.sources if s in positions}))
            out.append(Candidate(uid, fact.text, fact.category, fact.confidence, fact.global_safe,
                                 sources, fact.day, fact.key))
    return out


def of_users(facts: Iterable[Candidate], users: Iterable[int]) -> list[Candidate]:
    """The facts about these users (those the model's answer left out, filled from extractive)."""
    users = set(users)
    return [f for f in facts if f.user_id in users]
