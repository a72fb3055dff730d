"""Shipped data files are found through pipeline.resources, and an install without them fails
loudly instead of reporting an empty database as up to date."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from pipeline import config, resources
from pipeline.cli import cli
from pipeline.db import migrations
from pipeline.db.engine import make_engine
from pipeline.errors import ConfigError, SchemaError
from tests.conftest import ROOT


def test_resources_are_the_repository_directories_in_a_checkout():
    # The editable install maps the packages onto the top-level directories; nothing is copied.
    assert resources.sql_dir() == ROOT / "sql"
    assert resources.prompts_dir() == ROOT / "prompts"
    assert resources.config_dir() == ROOT / "config"
    assert (resources.sql_dir() / "queries.sql").is_file()
    assert migrations.MIGRATIONS_DIR == ROOT / "sql" / "migrations"


def test_a_missing_data_package_points_where_it_belongs():
    missing = resources.directory("pipeline.no_such_data")
    assert missing == ROOT / "pipeline" / "no_such_data" and not missing.exists()


def test_discover_without_migrations_says_where_it_looked(tmp_path):
    with pytest.raises(SchemaError, match="installation is incomplete") as err:
        migrations.discover("sqlite", tmp_path)
    assert str(tmp_path) in str(err.value)
    with pytest.raises(SchemaError, match="incomplete"):
        migrations.discover("postgresql", tmp_path / "absent")


def test_two_migrations_numbered_alike_are_refused_not_one_skipped(tmp_path):
    (tmp_path / "0001_first.sql").write_text("CREATE TABLE a (x INTEGER);\n")
    (tmp_path / "0002_second.sqlite.sql").write_text("CREATE TABLE b (x INTEGER);\n")
    (tmp_path / "0002_other.sql").write_text("CREATE TABLE c (x INTEGER);\n")
    with pytest.raises(SchemaError, match="0002_other.sql.*0002_second.sqlite.sql|0002_second.sqlite.sql.*0002_other.sql"):
        migrations.discover("sqlite", tmp_path)
    (tmp_path / "0002_other.sql").rename(tmp_path / "0002_second.sql")  # a shared file of the same name: overridden
    assert [m.path.name for m in migrations.discover("sqlite", tmp_path)] == ["0001_first.sql", "0002_second.sqlite.sql"]
    assert [m.path.name for m in migrations.discover("postgresql", tmp_path)] == ["0001_first.sql", "0002_second.sql"]


def test_upgrade_without_migrations_fails_before_touching_the_database(tmp_path, monkeypatch):
    monkeypatch.setattr(migrations, "MIGRATIONS_DIR", tmp_path / "migrations")
    engine = make_engine(f"sqlite:///{tmp_path}/m.db")
    try:
        with pytest.raises(SchemaError, match="no sqlite migrations found"):
            migrations.upgrade(engine)
        with pytest.raises(SchemaError, match="no sqlite migrations found"):
            migrations.pending_migrations(engine)
        assert not (tmp_path / "m.db").exists()  # not even an empty file
    finally:
        engine.dispose()


def test_db_upgrade_without_migrations_exits_1_and_never_reports_success(tmp_path, monkeypatch):
    monkeypatch.setattr(migrations, "MIGRATIONS_DIR", tmp_path / "migrations")
    monkeypatch.delenv("MEMPIPE_CONFIG", raising=False)
    result = CliRunner().invoke(cli, ["--db", f"sqlite:///{tmp_path}/m.db", "db", "upgrade"])
    assert result.exit_code == 1, result.output
    assert "installation is incomplete" in result.output
    assert str(tmp_path / "migrations") in result.output
    assert "up to date" not in result.output and "applied" not in result.output


def test_a_missing_default_config_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "DEFAULT_CONFIG", tmp_path / "default.toml")
    with pytest.raises(ConfigError, match="installation is incomplete"):
        config.load_settings()
