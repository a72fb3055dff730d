"""A user's profile as one scope may read it: the facts of the partitions the scope's context is
built from (the audience rule of summaries, ARCHITECTURE.md "scope") plus the user's `global`
facts, as of a day, rendered by prompts/profile.md.j2 within a word budget.

Which facts make the cut: by confidence, then recency (last seen), then age — a manual fact
(confidence 1) first. How they read: in category order, within a category by confidence and
recency; episodic facts (events, plans) with their dates, newest first. Two facts of different
levels that say the same thing (similarity ≥ same_fact) are shown once.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import hashlib
from typing import Iterable

import jinja2

from ..hashing import input_hash
from ..resources import prompts_dir
from .dedup import similarity
from .model import EPISODIC, MANUAL

TEMPLATE = "profile.md.j2"
SECTIONS = (("identity", "Identity"), ("preference", "Preferences"), ("skill/work", "Work and skills"),
            ("relationship", "People and pets"), ("plan", "Plans"), ("event", "Events"), ("other", "Other"))


@dataclasses.dataclass(frozen=True)
class Profile:
    text: str
    input_hash: str
    fact_ids: tuple[int, ...]


@functools.cache
def _template() -> tuple[jinja2.Template, str]:
    directory = prompts_dir()
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(directory)), autoescape=False,
                             undefined=jinja2.StrictUndefined)
    source_hash = hashlib.sha256((directory / TEMPLATE).read_bytes()).hexdigest()[:16]
    return env.get_template(TEMPLATE), source_hash


def visible(rows: Iterable[dict], sources: Iterable[str], as_of: dt.date) -> list[dict]:
    """The facts a context built from `sources` may read as of `as_of`: said by then, and not yet
    superseded then (a replay of an older range sees the facts of its time). A remembered fact
    counts from the moment it is remembered, whatever day the context was made for."""
    allowed = set(sources)
    return [r for r in rows
            if (r["level"] == "global" or r["partition"] in allowed)
            and (r["first_seen"] <= as_of or r["origin"] == MANUAL)
            and (r["status"] == "active" or (r["superseded_on"] is not None and r["superseded_on"] > as_of))]


def _priority(r: dict) -> tuple:
    return (-r["confidence"], -r["last_seen"].toordinal(), -r["first_seen"].toordinal(), r["id"])


def _words(r: dict) -> int:
    return len(r["text"].split()) + (1 if r.get("event_day") else 0) + 1


def choose(rows: list[dict], max_words: int, same_fact: float) -> list[dict]:
    """The facts that fit the budget, best first; restatements across levels shown once."""
    chosen: list[dict] = []
    used = 0
    for r in sorted(rows, key=_priority):
        if any(similarity(r["text"], c["text"]) >= same_fact for c in chosen):
            continue
        cost = _words(r)
        if used + cost > max_words:
            continue  # a shorter, lower-priority fact may still fit
        chosen.append(r)
        used += cost
    return chosen


def profile_key(name: str, rows: list[dict], *, max_words: int, same_fact: float) -> str:
    """What a profile is made from (its input hash): cheap, so a run compares it with the stored
    one before rendering anything."""
    return input_hash("profile", _template()[1], name, max_words, same_fact,
                      sorted((r["id"], r["text"], r["category"], r["confidence"], r.get("event_day"), r["last_seen"],
                              r["first_seen"]) for r in rows))


def render(name: str, rows: list[dict], *, max_words: int, same_fact: float) -> Profile | None:
    """The profile text of these (visible) facts, or None when there are none."""
    chosen = choose(rows, max_words, same_fact)
    if not chosen:
        return None
    template = _template()[0]
    sections = []
    for category, title in SECTIONS:
        facts = [r for r in chosen if r["category"] == category]
        if not facts:
            continue
        if category in EPISODIC:
            facts.sort(key=lambda r: (-(r.get("event_day") or r["first_seen"]).toordinal(), r["id"]))
        else:
            facts.sort(key=_priority)
        sections.append((title, [{"text": r["text"], "day": r.get("event_day") if category in EPISODIC else None}
                                 for r in facts]))
    text = template.render(name=name, sections=sections).strip()
    return Profile(text, profile_key(name, rows, max_words=max_words, same_fact=same_fact),
                   tuple(sorted(r["id"] for r in chosen)))
