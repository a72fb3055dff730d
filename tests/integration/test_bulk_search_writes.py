"""Batches into the tables that feed the search index (pipeline/store/bulk.py): on SQLite one
INSERT … SELECT FROM json_each stores exactly what executemany stores (values, SQLite's storage
classes, upserts, errors), and it leaves the full-text index in few segments where executemany
left one per row."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from pipeline.db.tables import daily_summaries, historical_summaries, memory_facts
from pipeline.errors import StoreError
from pipeline.store.bulk import insert_rows

UTC = dt.timezone.utc
TEXTS = ["plain", "it's \"quoted\" & <tagged>", "line\nbreak\ttab", "emoji 🎲 and café", "123", "null", '{"a": 1}',
         "[1, 2]", "", "  spaced  ", "back\\slash", "x" * 3000]


def _facts(n: int, *, user: int = 7, start: int = 0) -> list[dict]:
    now = dt.datetime(2026, 11, 3, 4, 5, 6, 789012, tzinfo=UTC)
    return [{"user_id": user + i % 3, "partition": f"guild:{10 + i % 2}", "level": "guild_public",
             "category": "preference", "text": f"{TEXTS[i % len(TEXTS)]} {start + i}", "fact_key": None if i % 2 else "k",
             "confidence": [0.5, 1.0, 0.0, 0.123456789][i % 4], "event_day": None if i % 3 else dt.date(2026, 11, 2),
             "first_seen": dt.date(2026, 11, 1), "last_seen": dt.date(2026, 11, 3), "sources": ["m1", f"m{i}"],
             "origin": "extracted", "status": "active", "superseded_on": None, "input_hash": "h" * 64,
             "created_at": now, "updated_at": now + dt.timedelta(seconds=i)} for i in range(n)]


def _dailies(n: int, day: dt.date = dt.date(2026, 11, 3)) -> list[dict]:
    return [{"partition": "guild:10", "day": day, "user_id": 100 + i, "summary": TEXTS[i % len(TEXTS)],
             "input_hash": "d" * 64, "degraded": bool(i % 2),
             "created_at": dt.datetime(2026, 11, 4, 1, 0, i % 60, tzinfo=UTC)} for i in range(n)]


def _stored(store, table) -> list[tuple]:
    """Every row with each value's storage class (SQLite's typeof) where there is one."""
    with store.engine.connect() as conn:
        if store.engine.dialect.name == "sqlite":
            cols = ", ".join(f'"{c}", typeof("{c}")' for c in table.c.keys())
            return [tuple(r) for r in conn.exec_driver_sql(f"SELECT {cols} FROM {table.name} ORDER BY rowid")]
        return [tuple(r) for r in conn.execute(sa.select(table).order_by(*table.primary_key.columns))]


def _items(store) -> list[tuple]:
    """The search items the tables' triggers made (their ids left out)."""
    with store.engine.connect() as conn:
        return sorted(tuple(str(v) for v in r) for r in conn.exec_driver_sql(
            "SELECT kind, user_id, partition, level, day, confidence, fact_id, body FROM memory_items"))


def _both_ways(store, table, rows, **kwargs):
    with store.writing("bulk") as conn:
        insert_rows(conn, table, rows, **kwargs)
    bulk = _stored(store, table)
    items = _items(store)
    with store.writing("reset") as conn:
        conn.execute(sa.delete(table))
        if table is memory_facts and conn.dialect.name == "sqlite":
            conn.exec_driver_sql("DELETE FROM sqlite_sequence WHERE name = 'memory_facts'")
        elif table is memory_facts:
            conn.exec_driver_sql("SELECT setval(pg_get_serial_sequence('memory_facts', 'id'), 1, false)")
    assert _items(store) == []  # the rows' search items went with them
    with store.writing("executemany") as conn:
        conn.execute(kwargs.get("fallback", sa.insert(table)), rows)
    assert _items(store) == items  # the triggers made the same search items both ways
    return bulk, _stored(store, table)


@pytest.mark.parametrize("table,make", [(memory_facts, _facts), (daily_summaries, _dailies)])
def test_a_batch_stores_what_executemany_stores(store, table, make):
    # SQLite: one INSERT … SELECT FROM json_each; PostgreSQL: one COPY
    bulk, plain = _both_ways(store, table, make(40))
    assert len(bulk) == 40 and bulk == plain


