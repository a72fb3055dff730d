"""JSONL import: parsing and validation, against a recording store (no database)."""

from __future__ import annotations

import contextlib
import datetime as dt
import json

import pytest

from pipeline.clock import fixed_clock
from pipeline.config import load_settings
from pipeline.errors import InputError
from pipeline.ingest import IngestReport, detect_format, import_files, ingest_messages
from pipeline.ingest.jsonl import read_jsonl
from pipeline.store.ingest import MESSAGE_COLUMNS

UTC = dt.timezone.utc


class RecordingStore:
    """The store methods ingest uses; remembers what it was asked to write (nothing is stored)."""

    def __init__(self):
        self.messages, self.members, self.channels, self.transactions = [], [], [], 0

    @contextlib.contextmanager
    def transaction(self):
        self.transactions += 1
        yield None

    def write_message_records(self, conn, records, stored):
        self.messages.extend(dict(zip(MESSAGE_COLUMNS, record)) for record in records)

    def write_members(self, conn, rows):
        self.members.extend(rows)

    def write_channels(self, conn, rows):
        self.channels.extend(rows)

    def mark_group_dms(self, conn, channel_ids):
        pass

    def stored_channels(self, conn, channel_ids):
        return {}

    def stored_messages(self, conn, keys):
        return {}

    def copy_new_messages(self, conn, records):  # declined: every batch is read first, as above
        return False


def row(**overrides):
    base = {
        "message_id": 1190000000000000001, "guild_id": 1150000000000000001, "channel_id": 1170000000000000010,
        "visibility": "public", "user_id": 1160000000000000001, "user_name": "Ana",
        "text": "hello", "ts": "2026-11-02T18:22:10+00:00",
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not ...}


def write_jsonl(path, rows, blank_lines=False):
    lines = [json.dumps(r) if isinstance(r, dict) else r for r in rows]
    sep = "\n\n" if blank_lines else "\n"
    path.write_text(sep.join(lines) + "\n", encoding="utf-8")
    return path


def import_error(tmp_path, settings, bad_line: str | dict) -> InputError:
    path = write_jsonl(tmp_path / "in.jsonl", [row(), row(message_id=2), bad_line, row(message_id=4)])
    store = RecordingStore()
    with pytest.raises(InputError) as err:
        import_files(store, [path], settings)
    assert err.value.source == str(path)
    assert err.value.where == "line 3"
    return err.value


def test_reads_lines_and_ignores_blank_ones(tmp_path, settings):
    path = write_jsonl(tmp_path / "in.jsonl", [row(), row(message_id=2, reply_to="1190000000000000001",
                                                       edited_ts="2026-11-02T19:00:00+01:00")], blank_lines=True)
    assert [w for w, _ in read_jsonl(path)] == ["line 1", "line 3"]
    store = RecordingStore()
    report = import_files(store, [path], settings)
    assert report == IngestReport(read=2, new=2)
    assert store.transactions == 1
    first, second = store.messages
    assert first["partition"] == "guild:1150000000000000001"
    assert first["ts"] == dt.datetime(2026, 11, 2, 18, 22, 10, tzinfo=UTC)
    assert second["reply_to"] == 1190000000000000001
    assert second["edited_ts"] == dt.datetime(2026, 11, 2, 18, 0, tzinfo=UTC)
    assert store.members == [{"partition": "guild:1150000000000000001", "user_id": 1160000000000000001,
                              "display_name": "Ana", "seen_at": first["ts"]}]
    assert store.channels == [{"channel_id": 1170000000000000010, "guild_id": 1150000000000000001,
                               "visibility": "public", "partition": "guild:1150000000000000001",
                               "is_group": False, "name": None, "one_to_one": False}]


def test_missing_field(tmp_path, settings):
    err = import_error(tmp_path, settings, row(message_id=3, user_id=...))
    assert err.what == "missing field user_id"


def test_bad_timestamp(tmp_path, settings):
    err = import_error(tmp_path, settings, row(message_id=3, ts="2026-13-45 noon"))
    assert err.what.startswith("ts: bad timestamp '2026-13-45 noon'")


def test_naive_timestamp(tmp_path, settings):
    err = import_error(tmp_path, settings, row(message_id=3, ts="2026-11-02T18:22:10"))
    assert "timestamp '2026-11-02T18:22:10' has no UTC offset" in err.what


def test_naive_edited_timestamp(tmp_path, settings):
    err = import_error(tmp_path, settings, row(message_id=3, edited_ts="2026-11-02T18:22:10"))
    assert err.what.startswith("edited_ts: timestamp")


def test_unknown_visibility(tmp_path, settings):
    err = import_error(tmp_path, settings, row(message_id=3, visibility="secret"))
    assert "unknown visibility 'secret'" in err.what


