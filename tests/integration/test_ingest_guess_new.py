"""PostgreSQL imports copy each batch as new messages without reading what is stored first
(pipeline/ingest/writer.py `guess_new`, store `copy_new_messages`). When a batch holds a stored
message the guess fails, nothing of that batch is kept by it, and the batch is read and written as
ever; batches are then read first until one holds nothing stored. The counts, the rows and the
errors are those of reading first, on both databases (SQLite always reads first)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

import pipeline.ingest.importer as importer_module
from pipeline.errors import InputError
from pipeline.ingest import import_files
from pipeline.store import Store

UTC = dt.timezone.utc
GUILD = 1150000000000000001
CHANNELS = (1170000000000000010, 1170000000000000011)
USERS = (1160000000000000001, 1160000000000000002, 1160000000000000003)
FIRST_ID = 1190000000100000000
BATCH = 50  # in place of the importer's BATCH_SIZE


def message(i: int, **changed) -> dict:
    at = dt.datetime(2026, 11, 2, 8, 0, tzinfo=UTC) + dt.timedelta(seconds=7 * i)
    row = {"message_id": str(FIRST_ID + i), "guild_id": str(GUILD), "channel_id": str(CHANNELS[i % 2]),
           "visibility": "public", "user_id": str(USERS[i % 3]), "user_name": f"user {i % 3}",
           "text": f"message number {i}", "ts": at.isoformat()}
    return row | changed


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def fixed_clock():
    return dt.datetime(2026, 11, 3, 0, 0, tzinfo=UTC)


@pytest.fixture
def calls(monkeypatch):
    """What the writer asked the real store: each guess's answer, and how many batches it read."""
    monkeypatch.setattr(importer_module, "BATCH_SIZE", BATCH)
    seen = {"guesses": [], "reads": 0}
    guess, read = Store.copy_new_messages, Store.stored_messages

    def copy_new_messages(self, conn, records):
        seen["guesses"].append(guess(self, conn, records))
        return seen["guesses"][-1]

    def stored_messages(self, conn, keys):
        seen["reads"] += 1
        return read(self, conn, keys)
    monkeypatch.setattr(Store, "copy_new_messages", copy_new_messages)
    monkeypatch.setattr(Store, "stored_messages", stored_messages)
    return seen


def texts(store: Store) -> dict[int, tuple]:
    with store.engine.connect() as conn:
        return {m: (t, e is not None) for m, t, e in conn.exec_driver_sql(
            "SELECT message_id, text, edited_ts FROM chat_history")}


def test_a_fresh_import_reads_nothing_back(store, tmp_path, settings, calls):
    report = import_files(store, write_jsonl(tmp_path / "a.jsonl", [message(i) for i in range(230)]), settings,
                          clock=fixed_clock)
    assert (report.new, report.edited, report.unchanged) == (230, 0, 0)
    assert store.count_messages() == 230
    if store.dialect == "postgresql":
        assert calls == {"guesses": [True] * 5, "reads": 0}  # five batches, each copied at once
    else:
        assert calls["reads"] == 5 and not any(calls["guesses"])  # SQLite reads every batch first


def test_an_overlap_is_read_first_and_the_guess_comes_back_after_it(store, tmp_path, settings, calls):
    import_files(store, write_jsonl(tmp_path / "first.jsonl", [message(i) for i in range(100)]), settings,
                 clock=fixed_clock)
    calls["guesses"].clear()
    calls["reads"] = 0
    later = [message(i) for i in range(50, 250)]
    later[10] = message(60, text="message number 60, corrected", edited_ts="2026-11-02T12:00:00+00:00")
    report = import_files(store, write_jsonl(tmp_path / "second.jsonl", later), settings, clock=fixed_clock)
    # 50..99 stored (60 edited), 100..249 new
    assert (report.new, report.edited, report.unchanged) == (150, 1, 49)
    assert store.count_messages() == 250
    stored = texts(store)
    assert stored[FIRST_ID + 60] == ("message number 60, corrected", True)
    assert stored[FIRST_ID + 249] == ("message number 249", False)
    if store.dialect == "postgresql":
        # the first batch's guess fails (nothing of it kept by the guess) and it is read; the next
        # is read first and has nothing stored, so the last two are guessed again
        assert calls == {"guesses": [False, True, True], "reads": 2}


def test_a_changed_author_in_a_batch_whose_guess_failed_is_refused_as_ever(store, tmp_path, settings, calls):
    import_files(store, write_jsonl(tmp_path / "first.jsonl", [message(i) for i in range(60)]), settings,
                 clock=fixed_clock)
    calls["guesses"].clear()
    calls["reads"] = 0
    before = texts(store)
    again = [message(i) for i in range(60, 120)] + [message(10, user_id=str(USERS[2]))]  # 10 was by USERS[1]
    path = write_jsonl(tmp_path / "changed.jsonl", again)
    with pytest.raises(InputError) as err:
        import_files(store, path, settings, clock=fixed_clock)
    assert "changed.jsonl: line 61:" in str(err.value) and "another author" in str(err.value)
    assert texts(store) == before  # the batch written before it went with the failed import
    if store.dialect == "postgresql":  # the first batch guessed right; the second's guess failed, then it was read
        assert calls["guesses"][-2:] == [True, False] and calls["reads"] == 1


def test_copies_of_one_message_in_a_guessed_batch_count_as_before(store, tmp_path, settings, calls):
    rows = [message(i) for i in range(20)]
    rows.insert(5, message(3, text="message number 3, edited", edited_ts="2026-11-02T09:00:00+00:00"))
    report = import_files(store, write_jsonl(tmp_path / "copies.jsonl", rows), settings, clock=fixed_clock)
    assert (report.new, report.edited, report.unchanged) == (20, 1, 0)
    assert texts(store)[FIRST_ID + 3] == ("message number 3, edited", True)
    if store.dialect == "postgresql":
        assert calls == {"guesses": [True], "reads": 0}
