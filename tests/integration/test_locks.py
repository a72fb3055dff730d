"""The one lock seam (pipeline/store/locks.py) on both databases: what one holder has, nobody
else gets until it is released; a lock key is stable; named SQL matches the tables it names."""

from __future__ import annotations

import re

from pipeline.db.queries import query
from pipeline.db.tables import chat_history
from pipeline.store import Store, lock_key
from pipeline.store.locks import FileLock, NullLock, PgAdvisoryLock


def test_lock_keys_are_stable_signed_64_bit_integers():
    assert lock_key("mempipe:run") == lock_key("mempipe:run") != lock_key("mempipe:run2")
    assert -2**63 <= lock_key("daily:guild:1:2026-11-01") < 2**63


def test_a_lock_excludes_a_second_holder_until_released(db_url):
    a, b = Store.open(db_url, check_schema=False), Store.open(db_url, check_schema=False)
    try:
        first, second = a.lock("mempipe:test", file_suffix="test"), b.lock("mempipe:test", file_suffix="test")
        expected = PgAdvisoryLock if a.dialect == "postgresql" else FileLock
        assert isinstance(first, expected)
        assert first.try_acquire() and first.alive()
        assert not second.try_acquire()
        first.release()
        assert not first.alive()
        assert second.try_acquire()
        second.release()
    finally:
        a.close()
        b.close()


def test_a_dedicated_lock_knows_when_its_session_is_gone(db_url):
    store = Store.open(db_url, check_schema=False)
    try:
        lock = store.lock("mempipe:leader-test", file_suffix="leader-test", dedicated=True, check_s=1)
        assert lock.try_acquire() and lock.alive()
        if store.dialect == "postgresql":
            with store.writing("test") as conn:
                conn.exec_driver_sql(f"SELECT pg_terminate_backend({lock.backend_pid})")
        else:
            import os

            os.remove(lock.path)  # a lock file deleted under its holder is no longer a lock
        assert not lock.alive()
        lock.release()
    finally:
        store.close()


def test_sqlite_without_a_file_and_claims_on_sqlite_need_no_lock(tmp_path):
    memory = Store.open("sqlite://", check_schema=False)
    assert isinstance(memory.lock("mempipe:run", file_suffix="run"), NullLock)
    on_disk = Store.open(f"sqlite:///{tmp_path}/x.db", check_schema=False)
    assert isinstance(on_disk.lock("daily:guild:1:2026-11-01"), NullLock)  # no suffix: one writer anyway
    memory.close()
    on_disk.close()


def test_the_staging_statements_list_chat_historys_columns_in_table_order():
    columns = [c.name for c in chat_history.columns]
    key = [c.name for c in chat_history.primary_key.columns]
    for name in ("pg_staging_copy", "pg_staging_upsert"):
        lists = re.findall(r"\(([a-z_, ]+)\)", query(name))
        listed = [[c.strip() for c in group.split(",")] for group in lists if "," in group]
        listed = [cols for cols in listed if cols != key]  # DISTINCT ON and ON CONFLICT name the key
        assert listed and all(cols == columns for cols in listed), (name, listed)
    upsert = query("pg_staging_upsert")
    assert f"DISTINCT ON ({', '.join(key)})" in upsert and f"ON CONFLICT ({', '.join(key)})" in upsert
    select = re.search(r"SELECT DISTINCT ON \([a-z_, ]+\) (.+?) FROM", upsert, re.S)
    assert [c.strip() for c in select.group(1).split(",")] == columns
