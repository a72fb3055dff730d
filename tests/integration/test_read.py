"""pipeline.read.get_context without a Store passed in: the configured database, settings loaded
once per process, one Store per database URL, an outage raised (never None), reset() for tests."""

from __future__ import annotations

import datetime as dt

import pytest

from pipeline import read
from pipeline.errors import ScopeError, StoreError
from pipeline.read import get_context

UTC = dt.timezone.utc
SCOPE, ANA = "guild:1150000000000000001", 1160000000000000001


@pytest.fixture
def fresh_read():
    read.reset()
    yield read
    read.reset()


@pytest.fixture
def configured(store, settings, monkeypatch, fresh_read):
    """A database with one context, named by MEMPIPE_DATABASE_URL (as a bot process finds it)."""
    store.write_batch(contexts=[{
        "scope": SCOPE, "user_id": ANA, "context": "Ana: “moving to Lisbon”", "as_of_day": dt.date(2026, 11, 4),
        "made_at": dt.datetime(2026, 11, 4, 12, tzinfo=UTC), "input_hash": "h", "inputs": {}, "degraded": False}])
    monkeypatch.setenv("MEMPIPE_DATABASE_URL", store.engine.url.render_as_string(hide_password=False))
    return store


def test_settings_are_loaded_once_and_the_store_kept_until_reset(configured, monkeypatch):
    loads = []
    real = read.load_settings
    monkeypatch.setattr(read, "load_settings", lambda: loads.append(1) or real())

    first = get_context(SCOPE, ANA)
    assert first.text == "Ana: “moving to Lisbon”" and first.as_of_day == dt.date(2026, 11, 4)
    assert get_context(SCOPE, 42) is None  # no memory there: None
    kept = read._stores[read._settings.database_url]
    assert get_context(SCOPE, ANA) == first
    assert len(loads) == 1 and list(read._stores.values()) == [kept]

    read.reset()
    assert read._stores == {}
    assert get_context(SCOPE, ANA) == first
    assert len(loads) == 2 and read._stores[read._settings.database_url] is not kept


def test_an_explicit_url_gets_its_own_store_once(configured):
    url = configured.engine.url.render_as_string(hide_password=False)
    assert get_context(SCOPE, ANA, database_url=url).text.startswith("Ana:")
    store = read._stores[url]
    assert get_context(SCOPE, ANA, database_url=url) is not None and read._stores[url] is store


def test_an_unreachable_database_raises_and_is_not_kept(tmp_path, settings, fresh_read):
    url = f"sqlite:///{tmp_path}/no-such-directory/mempipe.db"
    for _ in range(2):  # the second call tries again rather than reusing a broken Store
        with pytest.raises(StoreError):
            get_context(SCOPE, ANA, database_url=url)
    assert url not in read._stores


@pytest.mark.parametrize("scope", ["guild:", "guild:12a", "server:1", "dm:１２", "guild:1:2", ""])
def test_a_malformed_scope_raises_every_time(scope, fresh_read):
    for _ in range(2):  # a bad scope is never remembered as checked
        with pytest.raises(ScopeError, match="bad scope"):
            get_context(scope, ANA, store=object())
