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
from ..memory.requests import FORGET, OTHER_PERSON, REMEMBER, Request, find_requests, reminds_others, request_in
from ..summarize.text import names_person, tokens
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


def requests_of(answer: DailyOut, handles: dict[int, str], lines: Iterable[ChatLine]) -> list[Request]:
    """The in-chat memory requests of one daily or fold answer (as `candidates`): a request whose
    message is not its speaker's own is dropped; a "remember" the model says is not about the speaker
    is refused (OTHER_PERSON). A "forget" never is: it only ever removes the speaker's own facts,
    whatever its topic ("forget what I said about my sister's surgery")."""
    by_handle = {h: uid for uid, h in handles.items()}
    lines = {handle(ln): ln for ln in lines}
    out: list[Request] = []
    for item in answer.summaries:
        uid = by_handle.get(item.speaker.strip())
        for r in item.requests:
            line = lines.get(r.source)
            if uid is not None and line is not None and line.user_id == uid:
                out.append(Request(uid, line.message_id, r.kind, r.text,
                                   None if r.about_self or r.kind == FORGET else OTHER_PERSON))
    return out


def checked_requests(found: list[Request], pd: PartitionDay) -> list[Request]:
    """The model's requests checked by the offline rules too (pipeline/memory/requests.py), plus
    the requests those rules find in messages the model reported none for: a clear phrase is not
    missed because a model skipped it, and a "remember" is refused when either finds it is about
    someone else (its message's clause, or a fact naming another member), or when the rules read
    its message's "remember that …" as not about the speaker at all (`reminds_others`)."""
    out, seen = [], set()
    for r in found:
        line = pd.lines[r.position]
        own = [pd.speakers.get(r.user_id, ""), line.name]
        others = [n for u, n in pd.speakers.items() if u != r.user_id]
        said = request_in(line.text, own, others)
        refused = r.refused or (said[2] if said and said[0] == r.kind else None)
        if r.kind == REMEMBER and refused is None and reminds_others(line.text):
            refused = OTHER_PERSON  # the rules read its "remember that …" as not about the speaker
        if r.kind == REMEMBER and refused is None and names_person(set(tokens(r.text)) - set(tokens(" ".join(own))), others):
            refused = OTHER_PERSON
        out.append(Request(r.user_id, r.position, r.kind, r.text, refused))
        seen.add(r.position)
    return out + [r for r in find_requests(pd) if r.position not in seen]
