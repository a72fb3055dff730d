"""The bot read's own connection (pipeline/store/read.py): one per thread, one round trip and a
server-prepared statement on PostgreSQL, a dead kept connection replaced once (an outage still
raises), and a reader that never creates a database."""

from __future__ import annotations

import datetime as dt
import re
import tempfile
import threading
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa

from pipeline import read
from pipeline.errors import NoDatabaseError, StoreError
from pipeline.read import Context, get_context

UTC = dt.timezone.utc
SCOPE = "guild:1150000000000000001"
USERS = [1160000000000000001 + i for i in range(40)]


@pytest.fixture
def contexts(store):
    store.write_batch(contexts=[{
        "scope": SCOPE, "user_id": u, "context": f"memory of {u}", "as_of_day": dt.date(2026, 11, 4),
        "made_at": dt.datetime(2026, 11, 4, 12, tzinfo=UTC), "input_hash": "h", "inputs": {}, "degraded": u % 2 == 0}
        for u in USERS])
    return store


def _reader(store):
    return store._read_local.connection


def test_a_read_returns_the_row_as_a_context(contexts):
    ctx = get_context(SCOPE, USERS[0], store=contexts)
    assert type(ctx) is Context
    assert ctx == Context(SCOPE, USERS[0], f"memory of {USERS[0]}", dt.date(2026, 11, 4),
                          dt.datetime(2026, 11, 4, 12, tzinfo=UTC), False, ())
    assert get_context(SCOPE, USERS[1], store=contexts).degraded is True
    assert get_context(SCOPE, 42, store=contexts) is None


def test_threads_each_read_their_own_rows_on_their_own_connection(contexts):
    seen, errors, connections = {}, [], []
    start, done = threading.Barrier(8), threading.Barrier(8)

    def reader(k):
        try:
            start.wait()
            for _ in range(25):
                for u in USERS[k::8]:
                    ctx = get_context(SCOPE, u, store=contexts)
                    assert ctx.user_id == u and ctx.text == f"memory of {u}"
                    seen[u] = ctx
            connections.append(_reader(contexts))
            done.wait()  # every thread still holds its connection
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and sorted(seen) == USERS
    assert len({id(c) for c in connections}) == 8


def test_postgresql_reads_in_one_round_trip_on_a_prepared_statement(contexts, db_kind, tmp_path):
    if db_kind != "postgresql":
        pytest.skip("PostgreSQL's protocol")
    get_context(SCOPE, USERS[0], store=contexts)
    conn = _reader(contexts)
    trace = tmp_path / "trace"
    with open(trace, "w") as out:
        conn.pgconn.trace(out.fileno())
        conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS | psycopg.pq.Trace.REGRESS_MODE)
        assert get_context(SCOPE, USERS[2], store=contexts).text == f"memory of {USERS[2]}"
        conn.pgconn.untrace()
    sent = [line.split("\t")[2].split()[0] for line in trace.read_text().splitlines() if line.startswith("F\t")]
    assert sent == ["Bind", "Describe", "Execute", "Sync"]  # no Parse, no BEGIN/COMMIT, no ping
    prepared = conn.execute("SELECT statement FROM pg_prepared_statements").fetchall()
    assert [p for (p,) in prepared if "memory_context" in p] != []


def _admin_conninfo(url):
    return sa.engine.make_url(url).set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)


def _kill_reader(store, db_kind, url):
    if db_kind == "sqlite":
        _reader(store).close()
        return
    pid = _reader(store).info.backend_pid
    with psycopg.connect(_admin_conninfo(url), autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_a_dead_kept_connection_is_replaced_once(contexts, db_kind, db_url):
    assert get_context(SCOPE, USERS[0], store=contexts) is not None
    _kill_reader(contexts, db_kind, db_url)
    assert get_context(SCOPE, USERS[0], store=contexts).text == f"memory of {USERS[0]}"


def test_an_outage_after_a_dead_connection_still_raises(contexts, db_kind, db_url):
    if db_kind != "postgresql":
        pytest.skip("needs a server that refuses connections")
    assert get_context(SCOPE, USERS[0], store=contexts) is not None
    name = sa.engine.make_url(db_url).database
    with psycopg.connect(_admin_conninfo(db_url), autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        try:
            _kill_reader(contexts, db_kind, db_url)
            with pytest.raises(StoreError, match="reading a context"):
                get_context(SCOPE, USERS[0], store=contexts)
        finally:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    assert get_context(SCOPE, USERS[0], store=contexts) is not None  # and it recovers


def test_a_reader_never_creates_a_database(settings):
    read.reset()
    with tempfile.TemporaryDirectory() as tmp:
        missing = Path(tmp) / "no-such-directory" / "mempipe.db"
        try:
            for _ in range(2):
                with pytest.raises(NoDatabaseError, match=re.escape(f"no mempipe database at {missing}")):
                    get_context(SCOPE, USERS[0], database_url=f"sqlite:///{missing}")
        finally:
            read.reset()
        assert not missing.parent.exists()
