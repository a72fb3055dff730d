"""Where a database URL points, and what to tell someone whose database is not there.

A SQLite URL's relative path (the shipped default, `sqlite:///var/mempipe.db`) is relative to
the working directory the process runs in; make_engine turns it into an absolute one when the
engine is made, so every message names the file that was really tried. Only `prepare` (the
migration runner's first step, `mempipe db upgrade`) creates a SQLite file; connections open an
existing file only (pipeline/db/engine.py).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import sqlalchemy as sa

DEFAULT_DATABASE_URL = "sqlite:///var/mempipe.db"
_SET_IT = "pass --db or set MEMPIPE_DATABASE_URL to use another one"


def sqlite_file(url: str | sa.engine.URL) -> str | None:
    """The file path a SQLite URL names, as written (maybe relative); None for other databases,
    in-memory ones and `file:` URIs (`?uri=true`: their own mode decides what is created)."""
    try:
        parsed = sa.engine.make_url(url)
    except sa.exc.ArgumentError:
        return None  # make_engine says what is wrong with it
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    if "uri" in parsed.query:
        return None
    return parsed.database


def absolute_url(url: str, base: Path | None = None) -> str:
    """The URL with a relative SQLite path made absolute against `base` (default: the working
    directory now); any other URL unchanged."""
    path = sqlite_file(url)
    if path is None or os.path.isabs(path):
        return url
    parsed = sa.engine.make_url(url)
    full = os.path.normpath(os.path.join(base if base is not None else os.getcwd(), path))
    return parsed.set(database=full).render_as_string(hide_password=False)


def describe(url: str | sa.engine.URL) -> str:
    """What a message calls the database: a SQLite file's path, any other URL without its password."""
    path = sqlite_file(url)
    if path is not None:
        return path
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return "(a malformed database URL)"


def missing_sqlite_file(original: str, path: str, cwd: str) -> str:
    """No file at `path` (absolute), which `original` named (maybe relatively, from `cwd`)."""
    written = sqlite_file(original)
    why = ""
    if written is not None and not os.path.isabs(written):
        whose = f"the default {original}" if original == DEFAULT_DATABASE_URL else original
        why = f" ({whose} is relative to the working directory {cwd})"
    return (f"no mempipe database at {path}{why}: {_SET_IT}, or create this one with `mempipe db upgrade` "
            f"(--db sqlite:///{path})")


# The server's own words for a database that is not there (FATAL 3D000; psycopg gives no SQLSTATE
# for a failed connection). In another lc_messages language it is not matched, and the driver's
# message is shown as it is, with the URL.
_NO_PG_DATABASE = re.compile(r'database "(?P<name>[^"]+)" does not exist')


def missing_server_database(url: str | sa.engine.URL, driver_text: str) -> str | None:
    """The message for a PostgreSQL database that does not exist, when the driver says so."""
    m = _NO_PG_DATABASE.search(driver_text)
    if m is None:
        return None
    return (f'no PostgreSQL database "{m["name"]}" ({describe(url)}): {_SET_IT}, or create it '
            f'(createdb {m["name"]}, or CREATE DATABASE) and then run `mempipe db upgrade`')
