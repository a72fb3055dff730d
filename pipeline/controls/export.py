"""`user_export`: every row about or by a user, from every table, as one JSON document.

Tables are found by reflecting the database (pipeline/store/users.py `rows_of_user`): every
table with a user_id column (its rows of the user), and control_actions (the user as subject or
requester) — a table added later is exported without changing this code. Values are JSON: 64-bit
ids as strings (a JavaScript number keeps 53 bits), dates and times ISO-8601, JSON documents
as they are.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa

from ..clock import Clock, system_clock
from ..config import Settings
from ..db.tables import metadata
from ..ids import parse_id
from .audit import record
from .auth import authorize

SCHEMA = "mempipe-export-1"
# columns of tables this code does not know that hold ids (ours are typed BIGINT: db/tables.py)
_ID_NAMES = ("id", "requested_by", "reply_to")


def is_id_column(table: str, column: str) -> bool:
    """A 64-bit id column: BIGINT in pipeline/db/tables.py; for a table not described there, one
    named id, *_id, requested_by or reply_to."""
    known = metadata.tables.get(table)
    if known is not None and column in known.c:
        return isinstance(known.c[column].type, sa.BigInteger)
    return column in _ID_NAMES or column.endswith("_id")


def jsonable(value: Any, is_id: bool = False) -> Any:
    """A stored value as JSON: ids as strings, dates and times ISO-8601."""
    if value is None:
        return None
    if is_id and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def export_rows(table: str, rows: list[dict]) -> list[dict]:
    return [{k: jsonable(v, is_id_column(table, k)) for k, v in r.items()} for r in rows]


def user_export(store, user_id: Any, *, requested_by: Any, settings: Settings | None = None,
                clock: Clock = system_clock) -> dict:
    """{"schema": "mempipe-export-1", "user_id": "…", "exported_at": "…", "tables": {name: [rows]}}:
    every row of every table about or by the user (every table with a user_id column appears,
    empty or not). The export is recorded in the audit first, so the document holds its own
    record. Admins (settings.controls.admins) may export anyone; without settings only the user
    themselves or the operator may."""
    user_id = parse_id(user_id, "user_id")
    by = authorize(settings, "export", user_id, requested_by)
    now = clock()
    record(store, "export", user_id, by, requested_by, None, now)
    tables = store.rows_of_user(user_id)
    return {"schema": SCHEMA, "user_id": str(user_id), "exported_at": now.isoformat(),
            "tables": {name: export_rows(name, rows) for name, rows in sorted(tables.items())}}
