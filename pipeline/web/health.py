"""GET /healthz: is this deployment doing its job? Read from the database, like `mempipe status`.

The rule (README, "Status page and metrics"): unhealthy (HTTP 503) when
- the database cannot be read, or
- a leader is recorded but its heartbeat is stale (older than max(3 × heartbeat_s, takeover_s),
  scheduler/status.py: stuck or dead while still holding the lock), or
- the last run of a configured job failed (`cancelled` is not a failure: a clean stop cancels
  the job in flight and the next leader retries it).
Otherwise healthy (200) — also with no leader yet, or after the leader stopped cleanly: a
standby takes over within takeover_s, and this very process may be that standby.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..config import Settings
from ..errors import MempipeError
from ..scheduler.status import stale_after_s, status
from ..store import Store
from ..store.ops import OpsReads


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def health(store: Store, settings: Settings, now: dt.datetime, *, identity: str,
           leading: bool) -> tuple[int, dict[str, Any]]:
    """(HTTP status, JSON body)."""
    body: dict[str, Any] = {"status": "ok", "problems": [], "checked_at": now.isoformat(),
                            "process": {"identity": identity, "role": "leader" if leading else "standby"}}
    try:
        OpsReads(store).ping()
        report = status(store, settings, now=now)
    except MempipeError as exc:
        body.update(status="unhealthy", problems=[f"database unreachable: {exc}"],
                    database={"reachable": False, "error": str(exc)}, leader=None, jobs={})
        return 503, body
    body["database"] = {"reachable": True, "url": report["database"]}
    lead = report["leader"]
    body["leader"] = None if lead is None else {
        "holder": lead["holder"], "state": lead["state"], "this_process": lead["holder"] == identity and leading,
        "heartbeat_age_s": lead["heartbeat_age_s"], "since": _iso(lead["since"]),
        "released_at": _iso(lead["released_at"])}
    if lead is not None and lead["state"] == "stale":
        body["problems"].append(f"leader {lead['holder']} heartbeat is {lead['heartbeat_age_s']:.0f} s old "
                                f"(stale after {stale_after_s(settings):g} s): stuck or dead")
    jobs = {}
    for j in report["jobs"]:
        jobs[j["job"]] = {"last_outcome": j["last_outcome"], "last_started_at": _iso(j["last_started_at"]),
                          "last_finished_at": _iso(j["last_finished_at"]), "last_duration_s": j["last_duration_s"],
                          "last_error": j["last_error"], "configured": j["configured"]}
        if j["configured"] and j["last_outcome"] == "failed":
            body["problems"].append(f"job {j['job']}: last run failed: {j['last_error'] or 'no error recorded'}")
    body["jobs"] = jobs
    if body["problems"]:
        body["status"] = "unhealthy"
        return 503, body
    return 200, body
