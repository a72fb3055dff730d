"""A JSON export is decoded with only the keys its reader uses (pipeline/ingest/shapes.py): the
same rows, the same errors and the same exporter told apart as the whole document gives, without
building what every message repeats and nothing reads (an author's roles and avatar, embeds,
reactions; Telegram's text_entities)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.errors import InputError
from pipeline.ingest.discord import discord_rows
from pipeline.ingest.jsondoc import export_kind, load_json
from pipeline.ingest.shapes import DiscordDoc, TelegramDoc, shape_of
from pipeline.ingest.telegram import TelegramOptions, telegram_rows
from pipeline.ingest.telegram_text import OTHER_MEDIA

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
EXPORTS = sorted((FIXTURES / "discord").glob("*.json"))
CHATS = sorted((FIXTURES / "telegram").glob("*.json"))
BOT = 8000000001  # the fixtures' bot (tests/fixtures/telegram/README.md)


def _rows(doc, source: str) -> list:
    try:
        return list(discord_rows(doc, source, include_bots=False))
    except InputError as exc:
        return [("error", exc.where, exc.what)]


def _both(path: Path) -> tuple[list, list]:
    return _rows(load_json(str(path)), str(path)), _rows(load_json(str(path), DiscordDoc), str(path))


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.name)
def test_a_shaped_export_gives_the_rows_of_the_whole_document(path):
    whole, shaped = _both(path)
    assert whole and shaped == whole
    doc = load_json(str(path), DiscordDoc)
    author = doc["messages"][0]["author"]
    assert "roles" not in author and "avatarUrl" not in author and "embeds" not in doc["messages"][0]


def _variant(tmp_path: Path, change, fixture: str = "discord/guild-text-channel.json") -> Path:
    """A copy of a fixture export, changed."""
    doc = json.loads((FIXTURES / fixture).read_text(encoding="utf-8"))
    change(doc)
    path = tmp_path / "export.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _set(index: int, key: str, value):
    return lambda doc: doc["messages"][index].__setitem__(key, value)


@pytest.mark.parametrize("change", [
    _set(2, "author", None),  # no author: the reader's error
    _set(2, "author", ["not", "an", "object"]),
    _set(2, "attachments", ["not an object", {"fileName": "farm.png"}]),  # skipped, the other kept
    _set(2, "stickers", None),
    _set(3, "reference", "1190000000000000002"),
    _set(2, "content", 5),  # not text: the reader's error
    lambda doc: doc["messages"].insert(1, "not a message"),
    lambda doc: doc.__setitem__("messages", {"0": {}}),
    lambda doc: doc["messages"][2].pop("id"),
], ids=["author null", "author list", "attachments mixed", "stickers null", "reference text", "content number",
        "message not an object", "messages not an array", "no id"])
def test_an_export_of_another_shape_reads_as_the_whole_document_does(tmp_path, change):
    whole, shaped = _both(_variant(tmp_path, change))
    assert shaped == whole


def _telegram(doc, source: str) -> list:
    try:
        return list(telegram_rows(doc, source, TelegramOptions(None, frozenset(), frozenset({BOT}), False, False)))
    except InputError as exc:
        return [("error", exc.where, exc.what)]


@pytest.mark.parametrize("path", CHATS, ids=lambda p: p.name)
def test_a_shaped_telegram_export_gives_the_rows_of_the_whole_document(path):
    whole = _telegram(load_json(str(path)), str(path))
    shaped_doc = load_json(str(path), TelegramDoc)
    assert whole and _telegram(shaped_doc, str(path)) == whole
    assert not any("text_entities" in m for m in shaped_doc["messages"])


def _media(key: str):
    """A message whose media is marked by `key` (telegram_text.py `_media`), with no words."""
    return lambda doc: doc["messages"][1].update({key: {"question": "Saturday?"} if key == "poll" else {"x": 1},
                                                   "text": ""})


@pytest.mark.parametrize("change", [
    lambda doc: doc["messages"][1].pop("from"),  # a deleted account
    lambda doc: doc["messages"][1].__setitem__("forwarded_from", None),  # present, null: a forward
    lambda doc: doc["messages"][1].__setitem__("edited", "2026-11-02T10:00:00"),  # no edited_unixtime
    lambda doc: doc["messages"].insert(0, 7),
    lambda doc: doc.update(chats={"list": [dict(doc)]}),
    lambda doc: doc.update(chats=[]),  # not {"list": …}
    lambda doc: doc.update(channel={"id": "1"}),  # another exporter's key: told apart as whole
    *(_media(key) for key in ("photo", "file", "poll", *(key for key, _label in OTHER_MEDIA))),
], ids=["no from", "forwarded null", "edited only", "message not an object", "account export", "chats array",
        "discord key", "photo", "file", "poll", *(key for key, _label in OTHER_MEDIA)])
def test_a_telegram_export_of_another_shape_reads_as_the_whole_document_does(tmp_path, change):
    path = _variant(tmp_path, change, "telegram/group-result.json")
    whole, shaped = load_json(str(path)), load_json(str(path), TelegramDoc)
    assert export_kind(shaped) == export_kind(whole)
    assert _telegram(shaped, str(path)) == _telegram(whole, str(path))


def test_each_export_is_read_in_its_exporters_shape_by_how_it_begins(tmp_path):
    assert all(shape_of(str(p)) is DiscordDoc for p in EXPORTS)
    assert all(shape_of(str(p)) is TelegramDoc for p in CHATS)
    bom = tmp_path / "bom.json"
    bom.write_bytes(b'\xef\xbb\xbf  {\n  "channel": {}, "guild": {}}')
    assert shape_of(str(bom)) is DiscordDoc
    account = tmp_path / "account.json"
    account.write_text('{\n "about": "Here is the data you requested", "personal_information": {}}')
    assert shape_of(str(account)) is TelegramDoc
    other = tmp_path / "other.json"
    other.write_text('[{"guild": 1}]')
    assert shape_of(str(other)) is None and shape_of(str(tmp_path / "missing.json")) is None


def test_an_import_reads_each_export_in_its_exporters_shape(sqlite_store, settings, monkeypatch):
    import pipeline.ingest.importer as importer

    read, real = [], importer.load_json
    monkeypatch.setattr(importer, "load_json", lambda source, shape=None: read.append((Path(source).name, shape))
                        or real(source, shape))
    report = importer.import_files(sqlite_store, [FIXTURES / "discord" / "guild-text-channel.json",
                                                  FIXTURES / "telegram" / "group-result.json"],
                                   settings, bot_user_ids=[BOT])
    assert read == [("guild-text-channel.json", DiscordDoc), ("group-result.json", TelegramDoc)]
    assert report.new > 0
