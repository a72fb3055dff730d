"""Telegram Desktop exports against real databases (SQLite and PostgreSQL, see conftest): the two
fixtures of tests/fixtures/telegram imported together — every message under (chat, id), no
overwrite between chats, UTC times from date_unixtime, the edit applied, non-chat messages skipped
and counted by reason, mentions as names, a second import adding nothing — a full-account export,
a malformed export writing nothing, channels only when asked for, restricted chats; and a replay
over the result."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from pipeline.errors import InputError
from pipeline.ingest import IngestReport, import_files
from tests.helpers import replay
from tests.integration.test_ingest import snapshot

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "telegram"
GROUP, PERSONAL = FIXTURES / "group-result.json", FIXTURES / "personal-chat-result.json"
CHAT, TOMAS, MARTA, INES, DELETED, BOT = 1824466019, 6021337410, 5512098871, 7003391125, 5990001234, 8000000001
SKIPPED = {"bot's own message": 1, "forwarded": 1, "service message": 2}


def _history(store) -> dict[tuple[int, int], tuple]:
    """(channel, message id) -> (partition, user, text, ts, edited_ts, reply_to, author_name)."""
    rows = snapshot(store)["chat_history"]  # message_id, guild, channel, visibility, partition, user, text, ts,
    return {(r[2], r[0]): (r[4], r[5], r[6], r[7], r[9], r[8], r[11]) for r in rows}  # reply, edited, at, name


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _write(path: Path, doc) -> Path:
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


def test_both_fixtures_land_under_chat_and_id_and_a_second_import_adds_nothing(store, settings):
    report = import_files(store, [GROUP, PERSONAL], settings, bot_user_ids=[BOT])
    assert report == IngestReport(read=13, new=9, skipped_by=SKIPPED)
    history = _history(store)
    assert sorted(history) == [(CHAT, i) for i in (2, 3, 4, 5, 6, 8, 9)] + [(TOMAS, 3), (TOMAS, 5)]
    # message 3 of each chat: two messages, neither overwrote the other
    assert history[(CHAT, 3)] == (
        f"guild:{CHAT}", TOMAS, "Count me in @marta_reis, I finally moved to Alfama last week so it's a short walk.",
        "2026-11-02T09:03:05.000000Z", None, 2, "Tomás")
    assert history[(TOMAS, 3)][:4] == (
        f"dm:{TOMAS}", TOMAS, "Between us: I'm nervous about my new job at the hospital starting Monday.",
        "2026-11-03T08:15:00.000000Z")
    # UTC from date_unixtime (the exporting machine was at UTC+1 on 2 November), the edit's time
    assert history[(CHAT, 4)] == (
        f"guild:{CHAT}", MARTA, f"<@{TOMAS}> welcome to the neighbourhood! Bring the Prelude expansion please.",
        "2026-11-02T09:04:30.000000Z", "2026-11-02T09:06:02.000000Z", None, "Marta Reis")
    assert history[(CHAT, 8)] == (  # a deleted account: its id, no name (the stages show a placeholder)
        f"guild:{CHAT}", DELETED, "Deleted Account writes this: can someone lend me a copy of Wingspan?",
        "2026-11-03T21:47:19.000000Z", None, None, None)
    assert (history[(CHAT, 5)][2], history[(CHAT, 6)][2]) == ("[sticker 👍]",
                                                              "[photo: Our table after last week's game night]")
    rows = snapshot(store)
    assert rows["channels"] == [  # channel, guild, visibility, partition, is_group, name, one_to_one
        (CHAT, CHAT, "public", f"guild:{CHAT}", 0, "Lisbon Board Gamers", 0),
        (TOMAS, None, "dm", f"dm:{TOMAS}", 0, "Tomás", 1),
    ]
    assert sorted((p, u, n) for p, u, n, _ in rows["members"]) == [
        (f"dm:{TOMAS}", TOMAS, "Tomás"),
        (f"guild:{CHAT}", MARTA, "Marta Reis"), (f"guild:{CHAT}", TOMAS, "Tomás"), (f"guild:{CHAT}", INES, "Inês")]

    # `user erase` finds other people's mentions of a user by id: Marta's message 4 names Tomás
    assert (f"guild:{CHAT}", "2026-11-02T09:04:30") in {
        (m["partition"], m["ts"].astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S"))
        for m in store.messages_naming_user(TOMAS)}
    before = snapshot(store)
    again = import_files(store, [PERSONAL, GROUP], settings, bot_user_ids=[BOT])
    assert again == IngestReport(read=13, unchanged=9, skipped_by=SKIPPED)
    assert snapshot(store) == before


def test_the_edit_replaces_an_earlier_copy(store, settings, tmp_path):
    doc = _load(GROUP)
    (first,) = [m for m in doc["messages"] if m["id"] == 4]
    for key in ("edited", "edited_unixtime"):
        del first[key]
    first["text"] = "welcome to the neighbourhood!"
    import_files(store, [_write(tmp_path / "before-the-edit.json", doc)], settings)
    report = import_files(store, [GROUP], settings)
    assert (report.new, report.edited, report.unchanged) == (0, 1, 6)
    assert _history(store)[(CHAT, 4)][2:5] == (
        f"<@{TOMAS}> welcome to the neighbourhood! Bring the Prelude expansion please.",
        "2026-11-02T09:04:30.000000Z", "2026-11-02T09:06:02.000000Z")


def test_a_full_account_export_is_the_same_as_its_chats(store, settings, tmp_path):
    saved = {"type": "saved_messages", "id": BOT, "messages": [_load(GROUP)["messages"][1]]}
    channel = {"name": "News", "type": "public_channel", "id": 1700000001, "messages": []}
    full = _write(tmp_path / "result.json", {
        "about": "Here is the data you requested.", "personal_information": {"user_id": BOT, "first_name": "Memo"},
        "chats": {"about": "…", "list": [_load(PERSONAL), _load(GROUP), saved, channel]},
        "left_chats": {"about": "…", "list": []}})
    report = import_files(store, [full], settings, bot_user_ids=[BOT])  # detected by chats.list
    assert report == IngestReport(read=14, new=9, skipped_by=SKIPPED | {"saved messages": 1})
    assert import_files(store, [GROUP, PERSONAL], settings, bot_user_ids=[BOT]).unchanged == 9
    assert len(_history(store)) == 9


def test_a_members_full_account_export_imports_only_their_chat_with_the_bot(store, settings, tmp_path):
    """Marta's whole-account export. Her private chats with Tomás and Inês have their user ids as
    chat ids — the keys of their own DMs with the bot — so they are skipped whole; her chat with
    the bot is her DM, keyed by her. Then Tomás's DM (exported on the bot's side) reads only his
    words, and none of Marta's."""
    def msg(mid, text, user, name):
        return {"id": mid, "type": "message", "date_unixtime": str(1793700000 + mid), "from": name,
                "from_id": f"user{user}", "text": text}
    chats = [
        {"name": "Tomás", "type": "personal_chat", "id": TOMAS, "messages": [
            msg(1, "Marta to Tomás: I am thinking of leaving my job", MARTA, "Marta Reis")]},
        {"name": "Inês", "type": "personal_chat", "id": INES, "messages": [
            msg(1, "Marta to Inês: my test results came back", MARTA, "Marta Reis"),
            msg(2, "Inês to Marta: call me", INES, "Inês")]},
        {"name": "MemoBot", "type": "bot_chat", "id": BOT, "messages": [
            msg(1, "Remember that I prefer mornings", MARTA, "Marta Reis"), msg(2, "Noted!", BOT, "MemoBot")]},
        _load(GROUP),
    ]
    full = _write(tmp_path / "result.json", {"personal_information": {"user_id": MARTA, "first_name": "Marta"},
                                             "chats": {"list": chats}})
    report = import_files(store, [full], settings, bot_user_ids=[BOT])
    assert report == IngestReport(read=15, new=8, skipped_by={
        "private chat without the bot": 3, "bot's own message": 1, "forwarded": 1, "service message": 2})
    history = _history(store)
    assert {p for p, *_ in history.values()} == {f"guild:{CHAT}", f"dm:{MARTA}"}
    assert history[(MARTA, 1)][:3] == (f"dm:{MARTA}", MARTA, "Remember that I prefer mornings")
    assert not [t for _, _, t, *_ in history.values() if t.startswith(("Marta to", "Inês to"))]
    assert {(c, p, one) for c, _, _, p, _, _, one in snapshot(store)["channels"]} == {
        (CHAT, f"guild:{CHAT}", 0), (MARTA, f"dm:{MARTA}", 1)}

    import_files(store, [PERSONAL], settings, bot_user_ids=[BOT])  # Tomás's DM, on the bot's side
    tomas = {k: v for k, v in _history(store).items() if v[0] == f"dm:{TOMAS}"}
    assert {v[1] for v in tomas.values()} == {TOMAS} and sorted(tomas) == [(TOMAS, 3), (TOMAS, 5)]


