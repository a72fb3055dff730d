"""Forgotten facts: where each applies, and how a text is cleaned of them.

A fact user U forgot in scope S applies to the partitions S's context of U is built from
(`MergeInputs.source_partitions`: S's own partition; a restricted channel's guild as well; for
U's one-to-one DM, every partition U posted in). In those partitions it is removed from every
summary and profile, U's own and other people's sentences that name U, and from every context
that reads one of those partitions; nowhere else. It is applied after the model (`scrub`), never
quoted to it: a request is written for one audience, and a fact forgotten in another must not
reach the model with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from ..calendar import parse_scope
from ..store import StageStorage
from ..summarize.text import names_person, scrub, tokens
from .merge_inputs import MergeInputs


# How a text is found to state a forgotten fact (summarize/text.py mentions_fact): 2, by word forms
MATCH = 2


@dataclass(frozen=True)
class Applied:
    """The forgotten facts that apply to one derived row, as (user, fact) pairs, and the names
    that tie a sentence to each of those users."""

    facts: tuple[tuple[int, str], ...] = ()
    names: dict[int, tuple[str, ...]] = field(default_factory=dict)

    def key(self) -> list[list]:
        """For the row's input hash: a new forgotten fact recomputes exactly the rows it applies to
        (and a new MATCH, the rows with any: stored before it, they may still state one)."""
        return [[MATCH], *([u, f] for u, f in self.facts)] if self.facts else []

    def scrub(self, text: str, author: int, author_name: str = "") -> str:
        """The author's own facts go wherever stated; another person's only from sentences that
        name that person."""
        for uid in sorted({u for u, _f in self.facts}):
            facts, names = [f for u, f in self.facts if u == uid], self.names.get(uid, ())
            if uid == author:
                text = scrub(text, facts, " ".join((author_name, *names)))
            else:
                text = scrub(text, facts, " ".join(names), about=names)
        return text


NOTHING = Applied()


class Forgetting:
    """Every forgotten fact with the partitions it applies to, read once per run."""

    def __init__(self, rows: list[dict], reach: list[frozenset[str]], names: dict[int, tuple[str, ...]]):
        self.rows, self.reach, self.names = rows, reach, names

    def applied(self, partitions: Iterable[str], authors: Iterable[int], inputs: Iterable[str]) -> Applied:
        """The facts that apply to a row built from `partitions` for `authors` (the speakers of a
        partition-day, the user of a summary or context) out of the texts `inputs`: the authors'
        own, and other people's when the inputs name them (otherwise no sentence of the row can)."""
        wanted = set(partitions)
        hits = [(r["user_id"], r["fact"]) for r, reach in zip(self.rows, self.reach) if reach & wanted]
        if not hits:
            return NOTHING
        authors = set(authors)
        others = {u for u, _f in hits} - authors
        words = set(tokens(" ".join(inputs))) if others else set()
        named = {u for u in others if names_person(words, self.names.get(u, ()))}
        facts = tuple(sorted({(u, f) for u, f in hits if u in authors or u in named}))
        return Applied(facts, {u: self.names.get(u, ()) for u, _f in facts}) if facts else NOTHING


def _names(inputs: MergeInputs, users: Iterable[int]) -> dict[int, tuple[str, ...]]:
    """Every display name each user has (any guild, any DM): only matched against, never shown."""
    users = set(users)
    out: dict[int, set[str]] = {u: set() for u in users}
    for key, name in inputs.names.items():
        if key[-1] in users and name:
            out[key[-1]].add(name)
    return {u: tuple(sorted(n)) for u, n in out.items()}


def load_forgetting(store: StageStorage) -> Forgetting:
    rows = store.forgotten()
    if not rows:
        return Forgetting([], [], {})
    users = {r["user_id"] for r in rows}
    inputs = MergeInputs(store, [], users)
    reach = [frozenset(inputs.source_partitions(parse_scope(r["scope"]), r["user_id"])) for r in rows]
    return Forgetting(rows, reach, _names(inputs, users))


@dataclass(frozen=True)
class Reach:
    """What one forget scrubs in the store, in its transaction (FactsStorage.forget_fact): the
    summaries of `partitions`, every user's, and the `contexts` (with their profiles)."""

    partitions: frozenset[str]
    contexts: frozenset[tuple[str, int]]
    applied: Applied

    def __call__(self, row: dict) -> str:
        return self.applied.scrub(row["text"], row["user_id"])


def reach_of_forget(store: StageStorage, inputs: MergeInputs, scope: str, user_id: int, fact: str) -> Reach:
    partitions = frozenset(inputs.source_partitions(parse_scope(scope), user_id))
    keys = [(r["scope"], r["user_id"]) for r in store.contexts(text=False)]
    inputs.preload_user_partitions({u for s, u in keys if s.startswith("dm:")})
    contexts = frozenset((s, u) for s, u in keys if partitions & set(inputs.source_partitions(parse_scope(s), u)))
    return Reach(partitions, contexts, Applied(((user_id, fact),), _names(inputs, [user_id])))
