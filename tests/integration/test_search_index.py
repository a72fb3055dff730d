"""The search index (sql/migrations/0007_search_index.*.sql) is kept in step with the rows it copies,
on every database and through every write path: a run and a replay, remember / forget, supersede,
clear, erase, message deletion, retention — and the migration indexes what was already stored.

"In step" is one invariant, checked after each path: memory_items holds exactly the active facts,
the non-empty daily summaries and the newest historical summary of each (partition, user), with
the level, day and confidence search filters and ranks on; on SQLite the FTS5 index agrees with
its content table (FTS5's own integrity-check) and finds each item by its words.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest
import sqlalchemy as sa

from pipeline.controls import OPERATOR, clear, erase
from pipeline.db.migrations import discover, split_statements
from pipeline.db.tables import daily_summaries, historical_summaries, memory_facts, memory_items
from pipeline.ingest import delete_messages, import_files, ingest_messages
from pipeline.read import search
from pipeline.retention import apply_retention
from pipeline.stages.facts import forget, remember
from tests.conftest import SAMPLE
from tests.helpers import make_context, replay

UTC = dt.timezone.utc
G = 1150000000000000001
ANA, BO, CY = 1160000000000000001, 1160000000000000002, 1160000000000000003
LEVEL = {"guild": "guild_public", "channel": "channel_restricted", "dm": "dm"}


def _rows(store, table) -> list[dict]:
    with store.engine.connect() as conn:
        return [dict(r) for r in conn.execute(sa.select(table)).mappings()]


def expected_items(store) -> set[tuple]:
    """What the index must hold, computed from the source tables alone."""
    out = set()
    for r in _rows(store, memory_facts):
        if r["status"] == "active":
            out.add(("fact", r["user_id"], r["partition"], r["level"], str(r["last_seen"]), r["confidence"], r["id"],
                     r["text"]))
    for r in _rows(store, daily_summaries):
        if r["summary"]:
            out.add(("daily", r["user_id"], r["partition"], LEVEL[r["partition"].split(":")[0]], str(r["day"]), None,
                     None, r["summary"]))
    newest: dict[tuple, dict] = {}
    for r in _rows(store, historical_summaries):
        key = (r["partition"], r["user_id"])
        if key not in newest or str(r["day"]) > str(newest[key]["day"]):
            newest[key] = r
    for (p, u), r in newest.items():
        if r["summary"]:
            out.add(("historical", u, p, LEVEL[p.split(":")[0]], str(r["day"]), None, None, r["summary"]))
    return out


def indexed_items(store) -> set[tuple]:
    return {(r["kind"], r["user_id"], r["partition"], r["level"], str(r["day"]), r["confidence"], r["fact_id"],
             r["body"]) for r in _rows(store, memory_items)}


def assert_in_step(store) -> set[tuple]:
    items = indexed_items(store)
    assert items == expected_items(store)
    assert len(items) == len(_rows(store, memory_items))  # no duplicate rows behind the set
    if store.dialect == "sqlite":
        with store.engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO memory_items_fts (memory_items_fts) VALUES ('integrity-check')"))
            for kind, user, *_rest, body in sorted(items)[:50]:
                word = next((w for w in body.replace('"', " ").split() if w.isalpha() and len(w) > 3), None)
                if word:
                    found = conn.execute(sa.text(
                        "SELECT count(*) FROM memory_items_fts WHERE memory_items_fts MATCH :m"),
                        {"m": f'user_id : "{user}" AND body : "{word}"'}).scalar_one()
                    assert found >= 1, (kind, user, word)
    else:
        with store.engine.connect() as conn:
            stale = conn.execute(sa.text(
                "SELECT count(*) FROM memory_items WHERE terms <> to_tsvector('english', body)")).scalar_one()
        assert stale == 0
    return items


def run_sample(store, settings):
    import_files(store, [SAMPLE], settings)
    replay(store, settings, "2026-11-01", "2026-11-04")


def test_a_replay_indexes_facts_dailies_and_the_newest_historicals(store, settings):
    run_sample(store, settings)
    items = assert_in_step(store)
    kinds = {i[0] for i in items}
    assert kinds == {"fact", "daily", "historical"}
    assert {i[3] for i in items} >= {"guild_public", "channel_restricted"}
    # the same replay again changes nothing in the index
    replay(store, settings, "2026-11-01", "2026-11-04")
    assert assert_in_step(store) == items


def test_remember_forget_and_supersede_keep_the_index_in_step(store, settings):
    run_sample(store, settings)
    ctx = make_context(store, settings)
    scope = f"guild:{G}"
    asyncio.run(remember(ctx, scope, ANA, "Ana keeps three beehives."))
    assert any("beehives" in i[-1] for i in assert_in_step(store))
    assert asyncio.run(forget(ctx, scope, ANA, "Ana keeps three beehives."))
    assert not any("beehives" in i[-1] for i in assert_in_step(store))
    # a superseded fact leaves the index; bringing it back (status active) returns it
    with store.engine.begin() as conn:
        fid = conn.execute(sa.select(memory_facts.c.id).where(memory_facts.c.status == "active")
                           .order_by(memory_facts.c.id)).scalars().first()
        conn.execute(sa.update(memory_facts).where(memory_facts.c.id == fid)
                     .values(status="superseded", superseded_on=dt.date(2026, 11, 4)))
    assert not any(i[6] == fid for i in assert_in_step(store))
    with store.engine.begin() as conn:
        conn.execute(sa.update(memory_facts).where(memory_facts.c.id == fid).values(status="active", superseded_on=None))
    assert any(i[6] == fid for i in assert_in_step(store))


def test_historical_rows_index_only_the_newest_of_each_partition_and_user(store):
    def hist(day: str, summary: str) -> dict:
        return {"partition": f"guild:{G}", "user_id": ANA, "day": dt.date.fromisoformat(day), "summary": summary,
                "input_hash": "h", "source_days": 6, "degraded": False, "created_at": dt.datetime(2026, 11, 1, tzinfo=UTC)}

    def bodies() -> list[str]:
        return sorted(i[-1] for i in assert_in_step(store) if i[0] == "historical")

    with store.engine.begin() as conn:
        conn.execute(sa.insert(historical_summaries), [hist("2026-11-10", "tenth"), hist("2026-11-12", "twelfth")])
    assert bodies() == ["twelfth"]
    with store.engine.begin() as conn:  # an older day written later (a replay of the past)
        conn.execute(sa.insert(historical_summaries), [hist("2026-11-11", "eleventh")])
    assert bodies() == ["twelfth"]
    with store.engine.begin() as conn:  # the newest rewritten, then emptied, then deleted
        h = historical_summaries.c
        newest = (h.partition == f"guild:{G}") & (h.user_id == ANA) & (h.day == dt.date(2026, 11, 12))
        conn.execute(sa.update(historical_summaries).where(newest).values(summary="twelfth again"))
    assert bodies() == ["twelfth again"]
    with store.engine.begin() as conn:
        conn.execute(sa.update(historical_summaries).where(newest).values(summary=""))
    assert bodies() == []
    with store.engine.begin() as conn:
        conn.execute(sa.delete(historical_summaries).where(newest))
    assert bodies() == ["eleventh"]
    with store.engine.begin() as conn:  # deleting an older row leaves the newest alone
        conn.execute(sa.delete(historical_summaries).where(h.day == dt.date(2026, 11, 10)))
    assert bodies() == ["eleventh"]


def test_one_statement_of_historical_rows_indexes_the_newest_of_each_pair(store):
    """Several (partition, user) pairs and days, out of order, in one INSERT (PostgreSQL's statement
    trigger sees them together): each pair's item is its newest row's, none for a pair whose newest
    row is empty, and a later statement of older rows changes nothing."""
    def hist(partition: str, user: int, day: str, summary: str) -> dict:
        return {"partition": partition, "user_id": user, "day": dt.date.fromisoformat(day), "summary": summary,
                "input_hash": "h", "source_days": 6, "degraded": False,
                "created_at": dt.datetime(2026, 11, 1, tzinfo=UTC)}

    guild, dm = f"guild:{G}", "dm:1170000000000000009"
    with store.engine.begin() as conn:
        conn.execute(sa.insert(historical_summaries).values([
            hist(guild, ANA, "2026-11-12", "ana twelfth"), hist(guild, ANA, "2026-11-10", "ana tenth"),
            hist(dm, ANA, "2026-11-09", "ana dm ninth"), hist(guild, BO, "2026-11-08", "bo eighth"),
            hist(guild, BO, "2026-11-11", ""), hist(guild, CY, "2026-11-07", "cy seventh")]))
    expected = {("historical", ANA, guild, "2026-11-12", "ana twelfth"),
                ("historical", ANA, dm, "2026-11-09", "ana dm ninth"),
                ("historical", CY, guild, "2026-11-07", "cy seventh")}
    assert {(i[0], i[1], i[2], i[4], i[7]) for i in assert_in_step(store) if i[0] == "historical"} == expected
    with store.engine.begin() as conn:
        conn.execute(sa.insert(historical_summaries).values([
            hist(guild, ANA, "2026-11-05", "ana fifth"), hist(guild, BO, "2026-11-04", "bo fourth")]))
    assert {(i[0], i[1], i[2], i[4], i[7]) for i in assert_in_step(store) if i[0] == "historical"} == expected


def test_clear_and_erase_empty_the_index_of_the_user(store, settings):
    run_sample(store, settings)
    before = assert_in_step(store)
    assert {i[1] for i in before} >= {ANA, BO}
    clear(store, settings, BO, requested_by=OPERATOR)
    assert not any(i[1] == BO for i in assert_in_step(store))
    erase(store, settings, ANA, requested_by=OPERATOR)
    after = assert_in_step(store)
    assert not any(i[1] == ANA for i in after)
    # the next run makes the others' rows again, without Ana: still in step
    replay(store, settings, "2026-11-01", "2026-11-04")
    assert not any(i[1] == ANA for i in assert_in_step(store))


def test_message_deletion_and_the_run_after_it_keep_the_index_in_step(store, settings):
    run_sample(store, settings)
    with store.engine.connect() as conn:
        first = conn.execute(sa.text("SELECT channel_id, message_id FROM chat_history WHERE user_id = :u "
                                     "ORDER BY ts LIMIT 3"), {"u": CY}).all()
    delete_messages(store, [(c, m) for c, m in first], settings)
    assert_in_step(store)  # facts that rested on them are gone now; the days wait for the run
    replay(store, settings, "2026-11-01", "2026-11-04")
    assert_in_step(store)


def test_retention_keeps_the_index_in_step(store, settings):
    run_sample(store, settings)
    asyncio.run(remember(make_context(store, settings), f"guild:{G}", ANA, "Ana keeps bees."))
    s = settings.model_copy(update={"retention_days": 30})
    apply_retention(store, s, now=dt.datetime(2026, 11, 24, tzinfo=UTC))  # the historical rows age out
    assert not any(i[0] == "historical" for i in assert_in_step(store))
    apply_retention(store, s, now=dt.datetime(2026, 12, 6, tzinfo=UTC), batch_size=7)
    items = assert_in_step(store)
    assert {i[0] for i in items} == {"fact"} and any("bees" in i[-1] for i in items)


@pytest.mark.parametrize("with_data", [True, False], ids=["data", "empty"])
def test_the_migration_indexes_what_was_already_stored(store, settings, with_data):
    """0007's own backfill statements (its INSERTs), run on rows stored while no index existed —
    made here by emptying the index after a replay, so the test does not depend on which later
    migrations today's importer needs."""
    if with_data:
        import_files(store, [SAMPLE], settings)
        replay(store, settings, "2026-11-01", "2026-11-04")
    with store.engine.begin() as conn:
        conn.execute(sa.delete(memory_items))
    assert indexed_items(store) == set()
    [migration] = [m for m in discover(store.dialect) if m.version == 7]
    backfill = [st for st in split_statements(migration.sql) if st.startswith("INSERT INTO memory_items ")]
    assert len(backfill) == 3  # facts, dailies, the newest historicals
    with store.engine.begin() as conn:
        for statement in backfill:
            conn.execute(sa.text(statement))
    items = assert_in_step(store)
    assert bool(items) == with_data


