"""Facts and forgotten facts: per (scope, user) facts blobs, and what a user asked to forget.

Forgetting is one transaction: the forgotten fact is recorded and every stored summary, context
and facts blob of the user is scrubbed, so nothing can read it between the two.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Callable, Iterable, Protocol

import sqlalchemy as sa

from ..db.tables import daily_summaries, forgotten_facts, historical_summaries, memory_context, user_facts
from .base import insert_for


class FactsStorage(Protocol):
    def facts(self, *, scope: str | None = None, user_ids: Iterable[int] | None = None) -> list[dict]: ...
    def forgotten(self, user_ids: Iterable[int] | None = None) -> dict[int, list[str]]: ...
    def write_facts(self, scope: str, user_id: int, blob: str, now: dt.datetime,
                    forgotten: str | None = None, scrub: Callable[[str], str] | None = None) -> int: ...


# (table, text column, key columns) of every row a forget scrubs
SCRUBBED = (
    (daily_summaries, "summary", ("partition", "day", "user_id")),
    (historical_summaries, "summary", ("partition", "user_id", "day")),
    (memory_context, "context", ("scope", "user_id")),
    (user_facts, "facts", ("scope", "user_id")),
)


class FactsStore:
    def facts(self, *, scope: str | None = None, user_ids: Iterable[int] | None = None) -> list[dict]:
        """Facts blobs (scope, user_id, facts), in (scope, user) order."""
        c = user_facts.c
        q = sa.select(c.scope, c.user_id, c.facts).order_by(c.scope, c.user_id)
        if scope is not None:
            q = q.where(c.scope == scope)
        if user_ids is None:
            return self.rows("reading facts", q)
        return sorted(self.rows_in("reading facts", lambda ids: q.where(c.user_id.in_(ids)), user_ids),
                      key=lambda r: (r["scope"], r["user_id"]))

    def forgotten(self, user_ids: Iterable[int] | None = None) -> dict[int, list[str]]:
        """What each user asked to forget, oldest first. None: every user."""
        c = forgotten_facts.c
        q = sa.select(c.id, c.user_id, c.fact)
        rows = self.rows("reading forgotten facts", q) if user_ids is None \
            else self.rows_in("reading forgotten facts", lambda ids: q.where(c.user_id.in_(ids)), user_ids)
        out: dict[int, list[str]] = defaultdict(list)
        for r in sorted(rows, key=lambda r: r["id"]):
            out[r["user_id"]].append(r["fact"])
        return dict(out)

    def write_facts(self, scope: str, user_id: int, blob: str, now: dt.datetime,
                    forgotten: str | None = None, scrub: Callable[[str], str] | None = None) -> int:
        """Store a facts blob; with `forgotten`, also record it and scrub (via the `scrub` text
        function) every stored summary and context of the user. Returns the rows scrubbed."""
        if forgotten is not None and scrub is None:
            raise ValueError("forgetting needs the scrub function that removes the fact from texts")
        with self.writing("writing facts") as conn:
            stmt = insert_for(conn)(user_facts).values(scope=scope, user_id=user_id, facts=blob, updated_at=now)
            conn.execute(stmt.on_conflict_do_update(index_elements=[user_facts.c.scope, user_facts.c.user_id],
                                                    set_={"facts": blob, "updated_at": now}))
            if forgotten is None:
                return 0
            conn.execute(sa.insert(forgotten_facts).values(scope=scope, user_id=user_id, fact=forgotten,
                                                           created_at=now))
            changed = 0
            for table, col, keys in SCRUBBED:
                rows = conn.execute(sa.select(*[table.c[k] for k in keys], table.c[col])
                                    .where(table.c.user_id == user_id)).all()
                for row in rows:
                    cleaned = scrub(row[-1])
                    if cleaned != row[-1]:
                        conn.execute(sa.update(table).where(*[table.c[k] == row[i] for i, k in enumerate(keys)])
                                     .values({col: cleaned}))
                        changed += 1
            return changed