def test_a_postgresql_batch_is_one_copy_and_fails_as_the_insert_would(store):
    if store.dialect != "postgresql":
        pytest.skip("COPY is PostgreSQL's")
    sent: list[str] = []
    sa.event.listen(store.engine, "before_cursor_execute", lambda *a: sent.append(a[2]))
    with store.writing("bulk") as conn:
        insert_rows(conn, memory_facts, _facts(30))
    assert not any("INSERT INTO memory_facts" in s for s in sent)  # no statement per row
    assert len(_stored(store, memory_facts)) == 30
    # a value the database refuses (the category's CHECK): the batch fails whole, a StoreError
    bad = _facts(3, start=100)
    bad[1]["category"] = "nonsense"
    with pytest.raises(StoreError, match="memory_facts_category_check"):
        with store.writing("bulk") as conn:
            insert_rows(conn, memory_facts, bad)
    # a naive timestamp: refused by its column type before anything is sent, as before
    naive = _facts(3, start=200)
    naive[0]["created_at"] = dt.datetime(2026, 11, 4)
    with pytest.raises(StoreError, match="timezone-aware"):
        with store.writing("bulk") as conn:
            insert_rows(conn, memory_facts, naive)
    assert len(_stored(store, memory_facts)) == 30


def test_an_upsert_batch_updates_like_executemany(store):
    from pipeline.store.base import insert_for
    from pipeline.store.derived import _upsert_statement

    keys = ("partition", "user_id", "day")

    def rows(summary):
        return [{"partition": "guild:10", "user_id": u, "day": dt.date(2026, 11, d), "summary": f"{summary} {u} {d}",
                 "input_hash": summary * 64, "source_days": d - 1, "degraded": False,
                 "created_at": dt.datetime(2026, 11, 8, tzinfo=UTC)} for u in (1, 2, 3) for d in (5, 6)]

    with store.writing("first") as conn:
        insert_rows(conn, historical_summaries, rows("a"))
    with store.writing("again") as conn:
        statement = _upsert_statement(conn.dialect.name, insert_for(conn), historical_summaries, keys, tuple(rows("b")[0]))
        # a batch that repeats a key: the later row wins, as executemany's row-by-row upsert does
        insert_rows(conn, historical_summaries, rows("b") + rows("c")[:1], conflict_keys=keys, fallback=statement)
    got = {(r[0], r[1], str(r[2])): r[3] for r in
           store.engine.connect().execute(sa.select(historical_summaries.c["partition", "user_id", "day", "summary"]))}
    assert len(got) == 6
    assert got[("guild:10", 1, "2026-11-05")] == "c 1 5"
    assert got[("guild:10", 3, "2026-11-06")] == "b 3 6"


def test_what_json_cannot_carry_is_bound_as_before(sqlite_store):
    # a naive timestamp: the column type refuses it, the fallback executemany says so
    rows = _dailies(3)
    rows[1]["created_at"] = dt.datetime(2026, 11, 4)
    with pytest.raises(StoreError, match="timezone-aware"):
        with sqlite_store.writing("bulk") as conn:
            insert_rows(conn, daily_summaries, rows)
    # NaN cannot be JSON: executemany binds it, and SQLite's NOT NULL refuses it as before
    facts = _facts(3)
    facts[2]["confidence"] = float("nan")
    with pytest.raises(StoreError):
        with sqlite_store.writing("bulk") as conn:
            insert_rows(conn, memory_facts, facts)
    assert _stored(sqlite_store, daily_summaries) == [] and _stored(sqlite_store, memory_facts) == []


def test_rows_of_different_shapes_fail_as_executemany_does(sqlite_store):
    rows = _dailies(3)
    del rows[2]["summary"]
    with pytest.raises(StoreError):
        with sqlite_store.writing("bulk") as conn:
            insert_rows(conn, daily_summaries, rows)


def _changes(store, write) -> int:
    """Rows the connection wrote during `write` (sqlite3's total_changes: FTS5's shadow tables too)."""
    with store.writing("count") as conn:
        raw = conn.connection.driver_connection
        before = raw.total_changes
        write(conn)
        return raw.total_changes - before