@pytest.mark.parametrize("bad", ["12.5", 12.5, 12.0, "12.0", "-5", -5, True, "0x1f", " 12", 2**63, str(2**64)])
def test_id_not_an_integer(tmp_path, settings, bad):
    err = import_error(tmp_path, settings, row(message_id=bad))
    assert err.what.startswith("message_id: id not an integer")


def test_big_ids_are_exact(tmp_path, settings):
    path = write_jsonl(tmp_path / "in.jsonl", [row(message_id=str(2**63 - 1), user_id=2**63 - 1)])
    store = RecordingStore()
    import_files(store, [path], settings)
    assert store.messages[0]["message_id"] == 2**63 - 1 and store.messages[0]["user_id"] == 2**63 - 1


def test_dm_needs_null_guild_and_public_needs_a_guild(tmp_path, settings):
    err = import_error(tmp_path, settings, row(message_id=3, visibility="dm"))
    assert "a dm message has no guild" in err.what
    err = import_error(tmp_path, settings, row(message_id=3, guild_id=None))
    assert "a public message needs a guild_id" in err.what


def test_invalid_json(tmp_path, settings):
    err = import_error(tmp_path, settings, '{"message_id": 3,')
    assert err.what.startswith("invalid JSON")


def test_lines_ending_in_a_lone_cr_are_named_as_the_cause(tmp_path, settings):
    """Classic Mac line ends (CR only) join every message into one line: the error says so and how
    to convert the file, instead of only "Extra data"."""
    path = tmp_path / "mac.jsonl"
    path.write_bytes(b"\r".join(json.dumps(row(message_id=n)).encode() for n in (1, 2, 3)) + b"\r")
    with pytest.raises(InputError) as err:
        import_files(RecordingStore(), [path], settings)
    assert err.value.where == "line 1" and err.value.what.startswith("invalid JSON")
    assert "lone CR" in err.value.what and "tr '\\r' '\\n'" in err.value.what
    # a plain JSON error says nothing about line ends
    assert "CR" not in import_error(tmp_path, settings, '{"message_id": 3,').what


def test_not_an_object(tmp_path, settings):
    err = import_error(tmp_path, settings, "[1, 2]")
    assert err.what == "expected a JSON object (one message), got an array"


def test_several_problems_are_named_together(tmp_path, settings):
    err = import_error(tmp_path, settings, row(message_id="12.5", ts=...))
    assert err.what == "message_id: id not an integer: '12.5'; missing field ts"


def test_long_text_is_cut_not_rejected(tmp_path):
    settings = load_settings(max_message_chars=20)
    path = write_jsonl(tmp_path / "in.jsonl", [row(text="x" * 21), row(message_id=2, text="y" * 20)])
    store = RecordingStore()
    report = import_files(store, [path], settings)
    assert report == IngestReport(read=2, new=2, cut=1)
    assert store.messages[0]["text"] == "x" * 19 + "…"
    assert len(store.messages[0]["text"]) == 20
    assert store.messages[1]["text"] == "y" * 20


def test_empty_text_is_skipped(tmp_path, settings):
    path = write_jsonl(tmp_path / "in.jsonl", [row(text="  "), row(message_id=2)])
    store = RecordingStore()
    assert import_files(store, [path], settings) == IngestReport(read=2, new=1, skipped_by={"empty": 1})


def test_one_channel_cannot_have_two_visibilities(tmp_path, settings):
    err = import_error(tmp_path, settings, row(message_id=3, visibility="restricted"))
    assert "channel 1170000000000000010 is restricted" in err.what
    assert "public in guild 1150000000000000001 (partition guild:1150000000000000001) at line 1" in err.what


def test_duplicate_ids_in_one_batch_are_merged_like_the_store_would(tmp_path, settings):
    path = write_jsonl(tmp_path / "in.jsonl", [
        row(text="v1"),
        row(text="v3", edited_ts="2026-11-02T18:30:00+00:00", user_name="Ana B"),
        row(text="v2", edited_ts="2026-11-02T18:25:00+00:00"),  # older edit: ignored
    ])
    store = RecordingStore()
    import_files(store, [path], settings)
    assert [m["text"] for m in store.messages] == ["v3"]
    assert [m["display_name"] for m in store.members] == ["Ana"]  # same seen_at: the last one wins
    assert len(store.channels) == 1


def test_batches_and_progress(tmp_path, settings, monkeypatch):
    monkeypatch.setattr("pipeline.ingest.importer.BATCH_SIZE", 2)
    path = write_jsonl(tmp_path / "in.jsonl", [row(message_id=i) for i in range(1, 6)])
    store = RecordingStore()
    seen = []
    import_files(store, [path], settings, progress=seen.append)
    assert seen == [2, 2, 1]  # steps: messages read since the last call
    assert len(store.messages) == 5
    assert len(store.channels) == len(store.members) == 1  # written once per import, not per batch


