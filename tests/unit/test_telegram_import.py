"""Telegram Desktop JSON export -> MessageIn (pipeline/ingest/telegram.py), on the real-shaped
fixtures in tests/fixtures/telegram (tests/fixtures/telegram/README.md says what they hold) and on
small exports built here for the cases the fixtures do not hold."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from pipeline.errors import InputError
from pipeline.ingest import MessageIn, detect_format, validate
from pipeline.ingest.jsondoc import export_kind
from pipeline.ingest.model import Skipped
from pipeline.ingest.telegram import read_telegram

UTC = dt.timezone.utc
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "telegram"
GROUP = FIXTURES / "group-result.json"
PERSONAL = FIXTURES / "personal-chat-result.json"
CHAT, TOMAS, MARTA, INES, DELETED, BOT = 1824466019, 6021337410, 5512098871, 7003391125, 5990001234, 8000000001


def parsed(path, **options) -> tuple[dict[int, MessageIn], dict[int, str]]:
    """Kept messages by id, and the reason of every skipped one by id."""
    kept, skipped = {}, {}
    for where, row in read_telegram(path, **options):
        number = int(where.rsplit(" ", 1)[1])
        if isinstance(row, Skipped):
            skipped[number] = str(row)
        else:
            kept[number] = validate(row)
    return kept, skipped


def message(mid, text="hi", sender=f"user{TOMAS}", **extra) -> dict:
    return {"id": mid, "type": "message", "date": "2026-11-02T10:00:00", "date_unixtime": "1793613600",
            "from": "Tomás", "from_id": sender, "text": text, "text_entities": []} | extra


def export(tmp_path, messages, chat_type="private_supergroup", chat_id=CHAT, name="G") -> Path:
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"name": name, "type": chat_type, "id": chat_id, "messages": messages}),
                    encoding="utf-8")
    return path


def test_group_is_one_public_partition_keyed_by_the_chat_id():
    kept, skipped = parsed(GROUP)
    assert sorted(kept) == [2, 3, 4, 5, 6, 8, 9]
    assert skipped == {1: "service message", 7: "forwarded", 10: "service message"}
    for msg in kept.values():
        assert (msg.visibility, msg.guild_id, msg.channel_id, msg.is_group) == ("public", CHAT, CHAT, None)
        assert msg.channel_name == "Lisbon Board Gamers"


def test_times_are_date_unixtime_in_utc_never_the_offsetless_date():
    kept, _ = parsed(GROUP)
    # 2 November: the exporting machine was at UTC+1 (`date` says 10:01:40); 3 November at UTC+0
    assert kept[2].ts == dt.datetime(2026, 11, 2, 9, 1, 40, tzinfo=UTC)
    assert kept[8].ts == dt.datetime(2026, 11, 3, 21, 47, 19, tzinfo=UTC)
    assert kept[4].edited_ts == dt.datetime(2026, 11, 2, 9, 6, 2, tzinfo=UTC)  # edited_unixtime
    assert kept[2].edited_ts is None


def test_user_ids_names_and_replies():
    kept, _ = parsed(GROUP)
    assert (kept[2].user_id, kept[2].user_name) == (MARTA, "Marta Reis")
    assert (kept[6].user_id, kept[6].user_name) == (INES, "Inês")
    assert kept[3].reply_to == 2 and kept[2].reply_to is None


def test_entities_lose_formatting_and_mentions_read_as_names():
    kept, _ = parsed(GROUP)
    assert kept[3].text == "Count me in @marta_reis, I finally moved to Alfama last week so it's a short walk."
    # a mention by user id is stored as the pipeline's mention markup: erase finds it, the stages name it
    assert kept[4].text == f"<@{TOMAS}> welcome to the neighbourhood! Bring the Prelude expansion please."


def test_sticker_and_photo_with_caption():
    kept, _ = parsed(GROUP)
    assert kept[5].text == "[sticker 👍]"
    assert kept[6].text == "[photo: Our table after last week's game night]"


def test_a_deleted_account_keeps_its_id_and_has_no_name():
    kept, _ = parsed(GROUP)
    assert (kept[8].user_id, kept[8].user_name) == (DELETED, "")  # the stages show a neutral placeholder


def test_personal_chat_is_a_one_to_one_dm_without_the_bots_messages():
    kept, skipped = parsed(PERSONAL, bot_user_ids=[BOT])
    assert sorted(kept) == [3, 5] and skipped == {4: "bot's own message"}
    for msg in kept.values():
        assert (msg.visibility, msg.guild_id, msg.channel_id, msg.is_group) == ("dm", None, TOMAS, False)
        assert msg.user_id == TOMAS
    # without --bot-user-id no private chat can be told to be with the bot: none is read
    assert parsed(PERSONAL) == ({}, {3: "private chat (no --bot-user-id)", 4: "private chat (no --bot-user-id)",
                                     5: "private chat (no --bot-user-id)"})
    # another bot named: the export is no chat with it (the bot never wrote in it)
    assert set(parsed(PERSONAL, bot_user_ids=[BOT + 1])[1].values()) == {"private chat without the bot"}


def test_a_members_full_export_gives_only_their_chat_with_the_bot(tmp_path):
    """Marta's whole-account export: her chat with a friend has the friend's user id as its chat id
    — the key of the friend's own DM with the bot. Only her chat with the bot is a DM."""
    marta = {"from": "Marta", "from_id": f"user{MARTA}"}
    chats = [
        {"name": "Tomás", "type": "personal_chat", "id": TOMAS, "messages": [message(1, "only I wrote", **marta)]},
        {"name": "Inês", "type": "personal_chat", "id": INES, "messages": [
            message(1, "hi Inês", **marta), message(2, "hi", sender=f"user{INES}"),
            message(3, "a bot id wrote here?", sender=f"user{BOT}")]},
        {"name": "MemoBot", "type": "bot_chat", "id": BOT, "messages": [
            message(7, "remember I like tea", **marta), message(8, "noted", sender=f"user{BOT}")]},
        {"name": "BotFather", "type": "bot_chat", "id": 93372553, "messages": [
            message(1, "/token", **marta), message(2, "123:SECRET", sender="user93372553")]},
    ]
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"personal_information": {"user_id": MARTA}, "chats": {"list": chats}}), "utf-8")
    rows = list(read_telegram(path, bot_user_ids=[BOT], include_bots=True))
    kept = [validate(r) for _, r in rows if not isinstance(r, Skipped)]
    assert [(m.channel_id, m.user_id, m.text) for m in kept] == [(MARTA, MARTA, "remember I like tea")]
    assert [(w, str(r)) for w, r in rows if isinstance(r, Skipped)] == [
        (f"chat {TOMAS} message 1", "private chat without the bot"),
        *[(f"chat {INES} message {i}", "private chat without the bot") for i in (1, 2, 3)],
        (f"chat {BOT} message 8", "bot's own message"),
        *[(f"chat 93372553 message {i}", "chat with another bot") for i in (1, 2)]]


