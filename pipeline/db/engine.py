"""Engine creation for SQLite (embedded default) and PostgreSQL (psycopg 3)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ..errors import ConfigError


def make_engine(url: str, *, pool_size: int = 5, max_overflow: int = 10) -> Engine:
    """An engine for the URL. pool_size / max_overflow size PostgreSQL's connection pool
    (settings.pool_size / settings.pool_max_overflow); SQLite ignores them."""
    try:
        parsed = sa.engine.make_url(url)
    except sa.exc.ArgumentError as exc:
        raise ConfigError(
            f"bad database URL {url!r}: use sqlite:///path/to/file.db or postgresql+psycopg://user@host/db"
        ) from exc
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(url, hide_parameters=True)  # errors and logs never show row values

        @sa.event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):  # pragma: no cover - trivial
            cur = dbapi_conn.cursor()
            # WAL: a bot reading contexts is never blocked by a running replay.
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=10000")
            cur.execute("PRAGMA foreign_keys=ON")
            # a deleted row's bytes are overwritten, not left on a free page: forget, clear and
            # erase remove text from the file, not only from queries
            cur.execute("PRAGMA secure_delete=ON")
            cur.close()

        return engine
    if backend == "postgresql":
        if parsed.get_driver_name() != "psycopg":
            raise ConfigError(f"use the psycopg 3 driver: postgresql+psycopg://… (got {parsed.drivername})")
        return sa.create_engine(url, pool_size=pool_size, max_overflow=max_overflow, pool_pre_ping=True,
                                hide_parameters=True)
    raise ConfigError(f"unsupported database {backend!r}: mempipe runs on SQLite or PostgreSQL")