def test_without_a_bot_user_id_no_private_chat_is_read(store, settings):
    report = import_files(store, [PERSONAL, GROUP], settings)
    assert report.skipped_by["private chat (no --bot-user-id)"] == 3 and report.new == 7
    assert {p for p, *_ in _history(store).values()} == {f"guild:{CHAT}"}


def test_a_malformed_export_is_a_located_error_and_writes_nothing(store, settings, tmp_path, monkeypatch):
    monkeypatch.setattr("pipeline.ingest.importer.BATCH_SIZE", 2)  # batches are written before the bad message
    doc = _load(GROUP)
    del doc["messages"][8]["date_unixtime"]  # message 9
    bad = _write(tmp_path / "result.json", doc)
    with pytest.raises(InputError) as err:
        import_files(store, [PERSONAL, bad], settings, bot_user_ids=[BOT])
    assert (err.value.source, err.value.where) == (str(bad), f"chat {CHAT} message 9")
    assert "missing field date_unixtime" in err.value.what and "export again" in err.value.what
    assert snapshot(store) == {"chat_history": [], "members": [], "channels": []}


def test_channels_only_when_asked_for(store, settings, tmp_path):
    post = {"id": 3, "type": "message", "date": "2026-11-02T10:00:00", "date_unixtime": "1793613600",
            "from": "Board Game Deals PT", "from_id": "channel1700000001", "text": "Brass at 30% off"}
    channel = _write(tmp_path / "result.json", {"name": "Board Game Deals PT", "type": "public_channel",
                                                "id": 1700000001, "messages": [post]})
    assert import_files(store, [channel], settings) == IngestReport(read=1, skipped_by={"channel": 1})
    assert _history(store) == {}
    assert import_files(store, [channel, GROUP], settings, include_channels=True).new == 8
    assert _history(store)[(1700000001, 3)][:3] == ("guild:1700000001", 1700000001, "Brass at 30% off")
    assert (CHAT, 3) in _history(store)  # the channel's message 3 is another message


