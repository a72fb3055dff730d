"""The scheduler's state (`mempipe serve`): per-job outcomes and the current leader, written by
the leading process and read by `mempipe status`. The APScheduler job store is in memory: what
has to survive a restart — when each job last ran and how it ended — lives here."""

from __future__ import annotations

import datetime as dt
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.tables import scheduler_leader, scheduler_state
from .base import insert_for


class SchedulerStorage(Protocol):
    def scheduler_job_started(self, job_id: str, now: dt.datetime) -> None: ...
    def scheduler_job_finished(self, job_id: str, *, outcome: str, started_at: dt.datetime, now: dt.datetime,
                               error: str | None = None, run_id: int | None = None,
                               report: dict | None = None) -> None: ...
    def scheduler_next_runs(self, next_runs: dict[str, dt.datetime | None]) -> None: ...
    def scheduler_states(self) -> dict[str, dict]: ...
    def leader_heartbeat(self, holder: str, pid: int, host: str, since: dt.datetime, now: dt.datetime) -> None: ...
    def leader_released(self, holder: str, now: dt.datetime) -> None: ...
    def scheduler_leader(self) -> dict | None: ...


def _upsert(conn: Connection, table: sa.Table, key: dict[str, Any], values: dict[str, Any]) -> None:
    stmt = insert_for(conn)(table).values(**key, **values)
    conn.execute(stmt.on_conflict_do_update(index_elements=[table.c[k] for k in key],
                                            set_={k: stmt.excluded[k] for k in values}))


class SchedulerStore:
    def scheduler_job_started(self, job_id: str, now: dt.datetime) -> None:
        with self.writing("recording a scheduler job") as conn:
            _upsert(conn, scheduler_state, {"job_id": job_id},
                    {"last_started_at": now, "last_outcome": "running", "last_error": None})

    def scheduler_job_finished(self, job_id: str, *, outcome: str, started_at: dt.datetime, now: dt.datetime,
                               error: str | None = None, run_id: int | None = None,
                               report: dict | None = None) -> None:
        """Record how a run ended. An ok run also moves `last_ok_at` to its start: every scheduled
        fire up to then is covered by it (the catch-up rule in scheduler/schedule.py reads this)."""
        values: dict[str, Any] = {"last_finished_at": now, "last_outcome": outcome, "last_error": error,
                                  "last_run_id": run_id, "last_report": report}
        if outcome == "ok":
            values["last_ok_at"] = started_at
        with self.writing("recording a scheduler job") as conn:
            _upsert(conn, scheduler_state, {"job_id": job_id}, values)

    def scheduler_next_runs(self, next_runs: dict[str, dt.datetime | None]) -> None:
        with self.writing("recording the schedule") as conn:
            for job_id, at in sorted(next_runs.items()):
                _upsert(conn, scheduler_state, {"job_id": job_id}, {"next_run_at": at})

    def scheduler_states(self) -> dict[str, dict]:
        rows = self.rows("reading the scheduler state", sa.select(scheduler_state).order_by(scheduler_state.c.job_id))
        return {r["job_id"]: r for r in rows}

    def leader_heartbeat(self, holder: str, pid: int, host: str, since: dt.datetime, now: dt.datetime) -> None:
        """The leader's row (id = 1): who, since when, last heartbeat. Informational only — the
        lock (advisory lock / lock file) decides who leads."""
        with self.writing("recording the scheduler leader") as conn:
            _upsert(conn, scheduler_leader, {"id": 1}, {"holder": holder, "pid": pid, "host": host, "since": since,
                                                        "heartbeat_at": now, "released_at": None})

    def leader_released(self, holder: str, now: dt.datetime) -> None:
        with self.writing("recording the scheduler leader") as conn:
            conn.execute(sa.update(scheduler_leader)
                         .where(scheduler_leader.c.id == 1, scheduler_leader.c.holder == holder)
                         .values(released_at=now, heartbeat_at=now))

    def scheduler_leader(self) -> dict | None:
        rows = self.rows("reading the scheduler leader", sa.select(scheduler_leader).where(scheduler_leader.c.id == 1))
        return rows[0] if rows else None
