"""A large import into a small chat_history builds the table's secondary indexes once, at its end,
instead of row by row (pipeline/store/ingest.py `defer_message_indexes`), on both databases: the
same rows and the same indexes as an import that kept them, nothing changed when it fails, never
into a table much larger than the import, never with `defer_import_indexes = false`, and on
PostgreSQL never by waiting long for a table another session holds."""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from pathlib import Path

import pytest

import pipeline.ingest.importer as importer_module
import pipeline.ingest.writer as writer_module
import pipeline.store.ingest as ingest_store
from pipeline.db.schema import render
from pipeline.errors import InputError
from pipeline.ingest import import_files
from pipeline.store import Store

UTC = dt.timezone.utc
GUILD = 1150000000000000001
CHANNELS = ((1170000000000000010, "public"), (1170000000000000011, "public"), (1170000000000000012, "restricted"))
USERS = (1160000000000000001, 1160000000000000002, 1160000000000000003)
THRESHOLD = 400  # in place of DEFER_INDEXES_AFTER, so a test imports thousands, not 100,000s
BATCH = 100  # in place of the importer's BATCH_SIZE: the writer asks after a batch is written


def rows(n: int, first_id: int) -> list[dict]:
    start = dt.datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
    out = []
    for i in range(n):
        channel_id, visibility = CHANNELS[i % len(CHANNELS)]
        out.append({"message_id": str(first_id + i), "guild_id": str(GUILD), "channel_id": str(channel_id),
                    "visibility": visibility, "user_id": str(USERS[i % len(USERS)]), "user_name": f"user {i % 3}",
                    "text": f"message number {i}", "ts": (start + dt.timedelta(seconds=7 * i)).isoformat()})
    return out


def write_jsonl(path: Path, lines: list) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


@pytest.fixture
def deferrals(monkeypatch):
    """What each of the writer's questions to the store got back (the real store answers)."""
    monkeypatch.setattr(writer_module, "DEFER_INDEXES_AFTER", THRESHOLD)
    monkeypatch.setattr(importer_module, "BATCH_SIZE", BATCH)
    answers = []
    real = Store.defer_message_indexes

    def asked(self, conn, written):
        answers.append((written, real(self, conn, written)))
        return answers[-1][1]
    monkeypatch.setattr(Store, "defer_message_indexes", asked)
    return answers


def indexes(store: Store) -> list[tuple]:
    with store.engine.connect() as conn:
        if store.dialect == "sqlite":
            return conn.exec_driver_sql("SELECT name, sql FROM sqlite_master WHERE type = 'index' "
                                        "AND tbl_name = 'chat_history' ORDER BY name").all()
        return conn.exec_driver_sql("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'chat_history' "
                                    "ORDER BY indexname").all()


def dump(store: Store) -> dict:
    with store.engine.connect() as conn:
        return {table: conn.exec_driver_sql(f"SELECT * FROM {table} ORDER BY 1, 2, 3").all()
                for table in ("chat_history", "members", "channels")}


def fixed_clock():
    return dt.datetime(2026, 11, 3, 0, 0, tzinfo=UTC)


def secondary(store: Store) -> list[str]:
    """The CREATE statements of chat_history's indexes other than the primary key's."""
    return sorted(sql for name, sql in indexes(store) if sql is not None and "pkey" not in name)


def empty(store: Store) -> None:
    with store.engine.begin() as conn:
        for table in ("chat_history", "members", "channels"):
            conn.exec_driver_sql(f"DELETE FROM {table}")


def test_a_large_import_into_an_empty_table_builds_the_indexes_at_its_end(store, tmp_path, settings, deferrals):
    path = write_jsonl(tmp_path / "big.jsonl", rows(3 * THRESHOLD + 17, 1190000000100000000))
    before = indexes(store)
    assert len(before) == 4  # the primary key's own index and three secondary ones
    schema_before = render(store.engine)

    report = import_files(store, path, settings, clock=fixed_clock)
    assert report.new == 3 * THRESHOLD + 17
    # asked once: when the first THRESHOLD rows were written
    assert len(deferrals) == 1 and deferrals[0][0] == THRESHOLD
    assert sorted(deferrals[0][1]) == secondary(store) and len(deferrals[0][1]) == 3  # dropped, then rebuilt
    assert indexes(store) == before
    assert render(store.engine) == schema_before  # as `make schema` renders it: same order too
    deferred = dump(store)

    empty(store)  # the same import with the indexes kept up to date row by row
    import_files(store, path, settings.model_copy(update={"defer_import_indexes": False}), clock=fixed_clock)
    assert len(deferrals) == 1  # not even asked
    assert dump(store) == deferred
    with store.engine.connect() as conn:
        if store.dialect == "sqlite":
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar_one() == "ok"
            explain = "EXPLAIN QUERY PLAN "
        else:
            conn.exec_driver_sql("ANALYZE chat_history")
            conn.exec_driver_sql("SET LOCAL enable_seqscan = off")  # a few rows: the plan otherwise scans
            explain = "EXPLAIN "
        plan = " ".join(str(r) for r in conn.exec_driver_sql(
            explain + "SELECT text FROM chat_history WHERE partition = 'guild:1' AND ts >= '2026-01-01'"))
        assert "chat_history_partition_ts" in plan  # the rebuilt index is the one the stages read by


