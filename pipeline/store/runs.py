"""pipeline_runs: one row per run, replay or scheduled job, with its counts and outcome.

Counts are added, never set: a run's row starts at zero, `mempipe worker` processes add what each
of their jobs counted as it finishes (`add_run_counts`, atomic), and `finish_run` adds the run's
own. A run that waits for workers takes their counts into its own at each stage's end
(`take_run_counts`), so its report and log line show them; a job still finishing after the run
ended adds to the row all the same."""

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
        """The run's outcome; its own `counts` are added to what its workers added."""
        with self.writing("recording a run") as conn:
            conn.execute(sa.update(pipeline_runs).where(pipeline_runs.c.id == run_id).values(
                status=status, finished_at=now, error=error, **_added(counts)))

    def add_run_counts(self, run_id: int, counts: dict[str, int]) -> None:
        """A worker's job adds what it counted (`c = c + :c`: jobs finishing at once lose nothing)."""
        with self.writing("recording a run's counts") as conn:
            conn.execute(sa.update(pipeline_runs).where(pipeline_runs.c.id == run_id).values(**_added(counts)))

    def take_run_counts(self, run_id: int, names) -> dict[str, int]:
        """The counts `names` the run's row holds, set back to zero in the same transaction (the
        row is locked meanwhile): what workers added since the last take."""
        columns = [pipeline_runs.c[n] for n in names]
        with self.writing("reading a run's counts") as conn:
            row = conn.execute(sa.select(*columns).where(pipeline_runs.c.id == run_id).with_for_update()).one()
            conn.execute(sa.update(pipeline_runs).where(pipeline_runs.c.id == run_id).values(
                **{n: 0 for n in names}))
        return dict(zip(names, row))

    def runs(self, limit: int = 20) -> list[dict]:
        return self.rows("listing runs", sa.select(pipeline_runs).order_by(pipeline_runs.c.id.desc()).limit(limit))

    def run(self, run_id: int) -> dict | None:
        """One run's row (what `mempipe runs` lists), or None."""
        found = self.rows("reading a run", sa.select(pipeline_runs).where(pipeline_runs.c.id == run_id))
        return found[0] if found else None


def _added(counts: dict[str, int]) -> dict:
    return {name: pipeline_runs.c[name] + value for name, value in counts.items()}
