"""The status page and every metrics scrape read the degraded rows of the derived tables and the
age of every context (pipeline/store/ops.py). Those reads are answered by indexes (migration
0024): a partial index per table holding only its degraded rows, and a covering index of
contexts by scope and day — never by reading every summary and context whole, which grew with
the corpus (~320 ms a scrape on SQLite at the large bench corpus). On both databases: each
statement the reads run is explained on the same database, and no plan reads one of those
tables whole."""

from __future__ import annotations

import datetime as dt
import re

import sqlalchemy as sa

from pipeline.db.tables import daily_summaries, historical_summaries, memory_context, partition_days
from pipeline.store.ops import OpsReads

UTC = dt.timezone.utc
WATCHED = {t.name for t in (daily_summaries, historical_summaries, memory_context, partition_days)}


def _statements(store, read) -> list[tuple[str, object]]:
    """The SELECTs `read()` runs, with their parameters, as the driver received them."""
    seen: list[tuple[str, object]] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("SELECT"):
            seen.append((statement, parameters))

    sa.event.listen(store.engine, "before_cursor_execute", record)
    try:
        read()
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", record)
    return seen


def _whole_reads(store, statements) -> list[str]:
    """The plan lines that read a table whole (SQLite: any; PostgreSQL: one of WATCHED)."""
    whole = []
    with store.engine.connect() as conn:
        if store.dialect == "postgresql":
            conn.exec_driver_sql("SET enable_seqscan = off")  # empty tables: plan as at size
        for sql, params in statements:
            if store.dialect == "sqlite":
                lines = [str(r[-1]) for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, params)]
                # "SCAN t" reads the table; "SCAN t USING [COVERING] INDEX i" reads an index
                whole += [f"{line} in {sql}" for line in lines if re.fullmatch(r"SCAN \w+", line.strip())]
            else:
                lines = [r[0] for r in conn.exec_driver_sql("EXPLAIN " + sql, params)]
                whole += [f"{line} in {sql}" for line in lines
                          if (m := re.search(r"Seq Scan on (\w+)", line)) and m.group(1) in WATCHED]
    return whole


def _one_degraded_row_each(store) -> None:
    now = dt.datetime(2026, 11, 20, 12, tzinfo=UTC)
    day = now.date()
    with store.engine.begin() as conn:
        conn.execute(sa.insert(partition_days), [{
            "partition": "guild:1", "day": day, "input_hash": "h", "message_count": 1, "user_count": 1,
            "summarizer": "extractive", "degraded": True, "degraded_reason": "model failed", "computed_at": now}])
        conn.execute(sa.insert(daily_summaries), [{
            "partition": "guild:1", "day": day, "user_id": 7, "summary": "s", "input_hash": "h",
            "degraded": True, "created_at": now}])


def test_the_degraded_rows_are_counted_and_listed_by_index(store):
    _one_degraded_row_each(store)
    ops = OpsReads(store)
    reasons = _statements(store, ops.degraded_reasons)
    keys = _statements(store, ops.degraded_keys)
    assert len(reasons) == 4 and len(keys) == 4  # one read per table: the check reads them all
    assert _whole_reads(store, reasons + keys) == []
    # and they still find the rows
    assert {(r["table"], r["reason"], r["rows"]) for r in ops.degraded_reasons()} == {
        ("partition_days", "model failed", 1), ("daily_summaries", "model failed", 1)}
    assert [k["user_id"] for k in ops.degraded_keys()["daily_summaries"]] == [7]


def test_the_age_of_contexts_is_read_from_an_index(store):
    """From the covering index alone: the key's index would read every context too."""
    statements = _statements(store, OpsReads(store).context_days)
    assert len(statements) == 1
    assert _whole_reads(store, statements) == []
    with store.engine.connect() as conn:
        (sql, params), = statements
        if store.dialect == "sqlite":
            plan = " ".join(str(r[-1]) for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, params))
            assert "USING COVERING INDEX memory_context_scope_day" in plan, plan
        else:
            conn.exec_driver_sql("SET enable_seqscan = off")
            plan = " ".join(r[0] for r in conn.exec_driver_sql("EXPLAIN " + sql, params))
            assert "Index Only Scan using memory_context_scope_day" in plan, plan
