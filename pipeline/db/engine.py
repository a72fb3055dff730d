"""Engine creation for SQLite (embedded default) and PostgreSQL (psycopg 3).

A connection never creates a database: a SQLite file is opened only if it exists (`mode=rw`), so
a read from the wrong working directory raises NoDatabaseError naming the file it tried instead
of leaving an empty database behind. `create_database` (called by the migration runner, i.e.
`mempipe db upgrade`) is the one place a SQLite file and its directory are made; a PostgreSQL
database is made by its administrator (createdb), never by mempipe.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from urllib.parse import quote

import msgspec
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ..errors import ConfigError, NoDatabaseError
from .location import absolute_url, missing_sqlite_file, sqlite_file


def _subclass_text(value):
    """msgspec encodes `datetime` and `date` themselves, not their subclasses (freezegun's): as text."""
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    raise NotImplementedError(f"cannot encode {type(value).__name__} as JSON")


JSON_ENCODER = msgspec.json.Encoder(enc_hook=_subclass_text)  # also the store's rows sent as one JSON text


def json_text(value) -> str:
    """The text of a JSON column's value (SQLAlchemy's json_serializer, both databases): msgspec
    instead of json.dumps, a fifth of its time on a fact's sources (a nightly run at 1M messages
    writes about a million such values); compact, UTF-8 text, read back alike."""
    return JSON_ENCODER.encode(value).decode()


def make_engine(url: str, *, pool_size: int = 5, max_overflow: int = 10) -> Engine:
    """An engine for the URL. pool_size / max_overflow size PostgreSQL's connection pool
    (settings.pool_size / settings.pool_max_overflow); SQLite ignores them. A relative SQLite
    path is made absolute against the working directory now."""
    try:
        parsed = sa.engine.make_url(url)
    except sa.exc.ArgumentError as exc:
        raise ConfigError(
            f"bad database URL {url!r}: use sqlite:///path/to/file.db or postgresql+psycopg://user@host/db"
        ) from exc
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        cwd = os.getcwd()
        engine = sa.create_engine(absolute_url(url, Path(cwd)), hide_parameters=True, json_serializer=json_text)  # errors and logs never show row values
        path = sqlite_file(engine.url)
        if path is not None:
            _open_existing_only(engine, path, missing_sqlite_file(url, path, cwd))

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
                                hide_parameters=True, json_serializer=json_text)
    raise ConfigError(f"unsupported database {backend!r}: mempipe runs on SQLite or PostgreSQL")


def libpq_url(url: str | sa.engine.URL) -> str:
    """A PostgreSQL URL as libpq reads it (`postgresql://…`, password kept): what psycopg itself
    and procrastinate take. SQLAlchemy's `postgresql+psycopg://` names the driver; libpq does not."""
    parsed = sa.engine.make_url(url) if isinstance(url, str) else url
    return parsed.set(drivername="postgresql").render_as_string(hide_password=False)


def _open_existing_only(engine: Engine, path: str, missing: str) -> None:
    uri = f"file:{quote(path)}?mode=rw"  # quote: '?', '#' and '%' would end or escape a URI's path

    @sa.event.listens_for(engine, "do_connect")
    def _existing_file(_dialect, _record, cargs, cparams):
        # The check gives the message; mode=rw makes sure, even for a file deleted after it
        # (SQLite's default mode would quietly make a new, empty one).
        if not os.path.exists(path):
            raise NoDatabaseError(missing)
        cargs[0] = uri
        cparams["uri"] = True


def create_database(engine: Engine) -> bool:
    """Make the SQLite file an engine names (and its directory) when it is not there: an empty
    file is an empty SQLite database. True when it was made. Other databases: nothing (False)."""
    path = sqlite_file(engine.url)
    if path is None or os.path.exists(path):
        return False
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).touch()
    return True
