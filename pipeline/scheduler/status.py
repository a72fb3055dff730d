"""`mempipe status`: who leads, how each job last ended, what is due — from the database only
(the leader writes `scheduler_leader` and `scheduler_state`; any process can read them)."""

from __future__ import annotations

import datetime as dt

from ..config import Settings
from ..store import Store
from .schedule import build_triggers, missed_while_away


def stale_after_s(settings: Settings) -> float:
    """A leader whose heartbeat is older than this is presumed stuck or dead."""
    s = settings.scheduler
    return max(3 * s.heartbeat_s, s.takeover_s)


def status(store: Store, settings: Settings, *, now: dt.datetime) -> dict:
    row = store.scheduler_leader()
    states = store.scheduler_states()
    triggers = build_triggers(settings)
    leader = None
    leading = False
    if row is not None:
        age = (now - row["heartbeat_at"]).total_seconds()
        if row["released_at"] is not None:
            state = "stopped"
        elif age > stale_after_s(settings):
            state = "stale"
        else:
            state, leading = "leading", True
        leader = {"holder": row["holder"], "pid": row["pid"], "host": row["host"], "since": row["since"],
                  "heartbeat_at": row["heartbeat_at"], "heartbeat_age_s": round(age, 1),
                  "released_at": row["released_at"], "state": state}
    out = []
    for job_id in sorted(set(triggers) | set(states)):
        st = states.get(job_id) or {}
        trigger = triggers.get(job_id)
        due, source = None, None
        if leading and st.get("next_run_at") is not None:
            due, source = st["next_run_at"], "leader"
        elif trigger is not None:
            missed = missed_while_away(trigger, st, now, settings.scheduler.misfire_grace_s)
            if missed is not None:  # a leader starting now would run it at once
                due, source = missed, "missed"
            else:
                due, source = trigger.get_next_fire_time(None, now), "schedule"
        report = st.get("last_report") or {}
        out.append({
            "job": job_id,
            "configured": trigger is not None,
            "last_started_at": st.get("last_started_at"),
            "last_finished_at": st.get("last_finished_at"),
            "last_outcome": st.get("last_outcome"),
            "last_error": st.get("last_error"),
            "last_ok_at": st.get("last_ok_at"),
            "last_run_id": st.get("last_run_id"),
            "last_duration_s": report.get("duration_s"),
            "last_report": report or None,
            "next_run_at": due,
            "next_run_source": source,
        })
    return {"now": now, "database": store.safe_url, "leader": leader, "jobs": out}
