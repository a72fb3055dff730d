"""Ingest against real databases (SQLite and PostgreSQL, see conftest): idempotence, edits, all-or-nothing imports."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path

import pytest
import sqlalchemy as sa

from pipeline.config import load_settings
from pipeline.errors import InputError
from pipeline.ingest import IngestReport, MessageIn, import_files, ingest_messages
from pipeline.db.types import to_utc_text
from pipeline.store import Store

UTC = dt.timezone.utc
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "discord"
TABLES = ("chat_history", "members", "channels")


def _norm(value):
    """Raw driver values, with PostgreSQL's timestamptz/bool shown the way SQLite stores them."""
    if isinstance(value, dt.datetime):
        return to_utc_text(value)
    if isinstance(value, bool):
        return int(value)
    return value


def snapshot(store: Store) -> dict[str, list[tuple]]:
    """Every row of the ingest tables, raw (no type processing), in a stable order."""
    with store.engine.connect() as conn:
        return {t: [tuple(_norm(v) for v in r) for r in conn.exec_driver_sql(f"SELECT * FROM {t} ORDER BY 1, 2")]
                for t in TABLES}


def row(message_id, text="hello", **overrides):
    base = {
        "message_id": message_id, "guild_id": 1150000000000000001, "channel_id": 1170000000000000010,
        "visibility": "public", "user_id": 1160000000000000001, "user_name": "Ana",
        "text": text, "ts": "2026-11-02T18:22:10+00:00",
    }
    return base | overrides


