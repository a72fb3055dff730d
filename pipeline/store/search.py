"""Search reads (ARCHITECTURE.md, "Search"): the candidate items of one user a scope may read,
matching the query's words, from the index the database's triggers keep (sql/migrations/0007),
and the three audience point questions the audience rule needs (pipeline/memory/audience.py).

One named statement per dialect (sql/queries.sql): FTS5 on SQLite, tsvector on PostgreSQL. The
readable partitions are one bound value — JSON text read by json_each on SQLite, an array on
PostgreSQL — so the statement text never depends on the scope. Every driver error is a
StoreError: an outage never reads as "no hits". (Purging deleted items' terms from the FTS5
segments after a clear or an erase is pipeline/store/users.py `purge_deleted_text`.)
"""

from __future__ import annotations

import contextlib
import json
from typing import Iterator, Protocol, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.queries import query
from ..search.terms import fts5_match, pg_tsquery


class SearchStorage(Protocol):
    def searching(self) -> contextlib.AbstractContextManager["SearchReads"]: ...


class SearchReads(Protocol):
    """The reads of one search, on one connection."""

    def search_candidates(self, user_id: int, terms: Sequence[str], partitions: Sequence[str],
                          limit: int) -> list[dict]: ...
    def channel_audience(self, channel_id: int) -> dict | None: ...
    def speakers_in(self, partition: str) -> int: ...
    def partitions_posted_in(self, user_id: int) -> list[str]: ...
    def forgotten_facts(self, user_id: int) -> list[tuple[str, str]]: ...
    def member_names(self, user_id: int) -> list[str]: ...


class _OneSearch:
    """A search's statements on the one connection `SearchStore.searching` checked out: one pool
    checkout (PostgreSQL: one liveness ping) and one read transaction per search, not one per
    statement — on PostgreSQL each of those is a round trip to the server."""

    def __init__(self, conn: Connection, dialect: str):
        self.conn, self.dialect = conn, dialect

    def search_candidates(self, user_id: int, terms: Sequence[str], partitions: Sequence[str],
                          limit: int) -> list[dict]:
        """At most `limit` items of `user_id` holding any of `terms` (pipeline/search/terms.py
        words: they are quoted here, never read as syntax), in `partitions` or a global fact,
        best first by raw relevance (higher is better), without the summaries a queued recompute
        is about to replace. Rows: kind, body, partition, level, day, confidence, fact_id, relevance."""
        if not terms:
            return []
        params = {"user_id": int(user_id), "candidates": int(limit)}
        if self.dialect == "postgresql":
            sql = query("search_candidates_postgresql")
            params |= {"tsquery": pg_tsquery(list(terms)), "partitions": list(partitions)}
        else:
            sql = query("search_candidates_sqlite")
            params |= {"match": fts5_match(user_id, list(terms)), "partitions": json.dumps(list(partitions))}
        return [dict(r._mapping) for r in self.conn.execute(sa.text(sql), params)]

    # ------------------------------------------------------------------ audience point queries

    def channel_audience(self, channel_id: int) -> dict | None:
        """A channel's guild_id, one_to_one and is_group; None when no import named it."""
        row = self.conn.execute(sa.text(query("search_channel")), {"channel_id": int(channel_id)}).first()
        return None if row is None else dict(row._mapping)

    def speakers_in(self, partition: str) -> int:
        """How many people wrote in a partition, counted up to 2 (enough to tell a private DM)."""
        return int(self.conn.execute(sa.text(query("search_speakers")), {"partition": partition}).scalar_one())

    def partitions_posted_in(self, user_id: int) -> list[str]:
        """Every partition the user has a message in, sorted."""
        return list(self.conn.execute(sa.text(query("search_user_partitions")), {"user_id": int(user_id)}).scalars())

    def forgotten_facts(self, user_id: int) -> list[tuple[str, str]]:
        """(scope, fact) of every fact the user forgot (pipeline/search/forgotten.py)."""
        return [tuple(r) for r in self.conn.execute(sa.text(query("search_forgotten")), {"user_id": int(user_id)})]

    def member_names(self, user_id: int) -> list[str]:
        """Every display name the user has anywhere: only matched against, never shown."""
        return list(self.conn.execute(sa.text(query("search_member_names")), {"user_id": int(user_id)}).scalars())


class SearchStore:
    @contextlib.contextmanager
    def searching(self) -> Iterator[SearchReads]:
        """One connection for the reads of one search (pipeline/search/find.py); any driver error
        in them is a StoreError."""
        with self.reading("searching memory") as conn:
            yield _OneSearch(conn, self.dialect)
