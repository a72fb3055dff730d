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
from itertools import accumulate
from operator import itemgetter
from typing import Iterable

import jinja2

from ..hashing import canonical
from ..resources import prompts_dir
from .dedup import Seen
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
    return [r for r in rows if (r["level"] == "global" or r["partition"] in allowed) and _current(r, as_of)]


def _current(r: dict, as_of: dt.date) -> bool:
    return ((r["first_seen"] <= as_of or r["origin"] == MANUAL)
            and (r["status"] == "active" or (r["superseded_on"] is not None and r["superseded_on"] > as_of)))


def _priority(r: dict) -> tuple:
    # ties go by what the fact says, not by its id: ids follow the order facts were written,
    # which differs between runs whose stages share their work out (stages/processes.py)
    return (-r["confidence"], -r["last_seen"].toordinal(), -r["first_seen"].toordinal(), *_content_order(r))


def _content_order(r: dict) -> tuple:
    """The last tie-break of two facts: the id only between two rows that say the same thing in
    the same partition at the same level (which de-duplication does not store)."""
    return r["text"], r["partition"], r["level"], r["id"]


def _words(r: dict) -> int:
    return len(r["text"].split()) + (1 if r.get("event_day") else 0) + 1


def choose(rows: list[dict], max_words: int, same_fact: float) -> list[dict]:
    """The facts that fit the budget, best first; restatements across levels shown once."""
    chosen: list[dict] = []
    seen = Seen(same_fact)
    used = 0
    ordered = sorted(rows, key=_priority)
    costs = [_words(r) for r in ordered]
    least = list(accumulate(reversed(costs), min))[::-1]  # the cheapest fact from here on
    for r, cost, cheapest in zip(ordered, costs, least):
        if used + cheapest > max_words:
            break  # nothing left fits
        if used + cost > max_words:
            continue  # a shorter, lower-priority fact may still fit (checked first: it is cheaper)
        if seen.has_same(r["text"]):
            continue
        chosen.append(r)
        seen.add(r["text"])
        used += cost
    return chosen


def profile_key(name: str, rows: list[dict], *, max_words: int, same_fact: float) -> str:
    """What a profile is made from (its input hash): cheap, so a run compares it with the stored
    one before rendering anything. A merge uses a stored profile's text while its key is the same
    (stages/merge.py `_Profile`): a change to how facts are chosen or rendered (`choose`, `render`,
    SECTIONS) must change this key too, or stored profiles would keep the old text."""
    return _key(name, [_key_part(r) for r in rows], max_words, same_fact)


def _key_part(r: dict) -> tuple[tuple, str]:
    """A fact's share of the profile key: its fields and their canonical JSON (what input_hash
    would render them as, inside the list of facts; the list is in the order of that text)."""
    fields = (r["text"], r["category"], r["confidence"], r.get("event_day"), r["last_seen"], r["first_seen"],
              r["partition"], r["level"])  # all the render reads (no id: _priority)
    # dates as the encoder's hook would write them, made here: the same text, no call back per date
    return fields, canonical(tuple(v.isoformat() if isinstance(v, dt.date) else v for v in fields))


def _key(name: str, parts: list[tuple[tuple, str]], max_words: int, same_fact: float) -> str:
    """input_hash("profile", template, name, max_words, same_fact, fact fields in the order of
    their JSON), byte for byte, from each fact's JSON rendered once (a user's facts are in every
    scope's key)."""
    head = canonical(["profile", _template()[1], name, max_words, same_fact])
    facts = ",".join(sorted(text for _fields, text in parts))
    return hashlib.sha256(f"{head[:-1]},[{facts}]]".encode("utf-8")).hexdigest()


def render(name: str, rows: list[dict], *, max_words: int, same_fact: float, key: str | None = None,
           chosen: list[dict] | None = None) -> Profile | None:
    """The profile text of these (visible) facts, or None when there are none. `key`: their
    profile_key, `chosen`: their choose(), when the caller has them already."""
    if chosen is None:
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
            facts.sort(key=lambda r: (-(r.get("event_day") or r["first_seen"]).toordinal(), *_content_order(r)))
        else:
            facts.sort(key=_priority)
        sections.append((title, [{"text": r["text"], "day": r.get("event_day") if category in EPISODIC else None}
                                 for r in facts]))
    text = template.render(name=name, sections=sections).strip()
    return Profile(text, key or profile_key(name, rows, max_words=max_words, same_fact=same_fact),
                   tuple(sorted(r["id"] for r in chosen)))


class UserFacts:
    """One user's fact rows, for the merges of all their scopes in a run: grouped once by
    partition (global facts apart), so a scope filters the facts of its own sources instead of
    all the user's (hundreds, for dozens of scopes); each fact's share of the profile key
    rendered once; the choice of facts made once per distinct fact set, and the last profile
    kept by its key (scopes that read the same facts share them: the key holds everything a
    profile is made from). The rows must not change while this object is in use."""

    def __init__(self, rows: Iterable[dict]):
        self._global: list[tuple[int, dict]] = []
        self._by_partition: dict[str, list[tuple[int, dict]]] = {}
        for i, r in enumerate(rows):
            if r["level"] == "global":
                self._global.append((i, r))
            else:
                self._by_partition.setdefault(r["partition"], []).append((i, r))
        self._parts: dict[int, tuple[tuple, str]] = {}  # by position: the rows are this object's
        self._chosen: dict[tuple, list[dict]] = {}
        self._last: tuple[str, Profile | None] | None = None  # (key, profile): one, to bound memory

    def visible(self, sources: Iterable[str], as_of: dt.date) -> list[tuple[int, dict]]:
        """`visible(rows, sources, as_of)` as (position, row) pairs, in the rows' order."""
        groups = [g for g in [self._global, *(self._by_partition.get(p) for p in dict.fromkeys(sources))] if g]
        found = [(i, r) for g in groups for i, r in g if _current(r, as_of)]
        if len(groups) > 1:
            found.sort(key=itemgetter(0))
        return found

    def key(self, name: str, seen: list[tuple[int, dict]], *, max_words: int, same_fact: float) -> str:
        """profile_key of the rows of `seen` (from `visible`)."""
        parts = self._parts
        for i, r in seen:
            if i not in parts:
                parts[i] = _key_part(r)
        return _key(name, [parts[i] for i, _r in seen], max_words, same_fact)

    def render(self, name: str, seen: list[tuple[int, dict]], *, max_words: int, same_fact: float,
               key: str | None = None) -> Profile | None:
        """render() of the rows of `seen` (from `visible`); `key`: their key()."""
        if key is not None and self._last is not None and self._last[0] == key:
            return self._last[1]
        ids = (tuple(i for i, _r in seen), max_words, same_fact)
        rows = [r for _i, r in seen]
        if ids not in self._chosen:
            self._chosen[ids] = choose(rows, max_words, same_fact)
        made = render(name, rows, max_words=max_words, same_fact=same_fact, key=key, chosen=self._chosen[ids])
        if key is not None:
            self._last = (key, made)
        return made