def write_jsonl(path, rows):
    path.write_text("".join((json.dumps(r) if isinstance(r, dict) else r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_discord_exports_land_in_their_partitions(store, settings):
    report = import_files(store, [FIXTURES / "guild-text-channel.json", FIXTURES / "direct-messages.json"], settings)
    assert report == IngestReport(read=11, new=8, skipped_by={"bot author": 2, "system message": 1})
    rows = snapshot(store)
    history = {r[0]: r for r in rows["chat_history"]}
    assert len(history) == 8
    assert history[1190000000000000006][4] == "guild:1150000000000000001"
    assert history[1190000000000000006][7] == "2026-11-02T18:31:00.000000Z"  # written as 14:31-04:00
    assert history[1190000000000000101][1:5] == (None, 1170000000000000500, "dm", "dm:1170000000000000500")
    assert history[1190000000000000003][8] == 1190000000000000002  # reply_to
    assert history[1190000000000000004][9] == "2026-11-02T18:26:15.000000Z"  # edited_ts
    assert rows["channels"] == [  # is_group, name, one_to_one: the export says DirectTextChat
        (1170000000000000010, 1150000000000000001, "public", "guild:1150000000000000001", 0, "general", 0),
        (1170000000000000500, None, "dm", "dm:1170000000000000500", 0, "ana.k", 1),
    ]
    assert sorted(rows["members"]) == [  # per partition
        ("dm:1170000000000000500", 1160000000000000001, "Ana", "2026-11-03T22:12:05.000000Z"),
        ("guild:1150000000000000001", 1160000000000000001, "Ana", "2026-11-03T08:05:00.000000Z"),
        ("guild:1150000000000000001", 1160000000000000002, "Bo", "2026-11-02T18:31:00.000000Z"),
        ("guild:1150000000000000001", 1160000000000000003, "Cy", "2026-11-02T18:40:12.250000Z"),
    ]


@pytest.mark.parametrize("name", ["guild-text-channel.json", "direct-messages.json"])
def test_importing_the_same_file_twice_changes_nothing(store, settings, tmp_path, name):
    path = shutil.copy(FIXTURES / name, tmp_path / name)
    import_files(store, [path], settings)
    before = snapshot(store)
    import_files(store, [path], settings)
    assert snapshot(store) == before
    assert store.count_messages() == len(before["chat_history"])


def test_jsonl_twice_changes_nothing(store, settings, tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [row(i, f"message {i}") for i in range(1, 50)])
    import_files(store, [path], settings)
    before = snapshot(store)
    import_files(store, [path], settings)
    assert snapshot(store) == before
    assert store.count_messages() == 49


def test_a_newer_edit_replaces_the_text_an_older_or_equal_one_does_not(store, settings):
    ingest_messages(store, [row(1, "v1")], settings)

    def text():
        with store.engine.connect() as conn:
            return tuple(_norm(v) for v in conn.exec_driver_sql(
                "SELECT text, edited_ts FROM chat_history WHERE message_id = 1").one())

    ingest_messages(store, [row(1, "v2", edited_ts="2026-11-02T18:30:00+00:00")], settings)
    assert tuple(text()) == ("v2", "2026-11-02T18:30:00.000000Z")
    ingest_messages(store, [row(1, "older", edited_ts="2026-11-02T18:25:00+00:00")], settings)
    ingest_messages(store, [row(1, "equal", edited_ts="2026-11-02T19:30:00+01:00")], settings)  # same instant
    ingest_messages(store, [row(1, "unedited")], settings)
    assert tuple(text()) == ("v2", "2026-11-02T18:30:00.000000Z")
    ingest_messages(store, [row(1, "v3", edited_ts="2026-11-02T18:31:00+00:00")], settings)
    assert tuple(text()) == ("v3", "2026-11-02T18:31:00.000000Z")


def test_one_bad_line_writes_nothing(store, settings, tmp_path, monkeypatch):
    import_files(store, [write_jsonl(tmp_path / "first.jsonl", [row(1, "kept"), row(2, "kept")])], settings)
    before = snapshot(store)
    monkeypatch.setattr("pipeline.ingest.importer.BATCH_SIZE", 4)  # the good file is flushed before the error
    good = write_jsonl(tmp_path / "good.jsonl", [row(i, "new", user_name="Ana B", edited_ts="2026-11-03T10:00:00+00:00")
                                                 for i in range(1, 10)])
    bad = write_jsonl(tmp_path / "bad.jsonl", [row(20), row(21), row(22), row(23), row(24), row(25),
                                               row(26, ts="2026-11-02 18:22"), row(27)])
    flushed = []
    with pytest.raises(InputError) as err:
        import_files(store, [good, bad], settings, progress=flushed.append)
    assert flushed == [4, 4, 4]
    assert str(err.value).startswith(f"{bad}: line 7: ts: timestamp '2026-11-02 18:22' has no UTC offset")
    assert snapshot(store) == before


def test_a_bad_line_after_a_full_batch_writes_nothing(store, settings, tmp_path, monkeypatch):
    monkeypatch.setattr("pipeline.ingest.importer.BATCH_SIZE", 3)  # earlier batches were flushed
    before = snapshot(store)
    path = write_jsonl(tmp_path / "a.jsonl", [row(i) for i in range(1, 8)] + ['{"message_id": 8'])
    flushed = []
    with pytest.raises(InputError, match=r"a\.jsonl: line 8: invalid JSON"):
        import_files(store, [path], settings, progress=flushed.append)
    assert flushed == [3, 3]
    assert snapshot(store) == before


def test_ingest_messages_from_python(store, settings):
    report = ingest_messages(store, [
        row(1, "from a dict", ts=dt.datetime(2026, 11, 2, 20, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))),
        {"message_id": "2", "guild_id": None, "channel_id": "99", "visibility": "dm", "user_id": "5",
         "user_name": "Dee", "text": "a DM", "ts": "2026-11-02T18:00:00Z", "is_group": True},
        MessageIn(message_id=3, guild_id=7, channel_id=8, visibility="restricted", user_id=5, user_name="Dee",
                  text="restricted", ts=dt.datetime(2026, 11, 2, tzinfo=UTC)),
    ], settings)
    assert report == IngestReport(read=3, new=3)
    rows = snapshot(store)
    assert [r[:8] for r in rows["chat_history"]] == [
        (1, 1150000000000000001, 1170000000000000010, "public", "guild:1150000000000000001",
         1160000000000000001, "from a dict", "2026-11-02T18:00:00.000000Z"),
        (2, None, 99, "dm", "dm:99", 5, "a DM", "2026-11-02T18:00:00.000000Z"),
        (3, 7, 8, "restricted", "channel:8", 5, "restricted", "2026-11-02T00:00:00.000000Z"),
    ]
    assert rows["channels"][1] == (99, None, "dm", "dm:99", 1, None, 0)  # a group: not one-to-one


def test_members_keep_the_latest_display_name(store, settings):
    ingest_messages(store, [
        row(2, user_name="Ana K", ts="2026-11-03T10:00:00+00:00"),
        row(1, user_name="Ana", ts="2026-11-02T10:00:00+00:00"),
    ], settings)
    ingest_messages(store, [row(3, user_name="Annie", ts="2026-11-01T10:00:00+00:00")], settings)  # older
    assert snapshot(store)["members"] == [
        ("guild:1150000000000000001", 1160000000000000001, "Ana K", "2026-11-03T10:00:00.000000Z")]
    ingest_messages(store, [row(4, user_name="Ana Kraft", ts="2026-11-04T10:00:00+00:00")], settings)
    assert store.member_names([1160000000000000001], ["guild:1150000000000000001"]) == {
        ("guild:1150000000000000001", 1160000000000000001): "Ana Kraft"}


def test_a_stored_channel_keeps_its_visibility(store, settings, tmp_path):
    import_files(store, [FIXTURES / "guild-text-channel.json"], settings)
    before = snapshot(store)
    with pytest.raises(InputError) as err:
        import_files(store, [FIXTURES / "guild-text-channel.json"], settings, visibility="restricted")
    assert err.value.where == "message 1190000000000000002"
    assert "is stored as public" in err.value.what
    assert snapshot(store) == before
