"""One search: the partitions the scope may read (the shared audience rule, fed by point queries),
the database's candidates, the final ranking. No model call, nothing cached: the index is kept by
triggers in the same transactions as the rows it copies, so a forget is seen by the next search."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ..calendar import Scope
from ..memory.audience import is_one_to_one, source_partitions
from .forgotten import without_forgotten
from .rank import Hit, rank

if TYPE_CHECKING:  # the store imports search.terms: no import of the store at run time
    from ..store.search import SearchReads, SearchStorage

MIN_CANDIDATES = 50  # the database returns this many (or 5 per wanted hit) for the final ranking


def candidate_count(limit: int) -> int:
    return max(MIN_CANDIDATES, 5 * limit)


def readable_partitions(store: SearchReads, scope: Scope, user_id: int) -> list[str]:
    """The partitions a search for `user_id` in `scope` reads (pipeline/memory/audience.py), each
    audience question a point query asked only when the rule needs it: the channel's guild (a
    channel scope), the DM's kind and speakers (a DM scope), the user's partitions (a private DM)."""

    def guild_of(partition: str) -> int | None:
        kind, _, ident = partition.partition(":")
        if kind == "guild":
            return int(ident)
        if kind == "channel":
            row = store.channel_audience(int(ident))
            return row["guild_id"] if row else None
        return None

    def is_private_dm(partition: str) -> bool:
        row = store.channel_audience(int(partition.partition(":")[2]))
        # the DM's kind first: a group or an unknown DM is not private whoever spoke (no count)
        return is_one_to_one(row, 0) and is_one_to_one(row, store.speakers_in(partition))

    return source_partitions(scope, user_id, guild_of=guild_of, is_private_dm=is_private_dm,
                             user_partitions=store.partitions_posted_in)


def find_hits(store: SearchStorage, scope: Scope, user_id: int, terms: Sequence[str], *, limit: int) -> list[Hit]:
    """The best `limit` items of `user_id` that `scope` may read holding any of `terms`
    (pipeline/search/terms.py `query_terms`; none: [] without asking the database)."""
    if not terms:
        return []
    with store.searching() as reads:  # one connection for the audience questions and the candidates
        partitions = readable_partitions(reads, scope, user_id)
        rows = reads.search_candidates(user_id, terms, partitions, candidate_count(limit))
        # what a forget scrubbed from this scope's context is not found here either
        rows = without_forgotten(reads, rows, partitions, user_id,
                                 lambda forgot_in, user: readable_partitions(reads, forgot_in, user))
    hits = rank(rows, limit)
    # a global fact is readable everywhere, but where it was said is not: another guild's id
    # would tell this scope the user is there
    readable = set(partitions)
    return [h if h.partition in readable else h._replace(partition=None) for h in hits]
