"""The facts of the daily and fold calls (ARCHITECTURE.md, "facts"): the one summarizer call of a
partition-day also proposes durable facts per speaker, as `Candidate`s (pipeline/memory/model.py).

Every message of a daily or fold prompt has a number N, its position in the lines of the
PartitionDay the summarizer was given, plus one: positions across the whole partition-day, so the
chunks of a map-reduced day map back; never a raw message id. Its handle is `m{N}`. A fact's
sources are numbers (schemas.py reads "12" as "m12"); read back, they are those positions (a
number that was not in the request is dropped)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
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


@dataclass(frozen=True)
class MessageRow:
    """One line of <messages> in the daily and fold templates."""

    number: int             # the line's position + 1 (its handle is m{number})
    speaker: str            # the speaker's handle
    text: str
    hour: str | None        # "09:00" on the first line of an hour (the time is shown once an hour)
    reply: str | None       # the handle of the speaker it replies to, when listed in the request
    reply_name: str | None  # else the name of whoever it replies to


def messages(lines: Iterable[ChatLine], handles: dict[int, str]) -> list[MessageRow]:
    """The rows of numbered lines. A reply names a speaker of these lines by handle (the request
    lists them), anyone else by name."""
    lines = list(lines)
    listed = {ln.user_id for ln in lines}
    rows: list[MessageRow] = []
    last_hour = None
    for ln in lines:
        hour = ln.ts.strftime("%H:00")
        to = ln.reply_to_user if ln.reply_to_user in listed and ln.reply_to_name else None
        rows.append(MessageRow(ln.message_id + 1, handles[ln.user_id], ln.text, hour if hour != last_hour else None,
                               handles[to] if to is not None else None, None if to is not None else ln.reply_to_name))
        last_hour = hour
    return rows


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
