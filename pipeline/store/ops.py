"""Operator reads for `mempipe serve --http` (pipeline/web/): aggregates over pipeline_runs, the
degraded rows of the derived tables and the age of contexts. Read-only, never a chat text or a
summary: counts, ids, days and reasons only. Every result is bounded (grouped, or LIMITed), and
the reads are by index (migration 0024): the degraded rows from partial indexes that hold only
them, the context ages from a covering index of (scope, as_of_day) — a scrape reads no summary
or context text, and grows with the number of contexts by that index's small entries only.

`OpsReads(store)` wraps a Store rather than joining its roles: the web package is the only caller,
and the store keeps one error boundary (any driver error is a StoreError naming the read).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa

from ..db.tables import (channels, daily_summaries, historical_summaries, memory_context, partition_days,
                         pipeline_runs)
from .base import StoreBase, select_in

# pipeline_runs columns that are not counts of a run
_NOT_COUNTS = {"id", "guild_id"}
DEGRADED_IDS = 20  # ids listed per table on the status page


def count_columns() -> list[str]:
    """Every numeric count column of pipeline_runs, in table order: a count column added by a
    later migration (and described in db/tables.py) is summed without a change here."""
    return [c.name for c in pipeline_runs.columns
            if c.name not in _NOT_COUNTS and isinstance(c.type, (sa.Integer, sa.Float))]


class OpsReads:
    def __init__(self, store: StoreBase):
        self.store = store

    def ping(self) -> None:
        """One round trip; a StoreError when the database cannot be reached."""
        with self.store.reading("checking the database") as conn:
            conn.execute(sa.select(sa.literal(1))).scalar_one()

    def run_totals(self) -> list[dict[str, Any]]:
        """Per (kind, status, dry_run): how many runs and the sum of each count column."""
        c = pipeline_runs.c
        sums = [sa.func.coalesce(sa.func.sum(c[name]), 0).label(name) for name in count_columns()]
        q = (sa.select(c.kind, c.status, c.dry_run, sa.func.count().label("runs"), *sums)
             .group_by(c.kind, c.status, c.dry_run).order_by(c.kind, c.status, c.dry_run))
        return self.store.rows("summing pipeline runs", q)

    def runs_since(self, since: dt.datetime) -> list[dict[str, Any]]:
        """The LLM accounting of every run (dry runs excluded: they send nothing) started at or
        after `since`: a month is at most ~1,500 rows (hourly refreshes and rollovers)."""
        c = pipeline_runs.c
        q = (sa.select(c.started_at, c.llm_calls, c.retries, c.prompt_tokens, c.output_tokens, c.estimated_cost)
             .where(c.started_at >= since, sa.not_(c.dry_run)).order_by(c.started_at))
        return self.store.rows("reading recent runs", q)

    def degraded_reasons(self) -> list[dict[str, Any]]:
        """(table, reason text, rows) for every degraded row. A daily summary has no reason of
        its own: its partition-day's is the reason (one summarizer call made both)."""
        out: list[dict[str, Any]] = []
        with self.store.reading("counting degraded rows") as conn:
            for table in (partition_days, historical_summaries, memory_context):
                q = (sa.select(table.c.degraded_reason, sa.func.count()).where(table.c.degraded)
                     .group_by(table.c.degraded_reason))
                out += [{"table": table.name, "reason": r, "rows": n} for r, n in conn.execute(q)]
            d, p = daily_summaries.c, partition_days.c
            same_day = (d.partition == p.partition) & (d.day == p.day)
            q = (sa.select(p.degraded_reason, sa.func.count())
                 .select_from(daily_summaries.outerjoin(partition_days, same_day))
                 .where(d.degraded).group_by(p.degraded_reason))
            out += [{"table": daily_summaries.name, "reason": r, "rows": n} for r, n in conn.execute(q)]
        return out

    def degraded_keys(self, limit: int = DEGRADED_IDS) -> dict[str, list[dict[str, Any]]]:
        """The keys (ids and days, never the text) of the newest degraded rows, per table."""
        keyed = {
            partition_days: ([partition_days.c.partition, partition_days.c.day], partition_days.c.computed_at),
            daily_summaries: ([daily_summaries.c.partition, daily_summaries.c.day, daily_summaries.c.user_id],
                              daily_summaries.c.created_at),
            historical_summaries: ([historical_summaries.c.partition, historical_summaries.c.day,
                                    historical_summaries.c.user_id], historical_summaries.c.created_at),
            memory_context: ([memory_context.c.scope, memory_context.c.user_id], memory_context.c.made_at),
        }
        out: dict[str, list[dict[str, Any]]] = {}
        with self.store.reading("listing degraded rows") as conn:
            for table, (cols, newest) in keyed.items():
                extra = [table.c.degraded_reason] if "degraded_reason" in table.c else []
                q = sa.select(*cols, *extra).where(table.c.degraded).order_by(newest.desc(), *cols).limit(limit)
                out[table.name] = [dict(r._mapping) for r in conn.execute(q)]
        return out

    def context_days(self) -> list[dict[str, Any]]:
        """(scope, as_of_day, contexts): grouped, so it grows with scopes × days, not users."""
        c = memory_context.c
        q = (sa.select(c.scope, c.as_of_day, sa.func.count().label("contexts"))
             .group_by(c.scope, c.as_of_day).order_by(c.scope, c.as_of_day))
        return self.store.rows("reading context ages", q)

    def channel_guilds(self, channel_ids) -> dict[int, int | None]:
        """channel id -> its guild id (None for a DM channel), for the channels asked about."""
        c = channels.c
        with self.store.reading("reading channels") as conn:
            return {ch: g for ch, g in select_in(conn, lambda ids: sa.select(c.channel_id, c.guild_id)
                                                 .where(c.channel_id.in_(ids)), channel_ids)}