def test_a_fact_said_again_moves_its_item_in_place_and_a_changed_text_is_reindexed(store, settings):
    # migration 0009: re-extraction touches last_seen/confidence of every restated fact; the item
    # keeps its row (and its full-text entry) and takes the new day and confidence
    run_sample(store, settings)
    ctx = make_context(store, settings)
    asyncio.run(remember(ctx, f"guild:{G}", ANA, "Ana keeps three beehives."))
    with store.engine.connect() as conn:
        fid, item = conn.execute(sa.select(memory_items.c.fact_id, memory_items.c.id)
                                 .where(memory_items.c.body.like("%beehives%"))).one()
    with store.engine.begin() as conn:
        conn.execute(sa.update(memory_facts).where(memory_facts.c.id == fid)
                     .values(last_seen=dt.date(2026, 11, 9), confidence=0.75, sources=["manual", "1:2"]))
    assert_in_step(store)
    with store.engine.connect() as conn:
        row = conn.execute(sa.select(memory_items).where(memory_items.c.fact_id == fid)).mappings().one()
    assert row["id"] == item and str(row["day"]) == "2026-11-09" and row["confidence"] == 0.75
    assert found(store, "beehives")
    # a new text is a new entry: the old word is gone from search, the new one found
    with store.engine.begin() as conn:
        conn.execute(sa.update(memory_facts).where(memory_facts.c.id == fid).values(text="Keeps two goats"))
    assert_in_step(store)
    assert not found(store, "beehives") and found(store, "goats")


