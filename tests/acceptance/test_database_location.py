"""Where the database is: the default `sqlite:///var/mempipe.db` is relative to the working
directory; only `mempipe db upgrade` creates a database; every other command and the read API
name the database they tried and say how to fix it, and leave no file behind."""

from __future__ import annotations

import os
import re
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from pipeline import read
from pipeline.cli import cli
from pipeline.db.engine import create_database, make_engine
from pipeline.errors import NoDatabaseError, SchemaError
from pipeline.read import get_context
from tests.conftest import SAMPLE

G, U = 1150000000000000001, 1160000000000000001
SCOPE = f"guild:{G}"

# Every command but `db upgrade`: readers, and writers that need the schema only it makes.
COMMANDS = [
    ("contexts",), ("context", "--scope", SCOPE, "--user", str(U)), ("status",), ("runs",),
    ("search", "--scope", SCOPE, "--user", str(U), "tram"), ("facts", "show", "--user", str(U)), ("db", "status"),
    ("profile", "--scope", SCOPE, "--user", str(U)), ("user", "show", "--user", str(U)),
    ("import", str(SAMPLE)), ("run",), ("replay", "--from", "2026-11-01", "--to", "2026-11-02"), ("retention",),
    ("messages", "delete", "1"), ("serve",),
]


@pytest.fixture
def mempipe(tmp_path, monkeypatch):
    """`mempipe ARGS…` in-process, with no --db: the configured database, from tmp_path."""
    for name in list(os.environ):
        if name.startswith("MEMPIPE_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    read.reset()  # the read API's settings and stores are per process
    yield lambda *args: runner.invoke(cli, list(args))
    read.reset()


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_no_command_but_db_upgrade_creates_the_default_database(mempipe, tmp_path, args):
    result = mempipe(*args)
    assert result.exit_code == 1, result.output
    assert result.output.count("Error: ") == 1
    expected = (f"Error: no mempipe database at {tmp_path}/var/mempipe.db (the default sqlite:///var/mempipe.db is "
                f"relative to the working directory {tmp_path}): pass --db or set MEMPIPE_DATABASE_URL to use another "
                f"one, or create this one with `mempipe db upgrade` (--db sqlite:///{tmp_path}/var/mempipe.db)")
    assert expected in result.output
    assert files_under(tmp_path) == []  # neither the file nor var/


def test_db_upgrade_creates_it_in_the_working_directory_and_the_others_then_work(mempipe, tmp_path):
    result = mempipe("db", "upgrade")
    assert result.exit_code == 0, result.output
    assert f"schema up to date on sqlite:///{tmp_path}/var/mempipe.db" in result.output
    assert (tmp_path / "var" / "mempipe.db").is_file()
    for args in [("runs",), ("db", "status"), ("contexts",), ("import", str(SAMPLE))]:
        assert mempipe(*args).exit_code == 0, args


def test_an_existing_database_without_the_schema_says_upgrade_and_is_not_written(mempipe, tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path}/empty.db")
    create_database(engine)
    try:
        for args in [("runs",), ("contexts",), ("status",)]:
            result = mempipe("--db", "sqlite:///empty.db", *args)
            assert result.exit_code == 1
            assert (f"Error: the database {tmp_path}/empty.db is empty (no mempipe schema): run `mempipe db upgrade`"
                    in result.output)
        status = mempipe("--db", "sqlite:///empty.db", "db", "status")
        assert status.exit_code == 0 and "PENDING  0001_initial" in status.output
        assert sa.inspect(engine).get_table_names() == []  # no schema_migrations either
    finally:
        engine.dispose()


def test_the_read_api_from_another_directory_names_the_file_it_tried(mempipe, tmp_path, monkeypatch):
    home, bot = tmp_path / "srv", tmp_path / "bot"
    home.mkdir()
    bot.mkdir()
    monkeypatch.chdir(home)
    assert mempipe("db", "upgrade").exit_code == 0
    monkeypatch.chdir(bot)
    read.reset()
    message = (f"no mempipe database at {bot}/var/mempipe.db (the default sqlite:///var/mempipe.db is relative to "
               f"the working directory {bot})")
    for _ in range(2):  # nothing kept from a failed open: the next read tries again, and fails the same way
        with pytest.raises(NoDatabaseError, match=re.escape(message)):
            get_context(SCOPE, U)
    assert files_under(bot) == []
    monkeypatch.chdir(home)
    read.reset()
    assert get_context(SCOPE, U) is None  # the database is there: no memory for them yet


def test_a_relative_path_in_a_config_file_follows_the_file(mempipe, tmp_path, monkeypatch):
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    config = deploy / "mempipe.toml"
    config.write_text('database_url = "sqlite:///data/mempipe.db"\n', encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert mempipe("--config", str(config), "db", "upgrade").exit_code == 0
    assert (deploy / "data" / "mempipe.db").is_file() and files_under(elsewhere) == []
    monkeypatch.chdir(tmp_path)
    result = mempipe("--config", "deploy/mempipe.toml", "db", "status")
    assert result.exit_code == 0 and f"database: sqlite:///{deploy}/data/mempipe.db" in result.output


def _absent(db_url: str, db_kind: str, tmp_path: Path) -> str:
    if db_kind == "sqlite":
        return f"sqlite:///{tmp_path}/absent/mempipe.db"
    url = sa.engine.make_url(db_url)  # a password the server (trust auth) never asks for: never shown
    return url.set(database=f"{url.database}_absent", password="s3cret").render_as_string(hide_password=False)


def _exists(url: str, db_kind: str, admin_url: str) -> bool:
    if db_kind == "sqlite":
        return Path(sa.engine.make_url(url).database).parent.exists()
    conninfo = sa.engine.make_url(admin_url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo, autocommit=True) as admin:
        name = sa.engine.make_url(url).database
        return admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None


def test_a_database_that_is_not_there_is_named_and_a_read_does_not_create_it(db_url, db_kind, tmp_path, settings):
    absent = _absent(db_url, db_kind, tmp_path)
    name = (f'no PostgreSQL database "{sa.engine.make_url(absent).database}"' if db_kind == "postgresql"
            else f"no mempipe database at {tmp_path}/absent/mempipe.db")
    read.reset()
    try:
        with pytest.raises(NoDatabaseError, match=re.escape(name)) as err:
            get_context(SCOPE, U, database_url=absent)
        assert "s3cret" not in str(err.value)
        if db_kind == "postgresql":
            assert "createdb" in str(err.value)
    finally:
        read.reset()
    for args in [("contexts",), ("db", "status")]:
        result = CliRunner().invoke(cli, ["--db", absent, *args])
        assert result.exit_code == 1 and name in result.output and "s3cret" not in result.output
    assert not _exists(absent, db_kind, db_url)


def test_an_empty_database_is_refused_by_the_read_api_without_writing(db_url, db_kind, settings):
    engine = make_engine(db_url)
    create_database(engine)
    read.reset()
    try:
        with pytest.raises(SchemaError, match=r"is empty \(no mempipe schema\): run `mempipe db upgrade`"):
            get_context(SCOPE, U, database_url=db_url)
        assert sa.inspect(engine).get_table_names() == []
    finally:
        read.reset()
        engine.dispose()