def test_a_restricted_chat_is_its_own_partition(store, settings):
    import_files(store, [GROUP, PERSONAL], settings, bot_user_ids=[BOT], restricted_chats=[CHAT])
    rows = snapshot(store)
    assert {r[3:5] for r in rows["chat_history"] if r[2] == CHAT} == {("restricted", f"channel:{CHAT}")}
    assert {r[3:5] for r in rows["chat_history"] if r[2] == TOMAS} == {("dm", f"dm:{TOMAS}")}
    with pytest.raises(InputError, match="is stored as restricted"):  # a chat keeps its visibility
        import_files(store, [GROUP], settings)
    assert snapshot(store) == rows


def test_a_restricted_chat_that_matches_no_group_writes_nothing(store, settings, monkeypatch):
    monkeypatch.setattr("pipeline.ingest.importer.BATCH_SIZE", 2)  # batches are written before the check
    with pytest.raises(InputError) as err:
        import_files(store, [GROUP, PERSONAL], settings, bot_user_ids=[BOT], restricted_chats=[10**12 + CHAT])
    assert (err.value.source, err.value.where) == ("--restricted-chat", str(10**12 + CHAT))
    assert f"Bot API chat id: pass {CHAT}" in err.value.what
    assert snapshot(store) == {"chat_history": [], "members": [], "channels": []}
    # over several files: the group of the second file matches
    report = import_files(store, [PERSONAL, GROUP], settings, bot_user_ids=[BOT, 42], restricted_chats=[CHAT])
    assert report.new == 9 and report.warnings == ["--bot-user-id 42 is in no chat of this import"]


def test_a_replay_reads_the_imported_chats(store, settings):
    import_files(store, [GROUP, PERSONAL], settings, bot_user_ids=[BOT])
    _, result = replay(store, settings, "2026-11-02", "2026-11-03")
    assert store.run(result.run_id)["status"] == "ok"
    summaries = {(p, str(d), u): s for p, d, u, s, *_ in store.dump("daily_summaries")}
    assert {p for p, _, _ in summaries} == {f"guild:{CHAT}", f"dm:{TOMAS}"}
    assert {(f"guild:{CHAT}", "2026-11-02", MARTA), (f"guild:{CHAT}", "2026-11-02", TOMAS),
            (f"guild:{CHAT}", "2026-11-02", INES), (f"guild:{CHAT}", "2026-11-03", DELETED)} <= set(summaries)
    texts = " ".join(summaries.values())
    # Marta's mention of Tomás (stored as <@id>) reads as the name he has in the group at that time
    assert "@Tomás welcome to the neighbourhood" in texts and "<@" not in texts
    assert "Brass" not in texts and "sounds exciting" not in texts  # a forwarded post, the bot's own words
