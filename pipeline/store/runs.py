"""pipeline_runs: one row per run, replay or scheduled job, with its counts and outcome."""

from __future__ import annotations

import datetime as dt
from typing import Protocol

import sqlalchemy as sa

from ..db.tables import pipeline_runs

ZERO_COUNTS = ("partition_days", "summarizer_calls", "prompt_tokens", "output_tokens", "cache_hits",
                "fallbacks", "errors", "dropped_user_ids")


class RunsStorage(Protocol):
    def start_run(self, kind: str, date_from, date_to, guild_id, dry_run: bool, now: dt.datetime) -> int: ...
    def finish_run(self, run_id: int, status: str, counts: dict[str, int], now: dt.datetime,
                   error: str | None = None) -> None: ...
    def runs(self, limit: int = 20) -> list[dict]: ...


class RunsStore:
    def start_run(self, kind: str, date_from, date_to, guild_id, dry_run: bool, now: dt.datetime) -> int:
        with self.writing("recording a run") as conn:
            return conn.execute(sa.insert(pipeline_runs).values(
                kind=kind, date_from=date_from, date_to=date_to, guild_id=guild_id, dry_run=dry_run,
                started_at=now, status="running", **{k: 0 for k in ZERO_COUNTS},
            ).returning(pipeline_runs.c.id)).scalar_one()

    def finish_run(self, run_id: int, status: str, counts: dict[str, int], now: dt.datetime,
                   error: str | None = None) -> None:
        with self.writing("recording a run") as conn:
            conn.execute(sa.update(pipeline_runs).where(pipeline_runs.c.id == run_id).values(
                status=status, finished_at=now, error=error, **counts))

    def runs(self, limit: int = 20) -> list[dict]:
        return self.rows("listing runs", sa.select(pipeline_runs).order_by(pipeline_runs.c.id.desc()).limit(limit))

    def run(self, run_id: int) -> dict | None:
        """One run's row (what `mempipe runs` lists), or None."""
        found = self.rows("reading a run", sa.select(pipeline_runs).where(pipeline_runs.c.id == run_id))
        return found[0] if found else None
