"""sql/schema.<dialect>.sql is what the migrations build: on every database, a schema loaded from
the file equals one made by running every migration in order, compared as a normalised
reflection (tables, columns in order, types, nullability, defaults, keys, indexes, constraints,
sequences). A stale file fails here; `make schema` regenerates it."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa

from pipeline.db.migrations import discover, upgrade
from pipeline.db.schema import BOOKKEEPING, _join, _tokens, load, render, schema_file, scratch_engine, split_definition

ADVICE = "sql/schema.{}.sql does not match sql/migrations: run `make schema`"

# Ways a file goes stale, each applied to the committed text: a later migration's tables
# missing, then one column's default, nullability and type, an index, a CHECK.
STALE = {
    "tables of a later migration": lambda t: t.split("\n\nCREATE TABLE scheduler_state")[0] + "\n",
    "default": lambda t: re.sub(r"(\n    retries .*DEFAULT )0", r"\g<1>1", t),
    "nullability": lambda t: re.sub(r"(\n    holder \w+) NOT NULL", r"\1", t),
    "type": lambda t: re.sub(r"(\n    pid )\w+", r"\1BIGINT", t),
    "index": lambda t: re.sub(r"\nCREATE INDEX chat_history_ts .*;", "", t),
    "check": lambda t: t.replace("'failed'", "'broken'"),
    "trigger": lambda t: t.replace("WHERE new.status = 'active'", "WHERE new.status = 'superseded'", 1)
                          if "WHERE new.status = 'active'" in t
                          else t.replace("NEW.status = 'active'", "NEW.status = 'superseded'", 1),
}


def _rows(conn, sql: str) -> list[tuple]:
    return [tuple(r) for r in conn.execute(sa.text(sql))]


def _reflect_sqlite(conn) -> dict:
    out = {}
    for kind, name, sql in _rows(conn, "SELECT type, name, sql FROM sqlite_master ORDER BY type, name"):
        if kind == "trigger":
            out[(kind, name)] = _join(list(_tokens(sql)))  # what it does, comments and layout aside
            continue
        if kind != "table":
            out[(kind, name)] = None  # indexes are compared with their table, below
            continue
        indexes = {}
        for _, index, unique, origin, partial in _rows(conn, f'PRAGMA index_list("{name}")'):
            indexes[index] = (unique, origin, partial, _rows(conn, f'PRAGMA index_xinfo("{index}")'))
        out[(kind, name)] = {
            "columns": _rows(conn, f'PRAGMA table_xinfo("{name}")'),  # name, type, notnull, default, pk
            "indexes": indexes,
            "foreign_keys": _rows(conn, f'PRAGMA foreign_key_list("{name}")'),
            "definition": split_definition(sql)[1:] if sql else None,  # CHECKs live only here
        }
    return out


def _reflect_postgresql(conn) -> dict:
    schema = conn.execute(sa.text("SELECT current_schema()")).scalar_one()
    unqualified = f" ON {schema}."
    return {
        "relations": _rows(conn, "SELECT relname, relkind FROM pg_class "
                                 "WHERE relnamespace = current_schema()::regnamespace ORDER BY relname"),
        "columns": _rows(conn, """
            SELECT table_name, column_name, data_type, udt_name, is_nullable, column_default,
                   character_maximum_length, numeric_precision, numeric_scale, datetime_precision,
                   is_identity, is_generated
            FROM information_schema.columns WHERE table_schema = current_schema()
            ORDER BY table_name, ordinal_position"""),
        "constraints": _rows(conn, """
            SELECT conrelid::regclass::text, conname, contype, pg_get_constraintdef(oid) FROM pg_constraint
            WHERE connamespace = current_schema()::regnamespace AND contype <> 'n' ORDER BY 1, 2"""),
        "indexes": [(t, i, d.replace(unqualified, " ON ")) for t, i, d in _rows(conn, """
            SELECT tablename, indexname, indexdef FROM pg_indexes
            WHERE schemaname = current_schema() ORDER BY 1, 2""")],
        "functions": [(n, " ".join(d.replace(f"{schema}.", "").split())) for n, d in _rows(conn, """
            SELECT proname, pg_get_functiondef(oid) FROM pg_proc
            WHERE pronamespace = current_schema()::regnamespace ORDER BY 1""")],
        "triggers": [(n, d.replace(f"{schema}.", "")) for n, d in _rows(conn, """
            SELECT t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
            WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal ORDER BY 1""")],
        "generated": _rows(conn, """
            SELECT table_name, column_name, generation_expression FROM information_schema.columns
            WHERE table_schema = current_schema() AND is_generated = 'ALWAYS' ORDER BY 1, 2"""),
        "sequences": _rows(conn, """
            SELECT sequence_name, data_type, start_value, minimum_value, maximum_value, increment, cycle_option
            FROM information_schema.sequences WHERE sequence_schema = current_schema() ORDER BY 1"""),
    }


def reflect(engine) -> dict:
    with engine.connect() as conn:
        return (_reflect_sqlite if engine.dialect.name == "sqlite" else _reflect_postgresql)(conn)


def _migrated(engine) -> dict:
    upgrade(engine)
    with engine.begin() as conn:  # the runner's bookkeeping is not part of the schema file
        conn.execute(sa.text(f"DROP TABLE {BOOKKEEPING}"))
    return reflect(engine)


def test_schema_file_builds_what_the_migrations_build(db_kind, db_url):
    # db_url: on PostgreSQL the throwaway database the scratch schemas go in; unused on SQLite.
    path = schema_file(db_kind)
    assert path.is_file(), ADVICE.format(db_kind)
    with scratch_engine(db_kind, db_url) as migrated, scratch_engine(db_kind, db_url) as from_file:
        expected = _migrated(migrated)
        load(from_file, path.read_text(encoding="utf-8"))
        assert reflect(from_file) == expected, ADVICE.format(db_kind)


def test_a_stale_schema_file_is_noticed(db_kind, db_url):
    text = schema_file(db_kind).read_text(encoding="utf-8")
    with scratch_engine(db_kind, db_url) as migrated:
        expected = _migrated(migrated)
    for what, make_stale in STALE.items():
        stale = make_stale(text)
        assert stale != text, f"the {what!r} edit no longer applies to the file: update STALE"
        with scratch_engine(db_kind, db_url) as engine:
            load(engine, stale)
            assert reflect(engine) != expected, f"a file with a changed {what} went unnoticed"


def test_sqlite_schema_file_is_exactly_what_make_schema_writes():
    # The text check runs on SQLite only: PostgreSQL's catalog renders expressions slightly
    # differently across server versions; the reflection test above covers its meaning.
    with scratch_engine("sqlite") as engine:
        upgrade(engine)
        assert render(engine) == schema_file("sqlite").read_text(encoding="utf-8"), ADVICE.format("sqlite")


def test_schema_files_are_not_migrations():
    for dialect in ("sqlite", "postgresql"):
        assert schema_file(dialect).parent != discover(dialect)[0].path.parent


def test_split_definition_keeps_quoted_text_and_drops_comments():
    sql = ("CREATE TABLE t (\n  a  INTEGER PRIMARY KEY, -- a note, with a comma\n"
           "  b TEXT CHECK (b IN ('x, y', 'it''s')) /* why */\n, c TEXT DEFAULT '--'\n) STRICT")
    assert split_definition(sql) == (
        "CREATE TABLE t", ["a INTEGER PRIMARY KEY", "b TEXT CHECK (b IN ('x, y', 'it''s'))", "c TEXT DEFAULT '--'"],
        " STRICT")