def test_a_batch_writes_the_full_text_index_once(sqlite_store, tmp_path):
    """Why the batch is one statement: executemany flushed FTS5's pending terms at every row's
    statement savepoint, a new index segment (and its merges) per row. Counted in row writes: each
    fact is 4 (the fact, its search item, the item's FTS5 docsize row, AUTOINCREMENT's counter);
    what is left over is the full-text index's own segment and structure writes."""
    from pipeline.store import Store

    n = 400
    bulk = _changes(sqlite_store, lambda conn: insert_rows(conn, memory_facts, _facts(n))) - 4 * n
    other = Store.open(f"sqlite:///{tmp_path}/other.db", check_schema=False)
    other.upgrade()
    try:
        per_row = _changes(other, lambda conn: conn.execute(sa.insert(memory_facts), _facts(n))) - 4 * n
    finally:
        other.close()
    assert 0 <= bulk < n / 10 and per_row > n, (bulk, per_row)
    with sqlite_store.engine.connect() as conn:  # and the index is whole: FTS5's own check
        conn.exec_driver_sql("INSERT INTO memory_items_fts (memory_items_fts) VALUES ('integrity-check')")
        found = conn.exec_driver_sql("SELECT count(*) FROM memory_items_fts WHERE memory_items_fts MATCH 'café'")
        assert found.scalar() == sum("café" in f["text"] for f in _facts(n)) > 0


def test_fact_updates_in_runs_of_the_same_columns_apply_each_change(store):
    """apply_fact_plan's updates (store/facts.py update_facts): one executemany per run of
    changes setting the same columns, each row getting its own values, superseded rows leaving
    the search index."""
    from pipeline.store.facts import update_facts

    with store.writing("facts") as conn:
        insert_rows(conn, memory_facts, _facts(12))
    with store.engine.connect() as conn:
        ids = [r[0] for r in conn.execute(sa.select(memory_facts.c.id).order_by(memory_facts.c.id))]
    touch = lambda i: {"last_seen": dt.date(2026, 11, 5 + i % 3), "confidence": 0.9 - i / 100,  # noqa: E731
                       "sources": ["m1", f"x{i}"], "updated_at": dt.datetime(2026, 11, 6, 0, i, tzinfo=UTC)}
    retire = {"status": "superseded", "superseded_on": dt.date(2026, 11, 6)}
    # shapes interleaved by id: touch, touch, retire, touch, retire+touch, …
    changes = {fid: (retire if i % 4 == 2 else touch(i) | (retire if i % 4 == 3 else {})) for i, fid in enumerate(ids)}
    with store.writing("update") as conn:
        update_facts(conn, changes)
    stored = {r["id"]: r for r in (dict(m) for m in store.engine.connect().execute(sa.select(memory_facts)).mappings())}
    for fid, values in changes.items():
        for k, v in values.items():
            assert stored[fid][k] == v, (fid, k)
    untouched = {k: v for k, v in _facts(12)[2].items() if k not in retire}
    assert {k: stored[ids[2]][k] for k in ("text", "confidence", "last_seen")} == \
        {k: untouched[k] for k in ("text", "confidence", "last_seen")}
    with store.engine.connect() as conn:
        items = {r[0]: r for r in conn.execute(sa.text("SELECT fact_id, day, confidence FROM memory_items"))}
    active = [fid for fid, v in changes.items() if "status" not in v]
    assert sorted(items) == sorted(active)
    for fid in active:
        assert str(items[fid][1]) == str(changes[fid]["last_seen"]) and items[fid][2] == changes[fid]["confidence"]


@pytest.mark.parametrize("n", [1, 3])
def test_deleting_partition_days_removes_exactly_their_rows(store, n):
    from pipeline.store.derived import _delete_keyed

    days = [dt.date(2026, 11, d) for d in range(1, 6)]
    with store.writing("dailies") as conn:
        for day in days:
            insert_rows(conn, daily_summaries, _dailies(4, day))
    gone = [("guild:10", d) for d in days[:n]] + [("guild:99", days[0])]  # a key with no rows
    with store.writing("delete") as conn:
        _delete_keyed(conn, daily_summaries, ("partition", "day"), gone)
    with store.engine.connect() as conn:
        left = sorted({str(r[0]) for r in conn.execute(sa.select(daily_summaries.c.day))})
        item_days = sorted({str(r[0]) for r in conn.execute(sa.text("SELECT day FROM memory_items WHERE kind = 'daily'"))})
    assert left == [d.isoformat() for d in days[n:]]
    assert item_days == left  # the search items went with them


