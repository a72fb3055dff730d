"""Shared fixtures. Database-touching tests take `store` and run once per database:
SQLite always; PostgreSQL when reachable (MEMPIPE_TEST_PG_URL, default the local server), in a
throwaway database created and dropped per test. Unreachable PostgreSQL skips with the reason,
except under CI=true, where it fails: CI must run both halves.
Choose with `pytest --databases sqlite` (or postgresql)."""

from __future__ import annotations

import datetime as dt
import os
import uuid
from pathlib import Path

import pytest

from pipeline.config import load_settings
from pipeline.store import Store

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "community.jsonl"
PG_ADMIN_URL = os.environ.get("MEMPIPE_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
UTC = dt.timezone.utc


def pytest_addoption(parser):
    parser.addoption("--databases", default="sqlite,postgresql",
                     help="comma-separated databases to run storage tests on (sqlite,postgresql)")


def pytest_generate_tests(metafunc):
    if "db_kind" in metafunc.fixturenames:
        kinds = [k.strip() for k in metafunc.config.getoption("--databases").split(",") if k.strip()]
        metafunc.parametrize("db_kind", kinds)


def _pg_unavailable(reason: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL is required under CI=true but {reason}")
    pytest.skip(f"PostgreSQL not reachable ({reason}); set MEMPIPE_TEST_PG_URL")


@pytest.fixture
def db_url(db_kind, tmp_path):
    if db_kind == "sqlite":
        yield f"sqlite:///{tmp_path}/mempipe.db"
        return
    import psycopg
    import sqlalchemy as sa

    admin = sa.engine.make_url(PG_ADMIN_URL)
    conninfo = admin.set(drivername="postgresql").render_as_string(hide_password=False)
    try:
        admin_conn = psycopg.connect(conninfo, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        _pg_unavailable(str(exc).strip())
    name = f"mempipe_test_{uuid.uuid4().hex[:12]}"
    with admin_conn:
        admin_conn.execute(f'CREATE DATABASE "{name}"')
        try:
            yield admin.set(database=name).render_as_string(hide_password=False)
        finally:
            admin_conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def store(db_url):
    s = Store.open(db_url, check_schema=False)
    s.upgrade()
    yield s
    s.close()


@pytest.fixture
def sqlite_store(tmp_path):
    s = Store.open(f"sqlite:///{tmp_path}/t.db", check_schema=False)
    s.upgrade()
    yield s
    s.close()


@pytest.fixture
def settings(monkeypatch):
    """Default settings, unaffected by the developer's own MEMPIPE_* environment."""
    for name in list(os.environ):
        if name.startswith("MEMPIPE_"):
            monkeypatch.delenv(name)
    return load_settings()
