"""The audit trail of user controls: one control_actions row per control — what, about whom
(`subject_key`: the user id as text; after an erase "erased:" + a hash), who asked (NULL: the
operator, or the subject of an erase), where, when, and how many rows of which table it touched.
Never a text: a row says that something was forgotten or cleared, not what."""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any, Mapping

from ..config import Settings
from ..ids import parse_id
from .auth import OPERATOR, authorize, requester_id

ERASED_PREFIX = "erased:"


def subject_key(user_id: int) -> str:
    return str(user_id)


def erased_key(user_id: int) -> str:
    """The subject of an erased user's audit rows: "erased:" + the first 16 hex digits of the
    sha256 of the id. One-way, but not secret from someone who guesses the id: it lets an
    operator confirm that a given user was erased, nothing more."""
    return ERASED_PREFIX + hashlib.sha256(str(user_id).encode("ascii")).hexdigest()[:16]


def action_row(action: str, user_id: int, by: str, requested_by: Any, scope: str | None, at: dt.datetime,
               counts: Mapping[str, int], **detail: Any) -> dict:
    """The keyword arguments of store.record_action: the counts per table (those that are not 0)
    and who asked, by role (operator, subject, admin), in `detail`; never a text."""
    rows = {k: int(v) for k, v in sorted(counts.items()) if v}
    return {"action": action, "subject_key": subject_key(user_id), "requested_by": requester_id(requested_by),
            "scope": scope, "at": at, "rows_affected": sum(rows.values()),
            "detail": {"by": by, "rows": rows, **detail}}


def record(store, action: str, user_id: int, by: str, requested_by: Any, scope: str | None, at: dt.datetime,
           counts: Mapping[str, int] | None = None, *, conn=None, **detail: Any) -> int:
    """Record one control (store.record_action), inside `conn`'s transaction when given; returns
    the row's id."""
    return store.record_action(**action_row(action, user_id, by, requested_by, scope, at, counts or {}, **detail),
                               conn=conn)


def user_audit(store, settings: Settings | None, user_id: Any, *, requested_by: Any = OPERATOR) -> list[dict]:
    """The controls recorded about the user, oldest first (the subject or an admin may read
    them; reading them is not itself recorded)."""
    user_id = parse_id(user_id, "user_id")
    authorize(settings, "read the audit of", user_id, requested_by)
    return store.actions(subject_key(user_id))


def audit_line(row: Mapping[str, Any]) -> str:
    """One control on one line: when, what, where, who asked, the rows it touched."""
    detail = row.get("detail") or {}
    who = detail.get("by") or ("operator" if row.get("requested_by") is None else "")
    if row.get("requested_by") is not None:
        who = f"{who} {row['requested_by']}".strip()
    rows = ", ".join(f"{table} {n}" for table, n in (detail.get("rows") or {}).items()) or "no rows"
    extra = "".join(f"; {k} {v}" for k, v in detail.items() if k not in ("by", "rows"))
    return (f"{row['at'].strftime('%Y-%m-%d %H:%M:%S')} UTC  {row['action']:8} {row.get('scope') or 'everywhere'}"
            f"  by {who or 'unknown'}  ({rows}{extra})")
