"""Facts and forgotten facts: per (scope, user) facts blobs, and what a user asked to forget.

Forgetting is one transaction: the forgotten fact is recorded and every stored summary, context
and facts blob it applies to is scrubbed, so nothing can read it between the two. Where it
applies is the stage's decision (stages/forgetting.py); the store reads the rows it names.
"""

from __future__ import annotations

import datetime as dt
from typing import Collection, Iterable, Protocol

import sqlalchemy as sa

from ..db.tables import daily_summaries, forgotten_facts, historical_summaries, memory_context, user_facts
from .base import insert_for, select_in


class Scrub(Protocol):
    """What one forget reaches: every user's summaries of `partitions` and facts of those scopes,
    and the `contexts` (scope, user) named; called with each such row (its key columns, `user_id`
    and `text`), it returns what the text becomes."""

    partitions: Collection[str]
    contexts: Collection[tuple[str, int]]

    def __call__(self, row: dict) -> str: ...


class FactsStorage(Protocol):
    def facts(self, *, scope: str | None = None, user_ids: Iterable[int] | None = None) -> list[dict]: ...
    def forgotten(self, user_ids: Iterable[int] | None = None) -> list[dict]: ...
    def write_facts(self, scope: str, user_id: int, blob: str, now: dt.datetime,
                    forgotten: str | None = None, scrub: Scrub | None = None) -> int: ...


# (table, text column, key columns) of every row a forget scrubs; the first key column selects
# the rows: a partition or a scope in the Scrub's reach (scrub_reach)
SCRUBBED = (
    (daily_summaries, "summary", ("partition", "day", "user_id")),
    (historical_summaries, "summary", ("partition", "user_id", "day")),
    (memory_context, "context", ("scope", "user_id")),
    (user_facts, "facts", ("scope", "user_id")),
)


def scrub_reach(table: sa.Table, scrub: Scrub) -> set[str]:
    """The partitions (or scopes) whose rows of `table` a forget reads; a context is then kept
    only when its (scope, user) is named."""
    return {s for s, _u in scrub.contexts} if table is memory_context else set(scrub.partitions)


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

    def forgotten(self, user_ids: Iterable[int] | None = None) -> list[dict]:
        """What users asked to forget (scope, user_id, fact), oldest first. None: every user."""
        c = forgotten_facts.c
        q = sa.select(c.id, c.scope, c.user_id, c.fact)
        rows = self.rows("reading forgotten facts", q) if user_ids is None \
            else self.rows_in("reading forgotten facts", lambda ids: q.where(c.user_id.in_(ids)), user_ids)
        return [{k: r[k] for k in ("scope", "user_id", "fact")} for r in sorted(rows, key=lambda r: r["id"])]

    def write_facts(self, scope: str, user_id: int, blob: str, now: dt.datetime,
                    forgotten: str | None = None, scrub: Scrub | None = None) -> int:
        """Store a facts blob; with `forgotten`, also record it and scrub every stored summary,
        facts blob and context the `scrub` reaches. Returns the rows scrubbed."""
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
            contexts = set(scrub.contexts)
            for table, col, keys in SCRUBBED:
                rows = list(select_in(conn, lambda values: sa.select(*[table.c[k] for k in keys], table.c[col])
                                      .where(table.c[keys[0]].in_(values)), sorted(scrub_reach(table, scrub))))
                for row in rows:
                    key = {k: row[i] for i, k in enumerate(keys)}
                    if table is memory_context and (key["scope"], key["user_id"]) not in contexts:
                        continue
                    cleaned = scrub(key | {"text": row[-1]})
                    if cleaned != row[-1]:
                        conn.execute(sa.update(table).where(*[table.c[k] == v for k, v in key.items()])
                                     .values({col: cleaned}))
                        changed += 1
            return changed
