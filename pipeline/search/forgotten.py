"""Forgotten facts in search: a fact the user forgot in scope S is scrubbed from the rows of S's
partitions and from every context that reads one of them (pipeline/stages/forgetting.py). A search
in such a scope reads rows the forget did not scrub (the user's own DM, a restricted channel of
the guild), so without this check it would bring the fact back — as a hit, or as a "Related
memories" line of the very context it was scrubbed from. A candidate of the user's that states a
forgotten fact applying to the scope is left out whole: forgetting errs towards removing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ..calendar import parse_scope
from ..summarize.text import scrub

if TYPE_CHECKING:
    from ..store.search import SearchReads


def without_forgotten(reads: SearchReads, rows: list[dict], partitions: Sequence[str], user_id: int,
                      reach_of) -> list[dict]:
    """The candidate rows (of `user_id`, readable through `partitions`) that state none of the
    user's forgotten facts whose reach meets those partitions. `reach_of(scope, user_id)`: the
    partitions a forget in that scope applies to (the audience rule, as for contexts)."""
    forgotten = reads.forgotten_facts(user_id) if rows else []
    if not forgotten:
        return rows  # the usual search: one indexed point query more
    subject = " ".join(reads.member_names(user_id))  # "Ana plays …" states Ana's "plays …"
    stating = [f for f in {f for _s, f in forgotten} if any(_states(r["body"], f, subject) for r in rows)]
    if not stating:
        return rows
    readable = set(partitions)
    applied = set()
    for scope, fact in forgotten:
        # a forget's reach holds its own scope's partition: point queries only for the others
        if fact in stating and fact not in applied and (
                scope in readable or readable & set(reach_of(parse_scope(scope), user_id))):
            applied.add(fact)
    if not applied:
        return rows
    return [r for r in rows if not any(_states(r["body"], f, subject) for f in applied)]


def _states(text: str, fact: str, subject: str) -> bool:
    return scrub(text, [fact], subject) != text
