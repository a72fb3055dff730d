"""Apply the numbered SQL files in sql/migrations in order and record each one in
schema_migrations (its statements are in sql/queries.sql).

File names: `NNNN_name.sql` (both dialects) or `NNNN_name.<dialect>.sql` (sqlite / postgresql)
where the SQL must differ. Statements are separated by `;` at the end of a line.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ..errors import NoDatabaseError, SchemaError, StoreError
from ..resources import sql_dir
from .engine import create_database
from .location import describe, missing_server_database
from .queries import query

log = logging.getLogger(__name__)

MIGRATIONS_DIR = sql_dir() / "migrations"
DIALECTS = ("sqlite", "postgresql")
_NAME = re.compile(r"^(?P<version>\d{4})_(?P<name>[a-z0-9_]+)(?:\.(?P<dialect>sqlite|postgresql))?\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


def discover(dialect: str, directory: Path | None = None) -> list[Migration]:
    """The migrations for `dialect`, in order. None found is an error, never "nothing to do":
    an install without its SQL files must not report an empty database as up to date."""
    if dialect not in DIALECTS:
        raise SchemaError(f"no migrations for dialect {dialect!r}")
    directory = MIGRATIONS_DIR if directory is None else directory
    chosen: dict[int, Migration] = {}
    for path in sorted(directory.glob("*.sql")):
        m = _NAME.match(path.name)
        if not m:
            raise SchemaError(f"migration file name {path.name!r} does not match NNNN_name[.dialect].sql")
        if m["dialect"] not in (None, dialect):
            continue
        version = int(m["version"])
        if version in chosen and chosen[version].name != m["name"]:
            # two migrations numbered alike: one would be skipped without a word (where it was
            # added second, on databases that already have the other, it would never run)
            raise SchemaError(f"migrations {chosen[version].path.name} and {path.name} share the number "
                              f"{version:04d}: give the newer one the next free number")
        if version in chosen and m["dialect"] is None:
            continue  # a dialect-specific file wins over the shared one of its name
        chosen[version] = Migration(version, m["name"], path)
    if not chosen:
        raise SchemaError(
            f"no {dialect} migrations found in {directory}: the mempipe installation is incomplete "
            "(the package data pipeline.sql is missing); reinstall mempipe"
        )
    return [chosen[v] for v in sorted(chosen)]


# What the splitter steps over whole: quoted text, comments, dollar-quoted bodies ($$ … $$,
# $fn$ … $fn$: PostgreSQL functions), and the words that open and close a block.
_LEXEME = re.compile(r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|--[^\n]*|/\*.*?\*/|(\$[A-Za-z_]*\$).*?\1|\b(?:BEGIN|CASE|END)\b|;""",
                     re.IGNORECASE | re.DOTALL)


def split_statements(sql: str) -> list[str]:
    """The statements of a migration file, each without its `;`. A `;` ends a statement only
    outside quotes, comments, dollar-quoted bodies and BEGIN/CASE … END blocks (a SQLite
    trigger's body is BEGIN stmt; stmt; END). Comments are dropped."""
    parts: list[str] = []
    current: list[str] = []
    start = depth = 0
    for m in _LEXEME.finditer(sql):
        word = m.group(0).upper()
        if word.startswith(("--", "/*")):
            current.append(sql[start:m.start()])
            start = m.end()
        elif word in ("BEGIN", "CASE"):
            depth += 1
        elif word == "END":
            depth = max(depth - 1, 0)
        elif word == ";" and depth == 0:
            parts.append("".join(current) + sql[start:m.start()])
            current, start = [], m.end()
    parts.append("".join(current) + sql[start:])
    return [p.strip() for p in parts if p.strip()]


def applied_versions(conn: Connection) -> dict[int, str]:
    """{version: checksum} of the applied migrations; {} on a database without schema_migrations
    (only `prepare` creates it: a read, a status or a schema check never writes)."""
    if not sa.inspect(conn).has_table("schema_migrations"):
        return {}
    rows = conn.execute(sa.text(query("schema_migrations_applied"))).all()
    return {int(v): c for v, c in rows}


def prepare(engine: Engine) -> None:
    """Create what the migrations are recorded in: the SQLite file (and its directory) when it is
    not there, and schema_migrations. Only `upgrade` (`mempipe db upgrade`) calls this."""
    if create_database(engine):
        log.info("created the SQLite database %s", engine.url.database)
    with engine.begin() as conn:
        conn.execute(sa.text(query("schema_migrations_create")))


def pending_migrations(engine: Engine) -> list[Migration]:
    migrations = discover(engine.dialect.name)
    with engine.connect() as conn:
        done = applied_versions(conn)
    return [m for m in migrations if m.version not in done]


def upgrade(engine: Engine) -> list[Migration]:
    """Apply every pending migration, each in its own transaction. Returns what was applied.
    The one writer that may create the database (a SQLite file; see `prepare`)."""
    applied: list[Migration] = []
    migrations = discover(engine.dialect.name)  # before touching the database: none found is an error
    try:
        prepare(engine)
        with engine.connect() as conn:
            done = applied_versions(conn)
        for mig in migrations:
            if mig.version in done:
                if done[mig.version] != mig.checksum:
                    raise SchemaError(
                        f"migration {mig.path.name} changed after it was applied; "
                        "never edit an applied migration, add a new numbered file instead"
                    )
                continue
            with engine.begin() as conn:
                for statement in split_statements(mig.sql):
                    conn.execute(sa.text(statement))
                conn.execute(
                    sa.text(query("schema_migrations_record")),
                    {"version": mig.version, "name": mig.name, "checksum": mig.checksum,
                     "applied_at": dt.datetime.now(dt.timezone.utc).isoformat()},
                )
            applied.append(mig)
    except sa.exc.SQLAlchemyError as exc:
        missing = missing_server_database(engine.url, str(getattr(exc, "orig", None) or exc))
        if missing is not None:
            raise NoDatabaseError(missing) from None
        raise StoreError(f"applying migrations failed: {exc.__class__.__name__}: {exc.orig if hasattr(exc, 'orig') else exc}") from exc
    return applied


def require_current(engine: Engine) -> None:
    """Refuse to work on a database whose schema is behind the code, or that has none. Reads only:
    a database without schema_migrations is not given one here."""
    where = describe(engine.url)
    with engine.connect() as conn:
        inspector = sa.inspect(conn)
        if not inspector.has_table("schema_migrations"):
            others = inspector.get_table_names()
            if others:
                raise SchemaError(f"the database {where} has tables but none of mempipe's (no schema_migrations): "
                                  "check the database URL (--db / MEMPIPE_DATABASE_URL); to add mempipe's tables "
                                  "to it, run `mempipe db upgrade`")
            raise SchemaError(f"the database {where} is empty (no mempipe schema): run `mempipe db upgrade` "
                              "to create it")
        done = applied_versions(conn)
    pending = [m for m in discover(engine.dialect.name) if m.version not in done]
    if pending:
        names = ", ".join(m.path.name for m in pending)
        raise SchemaError(f"the schema of the database {where} is not up to date (pending: {names}); "
                          "run `mempipe db upgrade`")
