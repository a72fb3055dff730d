"""Bad input is refused before the database, as a located `Error: …` (file and line, or message
id) that writes nothing; a database error never carries SQL parameters (other people's names)."""

from __future__ import annotations

import datetime as dt
import json
import traceback

import pytest
from click.testing import CliRunner

from pipeline.cli import cli
from pipeline.errors import InputError, StoreError
from pipeline.ingest import import_files

UTC = dt.timezone.utc
GOOD = {"message_id": "1", "guild_id": "1150000000000000001", "channel_id": "1170000000000000010",
        "visibility": "public", "user_id": "1160000000000000001", "user_name": "Other Person",
        "text": "hello", "ts": "2026-11-02T18:22:10+00:00"}
BAD = {
    "lone surrogate in text": {"text": "broken \ud800 text"},
    "lone surrogate in a name": {"user_name": "Ana \udfff"},
    "NUL in a name": {"user_name": "An\u0000a"},
    "NUL in a channel name": {"channel_name": "gen\u0000eral"},
    "UTC before year 1": {"ts": "0001-01-01T00:00:00+01:00"},
    "UTC after year 9999": {"ts": "9999-12-31T23:00:00-05:00"},
    "edit out of range": {"edited_ts": "9999-12-31T23:59:59-14:00"},
    "before 1970": {"ts": "1969-12-31T23:59:59+00:00"},
}


def _counts(store) -> dict:
    return {t: n for t, n in store.table_counts().items() if t == "chat_history"} | {
        "members": len(store.member_names())}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_values_are_located_errors_that_write_nothing(store, settings, tmp_path, case):
    path = tmp_path / "in.jsonl"
    lines = [json.dumps(GOOD | {"message_id": str(i)}) for i in (1, 2)] + [json.dumps(GOOD | {"message_id": "3"} | BAD[case])]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        import_files(store, [path], settings)
    assert (err.value.source, err.value.where) == (str(path), "line 3"), err.value
    assert "Other Person" not in str(err.value)
    assert _counts(store) == {"chat_history": 0, "members": 0}


def test_invalid_utf8_names_its_line(store, settings, tmp_path):
    path = tmp_path / "in.jsonl"
    good = [json.dumps(GOOD | {"message_id": str(i)}).encode() for i in (1, 2, 3)]
    path.write_bytes(b"\n".join(good) + b'\n{"text": "caf\xe9"}\n')
    with pytest.raises(InputError) as err:
        import_files(store, [path], settings)
    assert err.value.where == "line 4" and "UTF-8" in err.value.what
    assert _counts(store) == {"chat_history": 0, "members": 0}


def test_discord_exports_are_checked_the_same_way(store, settings, tmp_path):
    export = {"guild": {"id": "1150000000000000001", "name": "G"},
              "channel": {"id": "1170000000000000010", "type": "GuildTextChat", "name": "general"},
              "messages": [{"id": str(1190000000000000001 + i), "type": "Default", "timestamp": "2026-11-02T18:00:00+00:00",
                            "content": "hi", "author": {"id": "1160000000000000001", "name": name, "isBot": False}}
                           for i, name in enumerate(["Other Person", "Bad\u0000Name"])]}
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    with pytest.raises(InputError) as err:
        import_files(store, [path], settings)
    assert err.value.where == "message 1190000000000000002"
    raw = json.dumps(export).encode().replace(b'"hi"', b'"caf\xe9"', 1)
    path.write_bytes(raw[:40] + b"\n" + raw[40:])
    with pytest.raises(InputError) as err:
        import_files(store, [path], settings)
    assert err.value.where == "line 2" and "UTF-8" in err.value.what
    assert _counts(store) == {"chat_history": 0, "members": 0}


def test_the_cli_prints_one_located_error(db_url, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD | {"message_id": "2", "user_name": "A\u0000"}) + "\n",
                    encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(cli, ["--db", db_url, "db", "upgrade"]).exit_code == 0
    result = runner.invoke(cli, ["--db", db_url, "import", str(path)])
    assert result.exit_code == 1
    assert f"Error: {path}: line 2: user_name:" in result.output
    assert "Other Person" not in result.output and "Traceback" not in result.output


def test_a_store_error_never_carries_sql_parameters(store):
    """The message is the driver's own; nothing chained to it (what the CLI prints as "caused
    by", what -v prints as a traceback) holds the batch's values either."""
    now = dt.datetime(2026, 11, 2, tzinfo=UTC)
    good = {"message_id": 1, "guild_id": 1, "channel_id": 2, "visibility": "public", "partition": "guild:1",
            "user_id": 3, "text": "Secret Other Text", "ts": now, "reply_to": None, "edited_ts": None, "ingested_at": now}
    rows = [good, good | {"message_id": 2, "user_id": None, "text": "Secret Failing Text"}]  # NOT NULL
    with pytest.raises(StoreError) as err:
        with store.transaction() as conn:
            store.write_messages(conn, rows)
    shown, chained = "", err.value  # every exception a traceback would show, beyond source lines
    while chained is not None:
        shown += "".join(traceback.format_exception_only(chained)) + repr(chained.args)
        chained = chained.__cause__ or (None if chained.__suppress_context__ else chained.__context__)
    assert "Secret" not in shown and "parameters" not in shown and "INSERT" not in shown
    assert "null" in str(err.value).lower() and store.safe_url in str(err.value)


def test_every_importer_bounds_texts_and_names(store, settings, tmp_path):
    """JSONL, a Discord export and rows from Python all go through one writer: texts cut to
    max_message_chars, display names to 64 characters."""
    from pipeline.ingest import ingest_messages

    long_name, long_text = "N" * 300, "t" * (settings.max_message_chars + 500)
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text(json.dumps(GOOD | {"user_name": long_name, "text": long_text}) + "\n", encoding="utf-8")
    export = tmp_path / "export.json"
    export.write_text(json.dumps({
        "guild": {"id": "1150000000000000001", "name": "G"},
        "channel": {"id": "1170000000000000011", "type": "GuildTextChat", "name": "c" * 300},
        "messages": [{"id": "1190000000000000001", "type": "Default", "timestamp": "2026-11-02T18:00:00+00:00",
                      "content": long_text, "author": {"id": "1160000000000000002", "name": long_name}}]}))
    import_files(store, [jsonl, export], settings)
    ingest_messages(store, [GOOD | {"channel_id": "1170000000000000012", "user_id": "1160000000000000003",
                                    "user_name": long_name, "text": long_text}], settings)
    with store.engine.connect() as conn:
        texts = [len(t) for (t,) in conn.exec_driver_sql("SELECT text FROM chat_history")]
        channel_names = [len(n) for (n,) in conn.exec_driver_sql("SELECT name FROM channels WHERE name IS NOT NULL")]
    assert texts == [settings.max_message_chars] * 3
    assert sorted(len(n) for n in store.member_names().values()) == [64, 64, 64]
    assert channel_names == [100]
