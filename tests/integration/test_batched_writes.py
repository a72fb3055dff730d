"""store.write_batch with many items of each kind in one transaction (pipeline/store/derived.py):
set-based statements (one DELETE per chunk of keys, upserts per batch) touch exactly the rows
the items name, and the search index (written by triggers only) follows them."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from pipeline.db.tables import memory_items

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 11, 5, 12, tzinfo=UTC)
DAYS = [dt.date(2026, 11, 1) + dt.timedelta(days=i) for i in range(3)]
PARTITIONS = ["guild:1", "guild:2", "dm:3"]


def _record(partition: str, day: dt.date, tag: str) -> dict:
    return {"partition": partition, "day": day, "input_hash": f"{tag}:{partition}:{day}", "message_count": 2,
            "user_count": 2, "summarizer": "instant", "degraded": False, "degraded_reason": None, "attempts": 1}


def _context(scope: str, user_id: int) -> dict:
    return {"scope": scope, "user_id": user_id, "context": f"context of {user_id} in {scope}",
            "as_of_day": DAYS[-1], "made_at": NOW, "input_hash": "h", "inputs": {}, "degraded": False}


def _profile(scope: str, user_id: int) -> dict:
    return {"scope": scope, "user_id": user_id, "profile": "Likes tea", "input_hash": "p", "fact_count": 1,
            "as_of_day": DAYS[-1], "made_at": NOW}


def _daily_items(store) -> set[tuple]:
    with store.reading("test") as conn:
        q = sa.select(memory_items.c.partition, memory_items.c.day, memory_items.c.user_id, memory_items.c.body)
        return {tuple(r) for r in conn.execute(q.where(memory_items.c.kind == "daily"))}


def test_a_batch_replaces_removes_and_drops_exactly_the_items_it_names(store):
    days = [(p, d) for p in PARTITIONS for d in DAYS]
    store.write_batch([(_record(p, d, "first"), {10: f"ten said {p} {d}", 11: f"eleven said {p} {d}"}, NOW)
                       for p, d in days],
                      contexts=[_context(p, u) for p in PARTITIONS for u in (10, 11)],
                      profiles=[_profile(p, u) for p in PARTITIONS for u in (10, 11)])
    assert len(store.dailies(DAYS)) == 18 and len(_daily_items(store)) == 18

    replaced = days[:4]  # a partition-day is replaced whole: user 11 is gone from these
    store.write_batch([(_record(p, d, "second"), {10: f"ten again {p} {d}"}, NOW) for p, d in replaced],
                      removals=[("context", "guild:1", 10), ("profile", "guild:2", 11), ("context", "dm:3", 11)],
                      dropped_days=[("dm:3", DAYS[0]), ("dm:3", DAYS[2])])

    left = {(r["partition"], r["day"], r["user_id"]): r["summary"] for r in store.dailies(DAYS)}
    expected = {}
    for p, d in days:
        if p == "dm:3" and d in (DAYS[0], DAYS[2]):
            continue
        if (p, d) in replaced:
            expected[(p, d, 10)] = f"ten again {p} {d}"
        else:
            expected |= {(p, d, 10): f"ten said {p} {d}", (p, d, 11): f"eleven said {p} {d}"}
    assert left == expected
    assert _daily_items(store) == {(p, d, u, text) for (p, d, u), text in expected.items()}  # the index follows
    kept_days = {(p, d) for p, d in days} - {("dm:3", DAYS[0]), ("dm:3", DAYS[2])}
    assert {(p, d) for p in PARTITIONS for d in store.partition_days_between(p, DAYS[0], DAYS[-1])} == kept_days
    assert {(r["scope"], r["user_id"]) for r in store.contexts(text=False)} == \
        {(p, u) for p in PARTITIONS for u in (10, 11)} - {("guild:1", 10), ("dm:3", 11)}
    assert {(r["scope"], r["user_id"]) for r in store.profiles(text=False)} == \
        {(p, u) for p in PARTITIONS for u in (10, 11)} - {("guild:2", 11)}


def test_concurrent_batches_over_the_same_rows_in_opposite_orders_do_not_deadlock(db_url):
    """Runs that share work by claims (PostgreSQL) batch the contexts, weeks and profiles they make
    without a model call, so two runs' transactions may upsert the same rows. Handed the rows in
    opposite orders, each batch still locks them in key order. Made to collide: a third session
    holds the first key's row, run A queues for it, run B queues next; once released, A takes
    both rows and B follows — where B's own order (k2 first) would deadlock against A."""
    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite has one writer at a time: its transactions never wait on each other's rows")
    import threading
    import time

    from pipeline.store import Store

    store = Store.open(db_url, check_schema=False)
    store.upgrade()
    keys = [("guild:1", 1), ("guild:1", 2)]
    store.write_batch(contexts=[_context(*k) for k in keys])
    holder = sa.create_engine(db_url)
    errors: list[BaseException] = []

    def write(order):
        try:
            store.write_batch(contexts=[_context(*k) | {"context": f"by {order}"} for k in order])
        except BaseException as exc:  # the test's failure, reported from the main thread
            errors.append(exc)

    def waiting() -> int:
        with holder.connect() as c:
            return c.execute(sa.text("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                     "AND wait_event_type = 'Lock'")).scalar_one()

    with holder.connect() as conn:
        tx = conn.begin()
        conn.execute(sa.text("SELECT 1 FROM memory_context WHERE scope = 'guild:1' AND user_id = 1 FOR UPDATE"))
        threads = []
        for n, order in enumerate((keys, keys[::-1]), 1):
            threads.append(threading.Thread(target=write, args=(order,)))
            threads[-1].start()
            deadline = time.monotonic() + 10
            while waiting() < n:  # A queued for row 1 before B starts; then B waits too
                assert time.monotonic() < deadline, "a batch did not reach the held row"
                time.sleep(0.02)
        tx.rollback()
    for t in threads:
        t.join(timeout=30)
    holder.dispose()
    store.close()
    assert not errors, errors  # a deadlock aborts one of them (psycopg DeadlockDetected -> StoreError)