def test_an_operators_own_index_is_rebuilt_as_it_was(store, tmp_path, settings, deferrals):
    """An index someone added to chat_history for their own queries — an awkward name, a partial
    one — is dropped and built again like ours, from its own definition."""
    with store.engine.begin() as conn:
        conn.exec_driver_sql('CREATE INDEX "Ops ""bot"" idx" ON chat_history (user_id, ts) WHERE visibility = \'dm\'')
    before = indexes(store)
    assert len(before) == 5
    import_files(store, write_jsonl(tmp_path / "big.jsonl", rows(3 * THRESHOLD, 1190000000100000000)), settings)
    assert len(deferrals[0][1]) == 4  # dropped with the three of the schema
    assert indexes(store) == before and store.count_messages() == 3 * THRESHOLD


def test_an_import_much_smaller_than_the_table_keeps_the_indexes(store, tmp_path, settings, deferrals):
    writer_module.DEFER_INDEXES_AFTER = 10 ** 12
    import_files(store, write_jsonl(tmp_path / "first.jsonl", rows(6 * THRESHOLD, 1190000000100000000)),
                 settings)
    writer_module.DEFER_INDEXES_AFTER = THRESHOLD
    before = indexes(store)
    import_files(store, write_jsonl(tmp_path / "second.jsonl", rows(2 * THRESHOLD + 5, 1190000000200000000)),
                 settings)
    assert deferrals and all(answer is None for _written, answer in deferrals)  # asked, and kept them
    assert indexes(store) == before
    assert store.count_messages() == 8 * THRESHOLD + 5


def test_importing_the_same_messages_again_keeps_the_indexes(store, tmp_path, settings, deferrals):
    """A re-import adds no index entry: nothing to save by a rebuild, however large it is."""
    path = write_jsonl(tmp_path / "again.jsonl", rows(3 * THRESHOLD, 1190000000100000000))
    import_files(store, path, settings)
    first = len(deferrals)
    assert first == 1 and deferrals[0][1]  # the first import of them rebuilt them at its end
    before = indexes(store)
    report = import_files(store, path, settings)
    assert report.unchanged == 3 * THRESHOLD and report.new == 0
    assert len(deferrals) == first  # not even asked: it added no message
    assert indexes(store) == before


def test_a_failed_import_after_the_indexes_were_dropped_changes_nothing(store, tmp_path, settings, deferrals):
    before = indexes(store)
    good = rows(4 * THRESHOLD, 1190000000100000000)
    path = write_jsonl(tmp_path / "late-error.jsonl", good + [dict(good[0], message_id="1190000000900000000",
                                                                   ts="yesterday")])
    with pytest.raises(InputError, match=rf"line {len(good) + 1}\b.*ts"):
        import_files(store, path, settings)
    assert deferrals and deferrals[0][1]  # the indexes had been dropped when the bad line came
    assert indexes(store) == before  # rolled back with everything else
    assert store.count_messages() == 0
    import_files(store, write_jsonl(tmp_path / "fixed.jsonl", good), settings)  # and it imports afterwards
    assert store.count_messages() == len(good) and indexes(store) == before


def test_postgresql_keeps_the_indexes_when_another_session_holds_the_table(store, tmp_path, settings, deferrals,
                                                                          db_kind, monkeypatch):
    """A DROP INDEX that waited for the table would queue every later reader and writer behind it
    for as long as the other session holds it: the import gives up on the drop after
    DEFER_LOCK_TIMEOUT, keeps the indexes up to date, and its own lock_timeout is as it was."""
    if db_kind != "postgresql":
        pytest.skip("SQLite has one writer: an import holds the whole database already")
    monkeypatch.setattr(ingest_store, "DEFER_LOCK_TIMEOUT", "50ms")
    before = indexes(store)
    timeouts = []
    with store.engine.connect() as other:  # another session reading chat_history, transaction open
        other.exec_driver_sql("SELECT count(*) FROM chat_history").scalar_one()
        asked = Store.defer_message_indexes

        def watched(self, conn, written):
            answer = asked(self, conn, written)
            timeouts.append(conn.exec_driver_sql("SHOW lock_timeout").scalar_one())
            return answer
        monkeypatch.setattr(Store, "defer_message_indexes", watched)
        # should the import wait for the lock without a timeout, the other session lets go after 10 s:
        # the indexes are then dropped and the assertions below fail, instead of the test hanging
        release = threading.Timer(10, other.rollback)
        release.start()
        try:
            report = import_files(store, write_jsonl(tmp_path / "big.jsonl", rows(3 * THRESHOLD, 1190000000100000000)),
                                  settings)
        finally:
            release.cancel()
        other.rollback()
    assert report.new == 3 * THRESHOLD
    assert deferrals and all(answer is None for _written, answer in deferrals)  # asked, and kept them
    assert timeouts and set(timeouts) == {"0"}  # the session's own setting back (PostgreSQL's default)
    assert indexes(store) == before and store.count_messages() == 3 * THRESHOLD


