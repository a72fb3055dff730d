"""An import file whose name says one format and whose content is another gets an error that says
so and what to pass (pipeline/ingest/importer.py), not only the JSON parser's complaint."""

from __future__ import annotations

import json

import pytest

from pipeline.errors import InputError
from pipeline.ingest import detect_format

ROW = {"message_id": "1", "guild_id": "1", "channel_id": "10", "visibility": "public", "user_id": "100",
       "user_name": "Ana", "text": "hello", "ts": "2026-11-02T18:22:10+00:00"}


def test_jsonl_content_in_a_json_file_says_to_pass_format_jsonl(tmp_path):
    path = tmp_path / "messages.json"
    path.write_text("\n".join(json.dumps(ROW | {"message_id": str(i)}) for i in (1, 2)) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        detect_format(path)
    assert err.value.where == "line 2"
    assert "--format jsonl" in err.value.what and "one JSON object per line" in err.value.what


def test_a_broken_export_gets_no_jsonl_hint(tmp_path):
    path = tmp_path / "result.json"
    path.write_text('{\n "name": "G",\n "messages": [}\n', encoding="utf-8")
    with pytest.raises(InputError) as err:
        detect_format(path)
    assert "invalid JSON" in err.value.what and "--format jsonl" not in err.value.what