def test_one_chats_export_is_a_dm_only_when_the_bot_wrote_in_it(tmp_path):
    members = export(tmp_path, [message(1), message(2, sender=f"user{MARTA}")], "personal_chat", chat_id=TOMAS)
    assert set(parsed(members, bot_user_ids=[BOT])[1].values()) == {"private chat without the bot"}
    three = export(tmp_path, [message(1), message(2, sender=f"user{BOT}"), message(3, sender=f"user{MARTA}")],
                   "personal_chat", chat_id=TOMAS)
    with pytest.raises(InputError, match=f"a one-to-one chat with {TOMAS} has messages from other users"):
        parsed(three, bot_user_ids=[BOT])


def test_link_entity_and_other_media(tmp_path):
    messages = [
        message(1, [{"type": "link", "text": "https://example.org/x"}, " and ",
                    {"type": "text_link", "text": "this page", "href": "https://example.org/y"}]),
        message(2, "", media_type="voice_message", file="voice_messages/audio_1.ogg"),
        message(3, "look", media_type="animation", file="animations/a.mp4"),
        message(4, "", file="files/report.pdf", mime_type="application/pdf"),
        message(5, "", poll={"question": "Saturday or Sunday?", "answers": []}),
        message(6, "", contact_information={"first_name": "Ana", "phone_number": "+351 912 345 678"}),
        message(7, "", photo="(File not included. Change data exporting settings to download.)"),
        message(8, [{"type": "bold", "text": "  "}]),
    ]
    kept, skipped = parsed(export(tmp_path, messages))
    assert {mid: m.text for mid, m in kept.items()} == {
        1: "[link] and this page", 2: "[voice message]", 3: "[GIF: look]", 4: "[file]",
        5: "[poll: Saturday or Sunday?]", 6: "[contact]", 7: "[photo]"}
    assert skipped == {8: "empty"}


def test_posts_sent_as_a_channel_are_skipped_unless_channels_are_asked_for(tmp_path):
    path = export(tmp_path, [message(1, sender=f"channel{CHAT}", **{"from": "G"}), message(2)])
    kept, skipped = parsed(path)
    assert sorted(kept) == [2] and skipped == {1: "sent as a channel"}
    kept, _ = parsed(path, include_channels=True)
    assert (kept[1].user_id, kept[1].user_name) == (CHAT, "G")