def test_a_bot_writing_while_the_import_asks_for_the_lock_is_not_hurt(store, tmp_path, settings, deferrals,
                                                                      db_kind, monkeypatch):
    """A bot's open transaction on chat_history, whose next insert comes while the import waits for
    the table: the insert is not stuck behind the waiting DROP, no one is aborted (deadlock), both
    are stored, and the indexes are there at the end (dropped and rebuilt, or kept)."""
    if db_kind != "postgresql":
        pytest.skip("PostgreSQL's lock queue")
    before = indexes(store)
    asked = Store.defer_message_indexes
    done: list = []

    with store.engine.connect() as bot:
        bot.exec_driver_sql("SELECT count(*) FROM chat_history").scalar_one()  # its transaction holds the table

        def bot_inserts():
            time.sleep(0.02)  # while the import waits for the lock
            try:
                bot.exec_driver_sql(
                    "INSERT INTO chat_history (message_id, guild_id, channel_id, visibility, partition, user_id, "
                    "text, ts, ingested_at) VALUES (1190000000999999999, %(g)s, %(c)s, 'public', %(p)s, %(u)s, "
                    "'from the bot', now(), now())",
                    {"g": GUILD, "c": CHANNELS[0][0], "p": f"guild:{GUILD}", "u": USERS[0]})
                bot.commit()
                done.append("committed")
            except Exception as exc:  # noqa: BLE001 (the assertion below names it)
                done.append(exc)

        def watched(self, conn, written):
            thread = threading.Thread(target=bot_inserts)
            thread.start()
            try:
                return asked(self, conn, written)
            finally:
                thread.join()
        monkeypatch.setattr(Store, "defer_message_indexes", watched)
        report = import_files(store, write_jsonl(tmp_path / "big.jsonl", rows(3 * THRESHOLD, 1190000000100000000)),
                              settings)
    assert done == ["committed"]
    assert report.new == 3 * THRESHOLD and store.count_messages() == 3 * THRESHOLD + 1
    assert indexes(store) == before


def test_postgresql_drops_them_under_the_imports_lock(store, tmp_path, settings, deferrals, db_kind):
    """While a deferring import runs, another session cannot write chat_history: what the setting's
    help says. Seen from the database: the import's session holds ACCESS EXCLUSIVE on it."""
    if db_kind != "postgresql":
        pytest.skip("PostgreSQL's lock")
    held = []
    real = Store.restore_message_indexes

    def restore(self, conn, statements):
        held.append(conn.exec_driver_sql(
            "SELECT mode FROM pg_locks WHERE relation = 'chat_history'::regclass AND pid = pg_backend_pid() "
            "AND mode = 'AccessExclusiveLock' AND granted").all())
        real(self, conn, statements)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Store, "restore_message_indexes", restore)
        import_files(store, write_jsonl(tmp_path / "big.jsonl", rows(3 * THRESHOLD, 1190000000100000000)), settings)
    assert held == [[("AccessExclusiveLock",)]]
    assert len(secondary(store)) == 3


def test_the_setting_off_never_asks(store, tmp_path, settings, deferrals):
    before = indexes(store)
    import_files(store, write_jsonl(tmp_path / "big.jsonl", rows(3 * THRESHOLD, 1190000000100000000)),
                 settings.model_copy(update={"defer_import_indexes": False}))
    assert deferrals == [] and indexes(store) == before and store.count_messages() == 3 * THRESHOLD


def test_the_index_build_leaves_the_connection_as_it_found_it(sqlite_store, tmp_path, settings, deferrals, monkeypatch):
    """It lets SQLite's sorter use helper threads (PRAGMA threads) for the build only: the pooled
    connection goes back with its own setting."""
    after = []
    real = Store.restore_message_indexes

    def watched(self, conn, statements):
        before = conn.exec_driver_sql("PRAGMA threads").scalar_one()
        real(self, conn, statements)
        after.append((before, conn.exec_driver_sql("PRAGMA threads").scalar_one()))
    monkeypatch.setattr(Store, "restore_message_indexes", watched)
    import_files(sqlite_store, write_jsonl(tmp_path / "big.jsonl", rows(2 * THRESHOLD, 1190000000100000000)), settings)
    [(before, back)] = after
    assert back == before  # (SQLite's default is 0, unless built with SQLITE_DEFAULT_WORKER_THREADS)
    assert len(indexes(sqlite_store)) == 4
