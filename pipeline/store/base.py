"""The storage layer's foundation: the engine, transactions, one error boundary, one chunked-IN
helper, and the inspection reads tests and `mempipe db status` use.

Only pipeline/store/ runs SQL. Every driver error becomes a StoreError that names the operation
and the database, so an outage raises instead of reading as "no data". Its text is the driver's
own message: never the SQL's bound parameters, which hold other people's names and words.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ..db import make_engine
from ..db.engine import JSON_ENCODER
from ..db.location import missing_server_database
from ..db.migrations import require_current, upgrade
from ..db.queries import query
from ..db.tables import DERIVED_TABLES
from ..errors import NoDatabaseError, StoreError

CHUNK = 500  # ids per IN (...) list: well under SQLite's and psycopg's parameter limits
T = TypeVar("T")


JSON_TEXT = JSON_ENCODER  # rows sent to the database as one JSON text


def insert_for(conn: Connection):
    """The dialect's insert() (it has on_conflict_do_update)."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert


def chunks(values: Iterable[T], size: int = CHUNK) -> Iterator[list[T]]:
    """Sorted, de-duplicated values in lists of at most `size` (for IN lists)."""
    ordered = sorted(set(values))
    for i in range(0, len(ordered), size):
        yield ordered[i:i + size]


def select_in(conn: Connection, make: Callable[[list], sa.Select], values: Iterable) -> Iterator[sa.Row]:
    """Rows of `make(chunk)` for every chunk of `values`: one helper for every bulk read by ids."""
    for chunk in chunks(values):
        yield from conn.execute(make(chunk))


def as_dicts(result: sa.CursorResult) -> list[dict]:
    """A result's rows as dicts, its keys read once: `dict(row._mapping)` per row cost twice as
    much (that conversion was ~14% of py-spy's samples of an unchanged 1M-message replay; the small
    corpus's unchanged replay under cProfile went from 4.7 to 3.5 s with this)."""
    keys = tuple(result.keys())
    return [dict(zip(keys, row)) for row in result]


def driver_message(exc: BaseException) -> str:
    """A database error as the driver words it, without the SQL and its bound parameters
    (SQLAlchemy's text has both) and, from PostgreSQL, without the DETAIL line (it can quote the
    failing row)."""
    inner = getattr(exc, "orig", None) or exc
    primary = getattr(getattr(inner, "diag", None), "message_primary", None)
    if primary:
        return primary
    if isinstance(inner, sa.exc.StatementError):  # no driver error under it: its own words only
        return str(inner.args[0]) if inner.args else type(inner).__name__
    return str(inner)


def hashable(value: Any) -> Any:
    """A value as dump() renders it (JSON documents as canonical text)."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


class StoreBase:
    def __init__(self, engine: Engine):
        self.engine = engine

    @classmethod
    def open(cls, url: str, *, check_schema: bool = True, pool_size: int | None = None,
             max_overflow: int | None = None):
        """pool_size / max_overflow (PostgreSQL only; None: make_engine's defaults) usually come
        from settings.pool_size / settings.pool_max_overflow. Never creates a database: a SQLite
        file that is not there, or a PostgreSQL database that does not exist, raises
        NoDatabaseError (with check_schema, here; without, at the first statement). Only
        `upgrade()` creates a SQLite file. check_schema: a database without mempipe's current
        schema raises SchemaError."""
        pool = {k: v for k, v in (("pool_size", pool_size), ("max_overflow", max_overflow)) if v is not None}
        store = cls(make_engine(url, **pool))
        if check_schema:
            try:
                require_current(store.engine)
            except BaseException as exc:
                store.close()
                if not isinstance(exc, sa.exc.SQLAlchemyError):
                    raise
                raise store.error("opening the database", exc) from None
        return store

    @property
    def safe_url(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def upgrade(self):
        return upgrade(self.engine)

    def close(self) -> None:
        self.engine.dispose()

    # ------------------------------------------------------------------ the error boundary

    def error(self, op: str, exc: BaseException) -> StoreError:
        message = driver_message(exc)
        missing = missing_server_database(self.engine.url, message)
        if missing is not None:  # not an outage: the URL names a database that was never made
            return NoDatabaseError(missing)
        return StoreError(f"database error while {op}: {message} (database: {self.safe_url})")

    @contextlib.contextmanager
    def _guarded(self, op: str, open_connection) -> Iterator[Connection]:
        try:
            with open_connection() as conn:
                yield conn
        except sa.exc.SQLAlchemyError as exc:
            # not chained: the CLI prints causes and -v tracebacks, and the driver's exception
            # holds the statement, its parameters and the failing row
            raise self.error(op, exc) from None

    def reading(self, op: str):
        """A connection for reads; any driver error becomes a StoreError naming `op`."""
        return self._guarded(op, self._read_connection)

    def _read_connection(self) -> Connection:
        """PostgreSQL: in autocommit. At READ COMMITTED (the default, never changed here) each
        statement sees its own snapshot inside a transaction too, so a read gains nothing from
        one, and without it saves the BEGIN and ROLLBACK round trips: a one-row read took
        0.55-0.61 ms, 0.35-0.38 ms in autocommit (pooled, pre-pinged, localhost)."""
        conn = self.engine.connect()
        if self.engine.dialect.name == "postgresql":
            try:
                conn.execution_options(isolation_level="AUTOCOMMIT")
            except BaseException:
                conn.close()
                raise
        return conn

    def writing(self, op: str):
        """One transaction: committed when the block ends, rolled back on any error."""
        return self._guarded(op, self.engine.begin)

    def transaction(self):
        """A transaction for callers that write through several role methods (an import)."""
        return self.writing("writing")

    @contextlib.contextmanager
    def writing_in(self, op: str, conn: Connection | None) -> Iterator[Connection]:
        """The caller's transaction when given (`transaction()`: a control or an import writing
        through several role methods, its own error boundary), else one of this op's own."""
        if conn is not None:
            yield conn
        else:
            with self.writing(op) as own:
                yield own

    def rows(self, op: str, stmt) -> list[dict]:
        with self.reading(op) as conn:
            return as_dicts(conn.execute(stmt))

    def rows_of_users(self, op: str, q: sa.Select, user_id: sa.ColumnElement, user_ids: Iterable[int] | None,
                      order: tuple[str, ...]) -> list[dict]:
        """`q`'s rows: every one (user_ids None), or those of these users, read a chunk of ids at
        a time and put back in `order` (the query's own) across the chunks."""
        if user_ids is None:
            return self.rows(op, q)
        rows = self.rows_in(op, lambda ids: q.where(user_id.in_(ids)), user_ids)
        return sorted(rows, key=lambda r: tuple(r[k] for k in order))

    def rows_in(self, op: str, make: Callable[[list], sa.Select], values: Iterable) -> list[dict]:
        with self.reading(op) as conn:
            out: list[dict] = []
            for chunk in chunks(values):
                out += as_dicts(conn.execute(make(chunk)))
            return out

    # ------------------------------------------------------------------ inspection

    def dump(self, table_name: str) -> list[tuple]:
        """Every row of a derived table in key order: tests compare these byte for byte."""
        table = {t.name: t for t in DERIVED_TABLES}[table_name]
        with self.reading("dumping a table") as conn:
            q = sa.select(table).order_by(*table.primary_key.columns)
            return [tuple(hashable(v) for v in r) for r in conn.execute(q)]

    def table_counts(self) -> dict[str, int]:
        with self.reading("counting rows") as conn:
            return {t: n for t, n in conn.execute(sa.text(query("table_counts")))}


Rows = Sequence[dict[str, Any]]