@pytest.mark.parametrize("chat_type", ["public_channel", "private_channel"])
def test_channels_are_skipped_unless_asked_for(tmp_path, chat_type):
    path = export(tmp_path, [message(1, sender=f"channel{CHAT}"), message(2, sender=f"channel{CHAT}")], chat_type)
    assert parsed(path) == ({}, {1: "channel", 2: "channel"})
    kept, _ = parsed(path, include_channels=True)
    assert sorted(kept) == [1, 2]
    assert {(m.visibility, m.guild_id, m.channel_id, m.user_id) for m in kept.values()} == {
        ("public", CHAT, CHAT, CHAT)}


def test_saved_messages_and_unknown_chat_types_are_not_chat(tmp_path):
    assert parsed(export(tmp_path, [message(1)], "saved_messages")) == ({}, {1: "saved messages"})
    assert parsed(export(tmp_path, [message(1)], "replies")) == ({}, {1: "unsupported chat"})


def test_restricted_chats(tmp_path):
    kept, _ = parsed(GROUP, restricted_chats=[CHAT])
    assert {(m.visibility, m.guild_id, m.channel_id) for m in kept.values()} == {("restricted", CHAT, CHAT)}
    with pytest.raises(InputError) as err:  # a chat not in the export: a typo would leave the group public
        parsed(GROUP, restricted_chats=[CHAT + 1])
    assert (err.value.source, err.value.where) == ("--restricted-chat", str(CHAT + 1))
    assert err.value.what.startswith("matches no group or channel of this import") and "Bot API" not in str(err.value)
    with pytest.raises(InputError, match=f"looks like a Bot API chat id: pass {CHAT},"):
        parsed(GROUP, restricted_chats=[10**12 + CHAT])  # -1001824466019 without its minus
    with pytest.raises(InputError, match="matches no group or channel"):  # a private chat is no group
        parsed(PERSONAL, bot_user_ids=[BOT], restricted_chats=[TOMAS])
    kept, _ = parsed(GROUP, visibility="restricted")  # every group of the export
    assert {m.visibility for m in kept.values()} == {"restricted"}
    kept, _ = parsed(PERSONAL, bot_user_ids=[BOT], visibility="restricted")  # a DM stays a DM
    assert {m.visibility for m in kept.values()} == {"dm"}


def test_a_chat_with_another_bot_is_skipped_whole(tmp_path):
    """A member's bot_chat with another bot (BotFather, with tokens) is not their DM with this bot;
    keyed by that bot's id, two members' chats with it would share one partition."""
    other_bot = 9000000001
    path = export(tmp_path, [message(1), message(2, sender=f"user{other_bot}")], "bot_chat", chat_id=other_bot)
    for options in ({}, {"include_bots": True}):
        assert parsed(path, bot_user_ids=[BOT], **options) == ({}, {1: "chat with another bot",
                                                                    2: "chat with another bot"})
    assert set(parsed(path)[1].values()) == {"private chat (no --bot-user-id)"}


def test_a_members_own_export_of_their_chat_with_the_bot_is_keyed_as_the_bot_sees_it(tmp_path):
    path = export(tmp_path, [message(1), message(2, sender=f"user{BOT}"), message(3)], "bot_chat", chat_id=BOT,
                  name="MemoBot")
    kept, skipped = parsed(path, bot_user_ids=[BOT])
    assert skipped == {2: "bot's own message"}
    assert {(m.channel_id, m.user_id, m.channel_name) for m in kept.values()} == {(TOMAS, TOMAS, None)}
    two = export(tmp_path, [message(1), message(2, sender="user5")], "bot_chat", chat_id=BOT)
    with pytest.raises(InputError, match="messages from 2 other users"):
        parsed(two, bot_user_ids=[BOT])


def test_a_supergroups_basic_group_history_gets_ids_above_int32(tmp_path):
    """Telegram Desktop shifts the history a supergroup had as a basic group by −10**9."""
    path = export(tmp_path, [message(-999999990), message(4, reply_to_message_id=-999999990)])
    kept, _ = parsed(path)
    assert kept[-999999990].message_id == 2**32 - 999999990 > 2**31
    assert kept[4].reply_to == 2**32 - 999999990


def test_a_reply_to_another_chat_keeps_no_link(tmp_path):
    path = export(tmp_path, [message(5, reply_to_message_id=3, reply_to_peer_id="channel77"),
                             message(6, reply_to_message_id=5, reply_to_peer_id=f"channel{CHAT}")])
    kept, _ = parsed(path)
    assert (kept[5].reply_to, kept[6].reply_to) == (None, 5)