def said_by_ana(store, settings, text: str, n: int = 1) -> tuple[int, int]:
    key = (1170000000000000001, 1190000000000099100 + n)
    ingest_messages(store, [{"message_id": key[1], "channel_id": key[0], "guild_id": G, "visibility": "public",
                             "user_id": ANA, "user_name": "Ana", "ts": dt.datetime(2026, 11, 3, 15, n, tzinfo=UTC),
                             "text": text}], settings)
    return key


def found(store, word: str) -> list:
    return search(f"guild:{G}", ANA, word, limit=100, store=store)


def test_search_forgets_a_deleted_message_at_once_an_erased_user_and_what_retention_drops(store, settings):
    import_files(store, [SAMPLE], settings)
    key = said_by_ana(store, settings, "I adopted a greyhound called Zqxdeletedcanary yesterday")
    said_by_ana(store, settings, "my sister opened a bakery called Zqxkeptcanary downtown", 2)
    replay(store, settings, "2026-11-01", "2026-11-04")
    assert found(store, "Zqxdeletedcanary") and found(store, "Zqxkeptcanary")
    delete_messages(store, [key], settings)
    # before any run: its facts are gone and its day's summaries wait for the recompute (hidden)
    assert found(store, "Zqxdeletedcanary") == []
    replay(store, settings, "2026-11-01", "2026-11-04")
    assert found(store, "Zqxdeletedcanary") == [] and found(store, "Zqxkeptcanary")
    s = settings.model_copy(update={"retention_days": 30})
    apply_retention(store, s, now=dt.datetime(2026, 12, 6, tzinfo=UTC))
    assert {h.kind for h in found(store, "Zqxkeptcanary")} <= {"fact"}  # the summaries aged out
    erase(store, settings, ANA, requested_by=OPERATOR)
    assert found(store, "Zqxkeptcanary") == [] and found(store, "bakery") == []
    assert_in_step(store)


