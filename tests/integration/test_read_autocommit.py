"""The store's reads on PostgreSQL run in autocommit (pipeline/store/base.py `_read_connection`):
no BEGIN and ROLLBACK round trips around a read, and the pooled connection goes back to the
pool transactional again, so a write that borrows it next is still all or nothing."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from pipeline.db.tables import partition_days
from pipeline.errors import StoreError

DAY = dt.date(2026, 11, 2)


def test_reads_run_without_a_transaction_and_writes_after_them_still_have_one(store, db_kind):
    if db_kind != "postgresql":
        pytest.skip("SQLite reads are as they were (no round trips to save)")
    with store.reading("reading") as conn:
        assert conn.connection.driver_connection.autocommit
        conn.exec_driver_sql("SELECT 1").scalar_one()
        # no transaction was opened around the read: the session is idle, not "in transaction"
        assert conn.exec_driver_sql("SELECT now() = statement_timestamp()").scalar_one()
    assert store.partition_days_between("guild:1", DAY, DAY) == {}

    row = {"partition": "guild:1", "day": DAY, "input_hash": "h", "message_count": 1, "user_count": 1,
           "summarizer": "test", "degraded": False, "degraded_reason": None, "attempts": 1,
           "computed_at": dt.datetime(2026, 11, 3, tzinfo=dt.timezone.utc)}
    with pytest.raises(StoreError):
        with store.writing("writing") as conn:  # the same pooled connection: the pool holds one idle
            assert not conn.connection.driver_connection.autocommit
            conn.execute(sa.insert(partition_days), [row])
            conn.execute(sa.insert(partition_days), [row])  # the key again: the whole write rolls back
    assert store.partition_days_between("guild:1", DAY, DAY) == {}
