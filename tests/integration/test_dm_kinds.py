"""A DM reads the user's other partitions only when the data says it is one-to-one (`is_group:
false` in JSONL, DiscordChatExporter's DirectTextChat) and at most one person has written in it;
a DM whose kind was never stated, a group DM (a group flag once seen wins), and a DM scope nobody
imported get `dm:D` alone — fail closed."""

from __future__ import annotations

import asyncio
import datetime as dt
import json

import pytest
import sqlalchemy as sa

from pipeline.ingest import import_files, ingest_messages
from pipeline.stages.facts import remember
from tests.helpers import make_context, replay

UTC = dt.timezone.utc
G, RES, DM, DM2 = 1150000000000000801, 1170000000000000801, 1170000000000000802, 1170000000000000803
ANA, BO = 1160000000000000801, 1160000000000000802
DAY = dt.date(2026, 11, 2)
NOW = dt.datetime(2026, 11, 2, 20, tzinfo=UTC)


def _rows(**dm_extra) -> list[dict]:
    def m(mid, channel, user, text, hour, **extra):
        row = {"message_id": 1190000000000000800 + mid, "channel_id": channel, "user_id": user,
               "user_name": "Ana" if user == ANA else "Bo", "text": text,
               "ts": f"2026-11-02T{hour:02d}:00:00+00:00"} | extra
        if channel == RES:
            return row | {"guild_id": G, "visibility": "restricted"}
        return row | {"guild_id": None, "visibility": "dm"} | dm_extra
    return [m(1, RES, ANA, "ZQXRESTRICTED the moderators plan a raid on the castle tonight.", 9),
            m(2, DM, ANA, "ZQXDM I want to learn to play the cello this winter.", 10)]


def _dm_context(store) -> str:
    return "".join(r["context"] for r in store.contexts(f"dm:{DM}", ANA))


def _run(store, settings):
    replay(store, settings, "2026-11-02", "2026-11-02", now=NOW)


def test_a_dm_that_does_not_say_what_it_is_reads_only_itself(store, settings):
    ingest_messages(store, _rows(), settings)
    _run(store, settings)
    assert "ZQXDM" in _dm_context(store) and "ZQXRESTRICTED" not in _dm_context(store)


def test_a_dm_said_to_be_one_to_one_reads_the_users_other_partitions(store, settings):
    ingest_messages(store, _rows(is_group=False), settings)
    _run(store, settings)
    assert "ZQXDM" in _dm_context(store) and "ZQXRESTRICTED" in _dm_context(store)


def test_a_group_flag_once_seen_wins(store, settings):
    ingest_messages(store, _rows(is_group=False), settings)
    ingest_messages(store, [_rows(is_group=True)[1] | {"message_id": 1190000000000000899}], settings)
    ingest_messages(store, _rows(is_group=False), settings)  # saying one-to-one again does not undo it
    _run(store, settings)
    assert "ZQXRESTRICTED" not in _dm_context(store)


def test_a_second_human_speaker_makes_a_dm_not_one_to_one(store, settings):
    bo = _rows(is_group=False)[1] | {"message_id": 1190000000000000898, "user_id": BO, "user_name": "Bo",
                                     "text": "I can teach you the cello basics."}
    ingest_messages(store, _rows(is_group=False) + [bo], settings)
    _run(store, settings)
    assert "ZQXDM" in _dm_context(store) and "ZQXRESTRICTED" not in _dm_context(store)


@pytest.mark.parametrize("kind, reads_others", [("DirectTextChat", True), ("DirectGroupTextChat", False)])
def test_discord_exports_say_what_a_dm_is(store, settings, tmp_path, kind, reads_others):
    ingest_messages(store, _rows()[:1], settings)
    export = {"guild": {"id": "0", "name": "Direct Messages"}, "channel": {"id": str(DM), "type": kind, "name": "ana"},
              "messages": [{"id": "1190000000000000802", "type": "Default", "timestamp": "2026-11-02T10:00:00+00:00",
                            "content": "ZQXDM I want to learn to play the cello this winter.",
                            "author": {"id": str(ANA), "name": "ana", "nickname": "Ana", "isBot": False}}]}
    path = tmp_path / "dm.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    import_files(store, [path], settings)
    _run(store, settings)
    assert ("ZQXRESTRICTED" in _dm_context(store)) is reads_others


def test_remember_in_an_unknown_dm_reads_nothing_else(store, settings):
    ingest_messages(store, _rows(is_group=False), settings)
    _run(store, settings)
    ctx = make_context(store, settings, now=NOW)
    asyncio.run(remember(ctx, f"dm:{DM2}", ANA, "Ana has a grey cat called Pixel."))
    rows = store.contexts(f"dm:{DM2}", ANA)
    assert rows and "Pixel" in rows[0]["context"]
    assert "ZQXRESTRICTED" not in rows[0]["context"] and "ZQXDM" not in rows[0]["context"]
    assert rows[0]["inputs"]["day1"] == [] and rows[0]["inputs"]["historical"] == []


def test_the_stored_flags(store, settings):
    ingest_messages(store, _rows(), settings)
    ingest_messages(store, [_rows(is_group=False)[1] | {"channel_id": DM2, "message_id": 1190000000000000850}], settings)
    with store.engine.connect() as conn:
        flags = dict((r[0], (bool(r[1]), bool(r[2]))) for r in conn.execute(sa.text(
            "SELECT channel_id, is_group, one_to_one FROM channels WHERE visibility = 'dm'")))
    assert flags == {DM: (False, False), DM2: (False, True)}