def test_ingested_at_is_the_injected_clocks_now_for_every_message(tmp_path, settings, monkeypatch):
    monkeypatch.setattr("pipeline.ingest.importer.BATCH_SIZE", 2)  # the same instant across batches
    at = dt.datetime(2026, 11, 5, 9, 30, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    path = write_jsonl(tmp_path / "in.jsonl", [row(message_id=i) for i in range(1, 4)])
    store = RecordingStore()
    import_files(store, [path], settings, clock=fixed_clock(at))
    ingest_messages(store, [row(message_id=9)], settings, clock=fixed_clock(at + dt.timedelta(days=1)))
    assert [m["ingested_at"] for m in store.messages] == [at] * 3 + [at + dt.timedelta(days=1)]


def test_ingest_messages_names_the_message(settings):
    store = RecordingStore()
    with pytest.raises(InputError) as err:
        ingest_messages(store, [row(), row(message_id=7, ts="soon")], settings)
    assert (err.value.source, err.value.where) == ("python", "message 7")
    with pytest.raises(InputError) as err:
        ingest_messages(store, [row(), row(message_id="x")], settings)
    assert err.value.where == "row 2"


def test_detect_format(tmp_path):
    assert detect_format(tmp_path / "a.jsonl") == "jsonl"
    (tmp_path / "a.json").write_text('{"guild": {}, "channel": {}, "messages": []}', encoding="utf-8")
    assert detect_format(tmp_path / "a.json") == "discord"  # .json: an export, told apart by its keys
    (tmp_path / "a.txt").write_text(json.dumps(row()) + "\n", encoding="utf-8")
    assert detect_format(tmp_path / "a.txt") == "jsonl"
    (tmp_path / "b.txt").write_text('{\n  "guild": {}\n}', encoding="utf-8")
    assert detect_format(tmp_path / "b.txt") == "discord"


def test_missing_file(tmp_path, settings):
    with pytest.raises(InputError) as err:
        import_files(RecordingStore(), [tmp_path / "nope.jsonl"], settings)
    assert err.value.where == "cannot open"


def test_a_message_built_in_python_is_validated_like_a_dict(settings):
    """MessageIn checks nothing when built: ingest_messages validates it as it would the dict."""
    from pipeline.ingest import MessageIn

    good = dict(message_id=7, guild_id=1150000000000000001, channel_id=1170000000000000010, visibility="public",
                user_id=1160000000000000001, user_name="Ana", text="hi", ts=dt.datetime(2026, 11, 2, tzinfo=UTC))
    store = RecordingStore()
    with pytest.raises(InputError) as err:
        ingest_messages(store, [MessageIn(**good | {"ts": dt.datetime(2026, 11, 2)})], settings)
    assert (err.value.where, err.value.what) == ("message 7", "ts: timestamp datetime.datetime(2026, 11, 2, 0, 0) "
                                                              "has no UTC offset (write it like 2026-11-02T18:22:10+00:00)")
    ingest_messages(store, [MessageIn(**good)], settings)
    assert [m["ts"] for m in store.messages] == [dt.datetime(2026, 11, 2, tzinfo=UTC)]


def test_rows_the_quick_pass_does_not_take_are_judged_field_by_field(tmp_path, settings):
    """A str subclass, a bool written as text, a reused id text as an int: accepted as before."""
    class Text(str):
        pass

    store = RecordingStore()
    rows = [row(message_id=1, user_name=Text("Ana"), text=Text("hi"), channel_id="1170000000000000010"),
            row(message_id=2, visibility="dm", guild_id=None, channel_id=99, is_group="false"),
            row(message_id=3, channel_id=1170000000000000010)]
    assert ingest_messages(store, rows, settings).new == 3
    assert {m["channel_id"] for m in store.messages} == {1170000000000000010, 99}
    assert store.channels[-1]["one_to_one"] is True  # is_group "false": said to be one-to-one
    with pytest.raises(InputError, match="is_group: expected true or false, got 'maybe'"):
        ingest_messages(store, [row(message_id=4, visibility="dm", guild_id=None, is_group="maybe")], settings)


def test_a_float_never_passes_as_a_remembered_id_text(tmp_path, settings):
    path = write_jsonl(tmp_path / "in.jsonl", [row(channel_id="12"), row(message_id=2, channel_id=12.0)])
    with pytest.raises(InputError) as err:
        import_files(RecordingStore(), [path], settings)
    assert (err.value.where, err.value.what) == ("line 2", "channel_id: id not an integer: 12.0")
