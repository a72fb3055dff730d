"""Many rows into (or, by key, out of) a table as one statement: on SQLite into the tables whose
triggers feed the search index, on PostgreSQL into any.

Why: FTS5 writes its pending terms out as a new index segment at every statement savepoint, and
SQLite opens one for each row an executemany() steps through when the table has triggers (the
statement may have to be undone). So a batch of n rows into daily_summaries, memory_facts or
historical_summaries, whose triggers feed memory_items_fts, wrote n one-row segments and merged
them again. Measured on a copy of a 147,079-message replay's database (SQLite 3.40, /dev/shm),
10,000 fact rows: executemany 119-182 µs a row, one INSERT … SELECT FROM json_each(?) 51-53 µs;
with the full-text trigger dropped executemany cost 83 µs, so nearly all of the difference was
those flushes. One statement flushes once.

The rows travel as one JSON array of arrays, each value already converted by its column's bind
processor (what executemany would have bound), and are read back with json_extract, so a
column receives the same value and type affinity either way. Whatever JSON cannot carry as such
(bytes, NaN, a value a processor refuses) falls back to executemany, which then binds or raises
exactly as before. Tables without those triggers keep executemany on SQLite: for
memory_context's long texts the JSON round trip cost more than it saved (0.13 s -> 0.40 s for
12,994 rows in the same replay).

On PostgreSQL a plain insert (no conflict keys) of several rows is one COPY … FROM STDIN (text)
on the caller's transaction, each value as its column's bind processor makes it (what
executemany would have sent), so the server parses and checks it as the insert would, and the
row triggers fire alike. executemany sends a statement per row: inserting daily summaries and
facts was about half of a cheap nightly's time on PostgreSQL (py-spy, slice of the large bench
corpus). 20,000 fact rows in batches of 200, search trigger on: 6.2-6.3 s with executemany,
2.8-2.9 s by COPY (client CPU 1.7-1.9 s -> 0.5-0.6 s). An upsert batch there is one INSERT …
SELECT FROM json_populate_recordset … ON CONFLICT (`_pg_upsert_rows`): 2 x 10,000 contexts in
batches of 300, 4.5-4.7 s row by row, 1.5-1.7 s so (client CPU 2.0 s -> 0.2 s).
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from ..db.tables import SEARCH_SOURCES
from ..db.types import LocalDate, UtcDateTime
from ..utc_text import utc_texts
from .base import JSON_TEXT

UTC = dt.timezone.utc

_STATEMENTS: dict[tuple, sa.TextClause] = {}
_quote = sqlite.dialect().identifier_preparer.quote
_pg_quote = postgresql.dialect().identifier_preparer.quote


def _from_json(n: int) -> str:
    """The n values of each row of the JSON array bound as :rows."""
    return ", ".join(f"json_extract(value, '$[{i}]')" for i in range(n))


def insert_rows(conn: Connection, table: sa.Table, rows: Sequence[dict], *,
                conflict_keys: tuple[str, ...] = (), fallback=None) -> None:
    """INSERT `rows` (dicts with the same keys). With `conflict_keys`, a row whose keys are
    stored already updates every other column (an upsert). `fallback` is the SQLAlchemy
    statement executemany runs otherwise (default: a plain insert of the table)."""
    if not rows:
        return
    if conn.dialect.name == "sqlite" and table.name in SEARCH_SOURCES and len(rows) > 1:
        payload = _json_rows(conn, table, rows)
        if payload is not None:
            conn.execute(_statement(table, tuple(rows[0]), conflict_keys), {"rows": payload})
            return
    if conn.dialect.name == "postgresql" and len(rows) > 1:
        if conflict_keys and _pg_upsert_rows(conn, table, rows, conflict_keys):
            return
        if not conflict_keys and fallback is None and _pg_copy_rows(conn, table, rows):
            return
    conn.execute(sa.insert(table) if fallback is None else fallback, list(rows))


_PG_UPSERTS: dict[tuple, str] = {}


def _uniform(table: sa.Table, rows: Sequence[dict]) -> tuple[str, ...] | None:
    """The rows' columns when every row has the same ones and no column left out has a
    Python-side default (which only SQLAlchemy's own insert fills in); else None."""
    columns = tuple(rows[0])
    if any(table.c[k].default is not None for k in table.c.keys() if k not in columns):
        return None
    if any(row.keys() != rows[0].keys() for row in rows):
        return None
    return columns


def _pg_upsert_rows(conn: Connection, table: sa.Table, rows: Sequence[dict], keys: tuple[str, ...]) -> bool:
    """PostgreSQL: the upsert of every row as one statement, the rows in one JSON text read back
    as the table's own row type (json_populate_recordset), so each value is parsed as its
    column's type. A key given twice keeps its last row, as the upsert row by row did. False
    (nothing sent) where JSON cannot carry the rows as the insert would bind them — shapes that
    differ, a value its column refuses, a float that is not finite, a type JSON has no form for:
    the caller's executemany then binds or raises as ever."""
    columns = _uniform(table, rows)
    if columns is None:
        return False
    dialect = conn.dialect
    convert = [None if isinstance(table.c[k].type, sa.JSON) else table.c[k].type.dialect_impl(dialect).bind_processor(dialect)
               for k in columns]
    floats = [k for k in columns if isinstance(table.c[k].type, sa.Float)]
    documents = [k for k, p in zip(columns, convert) if p is None and isinstance(table.c[k].type, sa.JSON)]
    last: dict[tuple, dict] = {}
    try:
        if any(row[k] is not None and not math.isfinite(row[k]) for row in rows for k in floats):
            return False  # JSON has no NaN: executemany binds it as ever
        if any(row[k] is None for row in rows for k in documents):
            return False  # a document None is JSON null row by row, SQL NULL from a recordset
        bound = zip(*(_bound_column(table.c[k].type, dialect, p, [row[k] for row in rows])
                      for k, p in zip(columns, convert)))
        for row, values in zip(rows, bound):
            last[tuple(row[k] for k in keys)] = dict(zip(columns, values))
        payload = JSON_TEXT.encode(list(last.values())).decode()
    except Exception:  # noqa: BLE001 — executemany binds them again and raises its own error
        return False
    shape = (table.name, columns, keys)
    if shape not in _PG_UPSERTS:
        names = ", ".join(map(_pg_quote, columns))
        updates = ", ".join(f"{_pg_quote(k)} = excluded.{_pg_quote(k)}" for k in columns if k not in keys)
        _PG_UPSERTS[shape] = (f"INSERT INTO {_pg_quote(table.name)} ({names}) SELECT {names} FROM "
                              f"json_populate_recordset(NULL::{_pg_quote(table.name)}, %(rows)s::json) "
                              f"ON CONFLICT ({', '.join(map(_pg_quote, keys))}) DO UPDATE SET {updates}")
    conn.exec_driver_sql(_PG_UPSERTS[shape], {"rows": payload})
    return True


def _pg_copy_rows(conn: Connection, table: sa.Table, rows: Sequence[dict]) -> bool:
    """COPY the rows into `table` (PostgreSQL, text format, on the caller's transaction); False
    (nothing sent) when their shapes differ, a column left out has a Python-side default or a
    value fails its column's bind processor: executemany then binds them as ever."""
    columns = _uniform(table, rows)
    if columns is None:
        return False
    dialect = conn.dialect
    processors = [table.c[k].type.dialect_impl(dialect).bind_processor(dialect) for k in columns]
    try:
        values = list(zip(*(_bound_column(table.c[k].type, dialect, p, [row[k] for row in rows])
                            for k, p in zip(columns, processors))))
    except Exception:  # noqa: BLE001 — a value its column refuses: executemany binds it again and raises as ever
        return False
    sql = f"COPY {_pg_quote(table.name)} ({', '.join(map(_pg_quote, columns))}) FROM STDIN"
    dbapi = dialect.loaded_dbapi
    try:
        with conn.connection.driver_connection.cursor() as cur, cur.copy(sql) as copy:
            for row in values:
                copy.write_row(row)
    except dbapi.Error as exc:  # a SQLAlchemy error like the insert's would be (-> StoreError)
        raise sa.exc.DBAPIError.instance(sql, None, exc, dbapi.Error, dialect=dialect) from exc
    return True


def delete_keyed(conn: Connection, table: sa.Table, keys: tuple[str, ...], values: Sequence[tuple]) -> bool:
    """DELETE the rows whose `keys` columns are among `values` as one statement, where that is
    what saves FTS5's flushes (SQLite, a source table, more than one key); False when the
    caller's own statements must do it. The row-value IN (SELECT … FROM json_each) searches the
    primary key for each key (EXPLAIN QUERY PLAN: SEARCH … USING COVERING INDEX)."""
    if not (conn.dialect.name == "sqlite" and table.name in SEARCH_SOURCES and len(values) > 1):
        return False
    payload = _json_values(conn, table, keys, values)
    if payload is None:
        return False
    shape = (table.name, keys, "delete")
    if shape not in _STATEMENTS:
        _STATEMENTS[shape] = sa.text(f"DELETE FROM {_quote(table.name)} WHERE ({', '.join(map(_quote, keys))}) "
                                     f"IN (SELECT {_from_json(len(keys))} FROM json_each(:rows))")
    conn.execute(_STATEMENTS[shape], {"rows": payload})
    return True


def _bound_column(column_type, dialect, processor, values: Sequence) -> Sequence:
    """One column's values as its type binds them, a column at a time: SQLite's UTC times and
    dates in bulk when every value is a plain UTC datetime or date (pipeline/utc_text.py
    utc_texts: the same text as UtcDateTime's, 0.06 µs a value against about 2 µs through
    SQLAlchemy's processor call); on PostgreSQL such values are bound as they are (the processors
    would return them unchanged). Anything else value by value as ever."""
    if processor is None:
        return values
    sqlite = dialect.name == "sqlite"
    if isinstance(column_type, UtcDateTime) and all(v is None or (type(v) is dt.datetime and v.tzinfo is UTC)
                                                    for v in values):
        return utc_texts(values) if sqlite else values
    if isinstance(column_type, LocalDate) and all(v is None or type(v) is dt.date for v in values):
        return [None if v is None else v.isoformat() for v in values] if sqlite else values
    return [processor(v) for v in values]


def _json_rows(conn: Connection, table: sa.Table, rows: Sequence[dict]) -> str | None:
    columns = _uniform(table, rows)
    if columns is None:
        return None  # rows of different shapes (executemany says what is missing), or a default to fill
    return _json_values(conn, table, columns, [[row[k] for k in columns] for row in rows])


def _json_values(conn: Connection, table: sa.Table, columns: tuple[str, ...], rows: Sequence[Sequence]) -> str | None:
    """`rows` (values in `columns` order) as bound, in one JSON text; None when JSON cannot carry them."""
    dialect = conn.dialect
    processors = [table.c[k].type.dialect_impl(dialect).bind_processor(dialect) for k in columns]
    floats = [i for i, k in enumerate(columns) if isinstance(table.c[k].type, sa.Float)]
    try:
        values = list(zip(*(_bound_column(table.c[k].type, dialect, p, column)
                             for k, p, column in zip(columns, processors, zip(*rows)))))
        if any(row[i] is not None and not math.isfinite(row[i]) for row in values for i in floats):
            return None  # JSON has no NaN (msgspec would write null): executemany binds it as ever
        # msgspec, not json.dumps: the same JSON for these values (text, numbers, null), in
        # two thirds of the time (300 summary-sized rows: 0.28 vs 0.42 ms); text, not bytes (SQLite
        # >= 3.45 would read a BLOB as JSONB)
        return JSON_TEXT.encode(values).decode()
    except Exception:  # noqa: BLE001 — the statements of old bind it again and raise their own error
        return None


def _statement(table: sa.Table, columns: tuple[str, ...], conflict_keys: tuple[str, ...]) -> sa.TextClause:
    shape = (table.name, columns, conflict_keys)
    if shape not in _STATEMENTS:
        sql = (f"INSERT INTO {_quote(table.name)} ({', '.join(map(_quote, columns))}) "
               f"SELECT {_from_json(len(columns))} FROM json_each(:rows) WHERE true")
        if conflict_keys:
            updates = ", ".join(f"{_quote(k)} = excluded.{_quote(k)}" for k in columns if k not in conflict_keys)
            sql += f" ON CONFLICT ({', '.join(map(_quote, conflict_keys))}) DO UPDATE SET {updates}"
        _STATEMENTS[shape] = sa.text(sql)
    return _STATEMENTS[shape]