def test_full_account_export_reads_every_chat(tmp_path):
    group, personal = (json.loads(p.read_text(encoding="utf-8")) for p in (GROUP, PERSONAL))
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"about": "…", "personal_information": {"user_id": BOT},
                                "chats": {"about": "…", "list": [group]},
                                "left_chats": {"about": "…", "list": [personal]}}), encoding="utf-8")
    rows = [(where, row) for where, row in read_telegram(path, bot_user_ids=[BOT])]
    assert [where for where, _ in rows if where.endswith(" message 3")] == [
        f"chat {CHAT} message 3", f"chat {TOMAS} message 3"]
    assert len(rows) == 13 and sum(isinstance(r, Skipped) for _, r in rows) == 4


BAD = {
    "no date_unixtime": ([message(1) | {"date_unixtime": None}], "chat 1824466019 message 1",
                         "missing field date_unixtime"),
    "date_unixtime not digits": ([message(1, date_unixtime="2026-11-02T10:00:00")], "chat 1824466019 message 1",
                                 "date_unixtime: expected seconds since 1970"),
    "date_unixtime out of range": ([message(1, date_unixtime="999999999999")], "chat 1824466019 message 1",
                                   "date_unixtime: 999999999999 is out of range"),
    "edited without edited_unixtime": ([message(1, edited="2026-11-02T10:00:00")], "chat 1824466019 message 1",
                                       "edited without edited_unixtime"),
    "from_id without prefix": ([message(1, sender="6021337410")], "chat 1824466019 message 1",
                               'from_id: expected "user" followed by the user id'),
    "no from_id": ([message(1, sender=None)], "chat 1824466019 message 1", "missing field from_id"),
    "text a number": ([message(1, 5)], "chat 1824466019 message 1", "text: expected a string or a list"),
    "entity without text": ([message(1, [{"type": "bold"}])], "chat 1824466019 message 1",
                            "text: expected a string or an entity with a text"),
    "message id a float": ([message(1.5)], "chat 1824466019 messages[0]", "id: id not an integer"),
    "no message type": ([message(2) | {"type": None}], "chat 1824466019 message 2", "missing field type"),
    "message not an object": ([message(1), 7], "chat 1824466019 messages[1]", "expected a message object"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_messages_are_located_errors(tmp_path, case):
    messages, where, what = BAD[case]
    path = export(tmp_path, messages)
    with pytest.raises(InputError) as err:
        parsed(path)
    assert (err.value.source, err.value.where) == (str(path), where)
    assert err.value.what.startswith(what), err.value.what


def test_malformed_exports_are_located_errors(tmp_path):
    path = tmp_path / "result.json"
    for doc, where, what in [
        ([1, 2], "top level", "not a Telegram Desktop JSON export: expected an object"),
        ({"about": "x"}, "top level", "not a Telegram Desktop JSON export: no messages array"),
        ({"chats": {"list": 5}}, "chats", "expected an object with a list of chats"),
        ({"chats": {"list": [{"type": "private_group", "messages": []}]}}, "chats.list[0]", "missing field id"),
        ({"chats": {"list": [{"id": 5, "messages": []}]}}, "chats.list[0]", "missing field type"),
        ({"type": "private_group", "id": "x", "messages": []}, "chat", "id: id not an integer"),
        ({"type": "private_group", "id": 5, "messages": None}, "chat 5", "messages: expected an array"),
        ({"chats": {"list": [{"type": "private_group", "id": 5, "messages": []}] * 2}}, "chats.list[1]",
         "chat 5 is listed twice in this export (also at chats.list[0])"),
    ]:
        path.write_text(json.dumps(doc), encoding="utf-8")
        with pytest.raises(InputError) as err:
            parsed(path)
        assert (err.value.where, err.value.what[:len(what)]) == (where, what), err.value


def test_detection_tells_telegram_from_discord_by_top_level_keys(tmp_path):
    discord = FIXTURES.parent / "discord" / "guild-text-channel.json"
    assert detect_format(GROUP) == detect_format(PERSONAL) == "telegram"
    assert detect_format(discord) == "discord"
    assert export_kind({"chats": {"list": []}}) == "telegram"
    assert export_kind({"messages": [{"id": 1, "type": "message", "date_unixtime": "1"}]}) == "telegram"
    assert export_kind({"guild": {}, "channel": {}, "messages": []}) == "discord"
    assert export_kind({"messages": []}) is None and export_kind([]) is None
    no_suffix = tmp_path / "result"  # no extension: the first line says JSON, the keys say Telegram
    no_suffix.write_bytes(GROUP.read_bytes())
    assert detect_format(no_suffix) == "telegram"
