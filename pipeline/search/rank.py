"""The final order of search hits: one formula, deterministic (no clock, no randomness), the
same on both databases up to their relevance functions (ARCHITECTURE.md, "Search").

    score = relevance × (1 + W_RECENCY · recency + W_CONFIDENCE · confidence)

- relevance: the database's full-text relevance, normalised within the candidate set (divided by
  the best candidate's, so the best is 1.0): SQLite `-bm25(memory_items_fts, 0.0, 1.0)` (the
  user_id column weighs nothing), PostgreSQL `ts_rank_cd(terms, query)`. Both grow with how many
  of the query's words an item holds and how rare they are.
- recency = 0.5 ** (age_days / HALF_LIFE_DAYS), the age counted back from the newest candidate's
  day (not from today: the same data ranks the same way on any day). A fact's day is the last day
  it was said, a summary's the day it summarises.
- confidence: a fact's (0–1); a summary has none and counts as SUMMARY_CONFIDENCE.

The weights are small on purpose: recency and confidence can at most multiply a score by
1 + W_RECENCY + W_CONFIDENCE = 1.25, so they only reorder items whose relevance is within 25% of
each other (near-ties) and never lift an item holding fewer of the query's words above one
holding clearly more. Ties are broken by kind (fact, daily, historical), then the newer day, then
partition and text, so equal scores always come out in one order.
"""

from __future__ import annotations

import datetime as dt
from typing import Iterable, Mapping, NamedTuple

W_RECENCY = 0.15
W_CONFIDENCE = 0.10
HALF_LIFE_DAYS = 30.0
SUMMARY_CONFIDENCE = 0.5  # a summary is the model's reading of a day, not a checked statement
KIND_ORDER = {"fact": 0, "daily": 1, "historical": 2}


class Hit(NamedTuple):
    """One search result: a memory item the scope may read (a named tuple, like read.Context)."""

    kind: str  # fact | daily | historical
    text: str
    partition: str | None  # where it was said; None for a global fact said where this scope cannot read
    level: str  # dm | channel_restricted | guild_public | global
    day: dt.date  # a fact's last-seen day, a summary's day
    confidence: float | None  # facts only
    score: float
    fact_id: int | None  # facts only


def _day(value) -> dt.date:
    return dt.date.fromisoformat(value) if isinstance(value, str) else value  # SQLite days are text


def rank(candidates: Iterable[Mapping], limit: int) -> list[Hit]:
    """The best `limit` of the candidates (rows with kind, body, partition, level, day, confidence,
    fact_id and `relevance`, the database's raw full-text relevance, higher is better)."""
    rows = [dict(r, day=_day(r["day"])) for r in candidates]
    if not rows:
        return []
    best = max(float(r["relevance"]) for r in rows)
    newest = max(r["day"] for r in rows)
    hits = []
    for r in rows:
        relevance = float(r["relevance"]) / best if best > 0 else 1.0
        recency = 0.5 ** ((newest - r["day"]).days / HALF_LIFE_DAYS)
        confidence = r["confidence"]
        weight = SUMMARY_CONFIDENCE if confidence is None else float(confidence)
        score = relevance * (1 + W_RECENCY * recency + W_CONFIDENCE * weight)
        hits.append(Hit(r["kind"], r["body"], r["partition"], r["level"], r["day"],
                        None if confidence is None else float(confidence), score, r["fact_id"]))
    hits.sort(key=lambda h: (-h.score, KIND_ORDER.get(h.kind, 3), -h.day.toordinal(), h.partition, h.text))
    return hits[:limit]
