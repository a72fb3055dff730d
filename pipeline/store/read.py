"""The bot read path. A bot reads one row by primary key before every answer: this runs the
README's statement (`get_context` in sql/queries.sql) on a dedicated driver connection per
thread (autocommit, so it never holds a snapshot open), without building SQLAlchemy constructs
per call. Any driver error is a StoreError."""

from __future__ import annotations

import re
import threading
from typing import Protocol

from ..db.queries import query
from ..errors import StoreError
from .base import driver_message

_NAMED = re.compile(r":(\w+)")


class ReadStorage(Protocol):
    def context_fast(self, scope: str, user_id: int) -> tuple | None: ...


class _ReadConnection(threading.local):
    raw = None
    driver = None
    cursor = None
    sql = None


class ReadStore:
    def context_fast(self, scope: str, user_id: int) -> tuple | None:
        """(context, as_of_day, made_at, degraded) or None. SQLite returns days and times as text."""
        local = self.__dict__.get("_read_local")
        if local is None:
            local = self.__dict__.setdefault("_read_local", _ReadConnection())
        try:
            if local.driver is None:
                raw = self.engine.raw_connection()
                driver = raw.driver_connection
                sql = query("get_context")
                if self.dialect == "postgresql":
                    driver.autocommit = True
                    sql = _NAMED.sub(r"%(\1)s", sql)
                local.raw, local.driver, local.cursor, local.sql = raw, driver, driver.cursor(), sql
            cur = local.cursor
            cur.execute(local.sql, {"scope": scope, "user_id": user_id})
            return cur.fetchone()
        except Exception as exc:
            raw, local.raw, local.driver, local.cursor = local.raw, None, None, None
            if raw is not None:
                try:
                    raw.invalidate()
                except Exception:  # pragma: no cover - best effort on a broken connection
                    pass
            raise StoreError(f"database error while reading a context: {driver_message(exc)} "
                             f"(database: {self.safe_url})") from None

    def close(self) -> None:
        local = self.__dict__.get("_read_local")
        if local is not None and local.raw is not None:
            local.cursor.close()
            local.raw.close()
            local.raw = local.driver = local.cursor = None
        super().close()