def test_a_postgresql_upsert_batch_is_one_statement(store):
    """PostgreSQL: an upsert batch is one INSERT … SELECT FROM json_populate_recordset … ON
    CONFLICT: every column's value as the row-by-row upsert stores it (times, dates, JSON,
    booleans, NULLs, texts of every kind), the later of two rows with one key winning."""
    if store.dialect != "postgresql":
        pytest.skip("the set-based upsert is PostgreSQL's")
    from pipeline.db.tables import memory_context
    from pipeline.store.base import insert_for
    from pipeline.store.derived import _upsert_statement

    keys = ("scope", "user_id")

    def rows(tag: str) -> list[dict]:
        return [{"scope": f"guild:{10 + i % 2}", "user_id": i, "context": f"{TEXTS[i % len(TEXTS)]} {tag}",
                 "as_of_day": dt.date(2026, 11, 1 + i % 5), "made_at": dt.datetime(2026, 11, 6, 1, 2, 3, i, tzinfo=UTC),
                 "input_hash": tag * 64, "inputs": {"day1": [["guild:10", "2026-11-05", tag]], "n": i, "x": None},
                 "degraded": bool(i % 2), "degraded_reason": None if i % 3 else f"why {tag}", "attempts": 1 + i % 4,
                 "recent": None if i % 2 else TEXTS[(i + 1) % len(TEXTS)], "recent_hash": None} for i in range(24)]

    def upsert(conn, batch, *, plain: bool) -> None:
        statement = _upsert_statement("postgresql", insert_for(conn), memory_context, keys, tuple(batch[0]))
        if plain:
            conn.execute(statement, batch)
        else:
            insert_rows(conn, memory_context, batch, conflict_keys=keys, fallback=statement)

    results = []
    for plain in (False, True):
        with store.writing("reset") as conn:
            conn.execute(sa.delete(memory_context))
        sent: list[str] = []
        listener = lambda *a: sent.append(a[2])  # noqa: E731
        sa.event.listen(store.engine, "before_cursor_execute", listener)
        with store.writing("first") as conn:
            upsert(conn, rows("a"), plain=plain)
        with store.writing("again") as conn:  # updates, new rows, and a key twice (the later wins)
            upsert(conn, rows("b")[:12] + rows("c")[20:] + rows("d")[3:4], plain=plain)
        sa.event.remove(store.engine, "before_cursor_execute", listener)
        if not plain:
            assert len(sent) == 2 and all("json_populate_recordset" in s for s in sent)
        results.append(_stored(store, memory_context))
    assert results[0] == results[1] and len(results[0]) == 24
    got = {r[1]: r for r in results[0]}
    assert got[3][2].endswith(" d") and got[5][2].endswith(" b") and got[21][2].endswith(" c")

    # a document None is JSON null row by row (NOT NULL holds): so it goes row by row
    nulls = rows("n")[:3]
    nulls[1]["inputs"] = None
    with store.writing("bulk") as conn:
        upsert(conn, nulls, plain=False)
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT jsonb_typeof(inputs) FROM memory_context WHERE user_id = 1").scalar() == "null"

    # what JSON cannot carry as bound (a naive time) goes row by row, and fails as it did
    naive = rows("e")
    naive[2]["made_at"] = dt.datetime(2026, 11, 6)
    with pytest.raises(StoreError, match="timezone-aware"):
        with store.writing("bulk") as conn:
            upsert(conn, naive, plain=False)



@pytest.mark.parametrize("odd", [float("nan"), float("inf"), -float("inf")], ids=["nan", "inf", "-inf"])
def test_a_batch_with_a_number_json_has_no_form_for_fails_as_executemany_fails(store, odd):
    # JSON has no NaN or infinity (the JSON encoder would write null): such a batch is bound row
    # by row, so the database refuses it for what it is (confidence's CHECK, or NOT NULL where
    # SQLite binds NaN as NULL), not for a null that was never there
    rows = _facts(6)
    rows[3]["confidence"] = odd
    errors = []
    for how in ("bulk", "executemany"):
        with pytest.raises(StoreError) as raised:
            with store.writing(how) as conn:
                if how == "bulk":
                    insert_rows(conn, memory_facts, rows)
                else:
                    conn.execute(sa.insert(memory_facts), rows)
        errors.append(str(raised.value).replace(how, ""))
    assert errors[0] == errors[1] and _stored(store, memory_facts) == []