def test_an_erased_users_words_leave_the_sqlite_files(sqlite_store, settings):
    """Not only out of queries: secure_delete zeroes deleted rows, the FTS5 segments are merged
    (a deleted item's terms stay in old segments until then) and the write-ahead log truncated."""
    store = sqlite_store
    import_files(store, [SAMPLE], settings)
    ts = dt.datetime(2026, 11, 3, 15, tzinfo=UTC)
    ingest_messages(store, [{"message_id": 1190000000000099001, "channel_id": 1170000000000000001, "guild_id": G,
                             "visibility": "public", "user_id": ANA, "user_name": "Ana", "ts": ts,
                             "text": "I adopted a greyhound called Zqxphysicalcanary last spring"}], settings)
    replay(store, settings, "2026-11-01", "2026-11-04")
    assert any("Zqxphysicalcanary" in i[-1] for i in assert_in_step(store))
    erase(store, settings, ANA, requested_by=OPERATOR)
    assert_in_step(store)
    path = Path(store.engine.url.database)
    for file in (path, path.with_name(path.name + "-wal")):
        if file.exists():
            assert b"zqxphysicalcanar" not in file.read_bytes().lower(), f"the erased user's word is still in {file}"


def test_postgresql_indexes_new_rows_one_statement_per_insert_in_the_order_written(store, settings, db_kind):
    """0019: an INSERT or COPY of facts, daily or historical summaries reaches the index through one
    statement trigger (its transition table), updates and deletes through the row triggers; facts'
    items come in the order the rows were written, as the row triggers made them."""
    if db_kind != "postgresql":
        pytest.skip("SQLite's index triggers are per row, inline SQL")
    with store.engine.connect() as conn:
        triggers = dict(conn.exec_driver_sql(
            "SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal "
            "AND tgrelid IN ('memory_facts'::regclass, 'daily_summaries'::regclass, "
            "'historical_summaries'::regclass)").all())
    assert sorted(triggers) == ["daily_summaries_index", "daily_summaries_index_insert", "historical_summaries_index",
                                "historical_summaries_index_insert", "memory_facts_index", "memory_facts_index_insert"]
    assert all("FOR EACH STATEMENT" in triggers[t] and "AFTER INSERT" in triggers[t] for t in triggers
               if t.endswith("_insert"))
    assert all("FOR EACH ROW" in triggers[t] and "INSERT" not in triggers[t] for t in triggers
               if not t.endswith("_insert"))
    run_sample(store, settings)
    assert_in_step(store)
    with store.engine.connect() as conn:
        facts = conn.exec_driver_sql("SELECT fact_id FROM memory_items WHERE kind = 'fact' ORDER BY id").scalars().all()
    assert facts and facts == sorted(facts)
