"""The migrations in sql/ and the Core table descriptions in pipeline/db/tables.py agree, on
every database; migrations are idempotent and recorded; file names follow the rule."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa

from pipeline.db.engine import create_database, make_engine
from pipeline.db.location import describe
from pipeline.db.migrations import (MIGRATIONS_DIR, discover, pending_migrations, prepare, require_current,
                                    split_statements)
from pipeline.db.queries import query
from pipeline.db.tables import SEARCH_INDEX, is_search_index, metadata
from pipeline.errors import SchemaError
from pipeline.store import Store


def test_migrations_match_table_descriptions(store):
    inspector = sa.inspect(store.engine)
    tables = set(inspector.get_table_names())
    # the full-text engine's own tables (SQLite FTS5 and its shadow tables) are not described
    assert set(metadata.tables) | {"schema_migrations"} == {t for t in tables if t == SEARCH_INDEX or not is_search_index(t)}
    for table in metadata.sorted_tables:
        # a column the database computes (PostgreSQL's memory_items.terms) is written by no code
        reflected = {c["name"]: c for c in inspector.get_columns(table.name) if "computed" not in c}
        assert list(reflected) == [c.name for c in table.columns], table.name
        for column in table.columns:
            if column.primary_key:
                continue  # SQLite reports INTEGER PRIMARY KEY as nullable; the PK check covers it
            assert reflected[column.name]["nullable"] == column.nullable, (table.name, column.name)
        pk = inspector.get_pk_constraint(table.name)["constrained_columns"]
        assert pk == [c.name for c in table.primary_key.columns], table.name


def test_ids_are_bigint_on_postgresql(store):
    if store.dialect != "postgresql":
        pytest.skip("type check for PostgreSQL only")
    inspector = sa.inspect(store.engine)
    for table in ("chat_history", "members", "daily_summaries", "memory_context"):
        for col in inspector.get_columns(table):
            if col["name"].endswith("_id") or col["name"] in ("reply_to", "guild_key"):
                assert isinstance(col["type"], sa.BigInteger), (table, col["name"], col["type"])


def test_upgrade_is_idempotent_and_recorded(store):
    assert store.upgrade() == []
    assert pending_migrations(store.engine) == []
    with store.engine.connect() as conn:
        versions = conn.execute(sa.text("SELECT version FROM schema_migrations ORDER BY version")).scalars().all()
    assert versions == [m.version for m in discover(store.dialect)]


def test_a_database_without_the_schema_is_refused_with_advice_and_not_written(db_url):
    engine = make_engine(db_url)
    create_database(engine)  # an empty SQLite file; the PostgreSQL fixture made an empty database
    where = describe(engine.url)
    try:
        with pytest.raises(SchemaError, match="is empty .*run `mempipe db upgrade`") as err:
            Store.open(db_url)
        assert where in str(err.value)
        assert sa.inspect(engine).get_table_names() == []  # the check made no schema_migrations
        assert pending_migrations(engine) == discover(engine.dialect.name)  # nor does asking what is pending
        with pytest.raises(SchemaError, match="is empty"):
            require_current(engine)
        assert sa.inspect(engine).get_table_names() == []

        first = discover(engine.dialect.name)[0]
        prepare(engine)
        with engine.begin() as conn:  # an old schema: only the first migration applied
            for statement in split_statements(first.sql):
                conn.execute(sa.text(statement))
            conn.execute(sa.text(query("schema_migrations_record")),
                         {"version": first.version, "name": first.name, "checksum": first.checksum, "applied_at": "then"})
        with pytest.raises(SchemaError, match="not up to date .*run `mempipe db upgrade`") as err:
            Store.open(db_url)
        assert where in str(err.value)
    finally:
        engine.dispose()


def test_migration_file_names():
    names = sorted(p.name for p in MIGRATIONS_DIR.glob("*.sql"))
    assert names
    for name in names:
        assert re.fullmatch(r"\d{4}_[a-z0-9_]+(\.(sqlite|postgresql))?\.sql", name), name
    for dialect in ("sqlite", "postgresql"):
        versions = [m.version for m in discover(dialect)]
        assert versions == list(range(1, len(versions) + 1)), f"{dialect}: gaps in {versions}"


def test_split_statements_ignores_comments():
    sql = "-- a comment; with a semicolon\nCREATE TABLE a (x INT);  -- trailing\nCREATE TABLE b (y INT);\n"
    assert split_statements(sql) == ["CREATE TABLE a (x INT)", "CREATE TABLE b (y INT)"]
