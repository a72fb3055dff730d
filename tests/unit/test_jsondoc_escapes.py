"""JSON exports as their exporters really write them (pipeline/ingest/jsondoc.py): Telegram Desktop
escapes an ASCII control character in a string as `\\xHH` (export_output_json.cpp SerializeString;
tdesktop issue #27571), which is not JSON. Such an export must import, the character kept as the
same code point; an escaped backslash followed by `x` is not one of them."""

from __future__ import annotations

import json

import pytest

from pipeline.errors import InputError
from pipeline.ingest.jsondoc import load_json
from pipeline.ingest.telegram import read_telegram


def _export(text_json: str) -> str:
    """One Telegram chat whose only message's text is the given JSON string literal, as written."""
    return ('{\n "name": "G",\n "type": "private_supergroup",\n "id": 1824466019,\n "messages": [\n  {\n'
            '   "id": 2,\n   "type": "message",\n   "date": "2026-11-02T10:01:40",\n'
            '   "date_unixtime": "1793610100",\n   "from": "Marta",\n   "from_id": "user5512098871",\n'
            f'   "text": {text_json}\n  }}\n ]\n}}\n')


def test_telegram_hex_escapes_of_control_characters_are_read(tmp_path):
    path = tmp_path / "result.json"
    path.write_text(_export(r'"tab\x0Bstop and\x01 bell"'), encoding="utf-8")
    [(_where, row)] = list(read_telegram(path))
    assert row["text"] == "tab\x0bstop and\x01 bell"


def test_an_escaped_backslash_before_x_stays_a_backslash(tmp_path):
    path = tmp_path / "result.json"
    path.write_text(_export(r'"C:\\x41 and \\\x41"'), encoding="utf-8")
    [(_where, row)] = list(read_telegram(path))
    assert row["text"] == "C:\\x41 and \\A"


def test_other_bad_json_is_still_refused_on_its_line(tmp_path):
    path = tmp_path / "result.json"
    path.write_text(_export(r'"fine\x0B" oops'), encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_json(str(path))
    assert err.value.where == "line 13" and "invalid JSON" in err.value.what


def test_a_document_without_hex_escapes_reads_as_ever(tmp_path):
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"messages": ["\\x41"]}), encoding="utf-8")
    assert load_json(str(path)) == {"messages": ["\\x41"]}
