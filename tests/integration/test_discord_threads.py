"""A DiscordChatExporter thread is read by whoever reads its parent channel (the export's
`categoryId`): a public thread of a restricted channel, imported on its own or beside its parent,
must not land in the guild's public partition; a thread whose parent is unknown fails closed."""

from __future__ import annotations

import json

from pipeline.ingest import import_files
from tests.integration.test_memory import D1, run

G, STAFF, LOBBY, THREAD = 1150000000000000901, 1170000000000000902, 1170000000000000901, 1170000000000000999
ANA = 1160000000000000901


def _export(tmp_path, name, channel, ctype, parent, mid, text):
    doc = {"guild": {"id": str(G), "name": "G"},
           "channel": {"id": str(channel), "type": ctype, "categoryId": str(parent) if parent else None,
                       "category": "parent", "name": name},
           "messages": [{"id": str(mid), "type": "Default", "timestamp": f"{D1.isoformat()}T12:00:00+00:00",
                         "timestampEdited": None, "content": text,
                         "author": {"id": str(ANA), "name": "ana", "nickname": "Ana", "isBot": False}}]}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _thread(tmp_path, parent):
    return _export(tmp_path, "thread", THREAD, "GuildPublicThread", parent, 1190000000000000003,
                   "the staff thread says ZQXTHREAD")


def test_a_public_thread_of_a_restricted_channel_stays_restricted(store, settings, tmp_path):
    staff = _export(tmp_path, "staff", STAFF, "GuildTextChat", None, 1190000000000000001, "staff room")
    lobby = _export(tmp_path, "lobby", LOBBY, "GuildTextChat", None, 1190000000000000002, "hello all")
    import_files(store, [staff], settings, visibility="restricted")
    import_files(store, [lobby, _thread(tmp_path, STAFF)], settings)  # the rest of the guild, threads included
    assert store.channels()[THREAD]["partition"] == f"channel:{THREAD}"
    run(store, settings, D1)
    assert "ZQXTHREAD" not in (store.contexts(f"guild:{G}", ANA)[0]["context"])


def test_a_thread_of_an_unknown_channel_fails_closed_and_of_a_public_one_is_public(store, settings, tmp_path):
    import_files(store, [_thread(tmp_path, 1170000000000000777)], settings)
    assert store.channels()[THREAD]["visibility"] == "restricted"
    import_files(store, [_export(tmp_path, "lobby", LOBBY, "GuildTextChat", None, 1190000000000000002, "hi")], settings)
    other = _export(tmp_path, "t2", 1170000000000000998, "GuildPublicThread", LOBBY, 1190000000000000005, "hi")
    import_files(store, [other], settings)
    assert store.channels()[1170000000000000998]["partition"] == f"guild:{G}"
