"""Telegram Desktop JSON export import (`result.json`: a chat's "Export chat history", or the
whole account's "Export Telegram data", format JSON).

Layout (Telegram Desktop's JSON writer): one chat is `{name, type, id, messages[…]}`; a
full-account export lists chats as `{"chats": {"list": [chat, …]}}` and the chats the account
left as `{"left_chats": {"list": […]}}`. A message: `id` (unique within its chat only), `type`
("message", "service", "unsupported"), `date` (the exporting machine's local time, no offset:
never used), `date_unixtime` and `edited_unixtime` (seconds, as text), `from`, `from_id`
("user<id>", "channel<id>", "chat<id>"), `text` (a string, or a list of strings and entity
objects `{type, text, user_id?, href?}`), `reply_to_message_id` (`reply_to_peer_id` when the
replied message is in another chat), `forwarded_from`, and media keys (`photo`, `file`,
`media_type`, `sticker_emoji`, `poll`, …).

Mapping (README, "Telegram"):
- a group or supergroup is one audience: guild id = channel id = the chat id, `public`, or
  `restricted` for a chat in `restricted_chats` (or with visibility "restricted"); channels are
  skipped unless `include_channels` (then mapped like a group).
- `personal_chat` / `bot_chat` -> a one-to-one DM (`dm`, no guild, is_group False) only when the
  bot (`bot_user_ids`) is one side of it (`_dm_key`): the chat id is the bot's (a member's export
  of their chat with it: keyed by the member, the chat id the bot sees), or the export is the
  bot's own (personal_information.user_id a bot id; keyed by the chat id, the other person's user
  id), or — one chat's export — a bot id wrote in it. Any other private chat is skipped whole: a
  member's chat with a friend has the friend's user id as its chat id, the key of the friend's
  own DM with the bot, so importing it would hand one person's private talk to another's DM.
- message id -> message_id within the chat (the writer keys messages by (channel, id)); the
  history a supergroup had as a basic group is exported with ids shifted below zero (id −
  1,000,000,000), stored as 2**32 + id: above every Telegram message id (int32), so still unique.
- skipped, counted by reason: service messages, unsupported ones, the bot's own messages
  (`bot_user_ids`), forwarded posts (not the sender's words), posts sent as a channel or as the
  group (unless include_channels), empty ones, and whole chats: private chats without the bot,
  chats with another bot, channels (unless asked for), saved messages, or of a type not known.
  include_bots changes nothing here: an export marks no bot but a bot_chat's, and the only
  bot_chat imported is the one with the bot, whose messages are its own.
- text (telegram_text.py): entities lose their formatting; `mention_name` (a user id and the
  text shown) is stored as `<@user id>`, like a Discord mention; an @username mention stays as written, a bare link reads "[link]". Media read
  "[sticker 👍]", "[photo: caption]", "[voice message]", …
- from: null (a deleted account) keeps its user id and no name: the stages show the pipeline's
  neutral placeholder ("member N").

Ids are ints here; each row is validated later as a MessageIn.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..errors import InputError
from ..ids import bare_chat_id
from .jsondoc import load_json
from .model import EMPTY, TS_MAX, TS_MIN, Skipped, kind_of, located_id, message_where, parse_id, shown
from .shapes import TelegramDoc
from .telegram_text import message_text

GROUP_TYPES = {"private_group", "private_supergroup", "public_supergroup"}
CHANNEL_TYPES = {"private_channel", "public_channel"}
DM_TYPES = {"personal_chat", "bot_chat"}
MIGRATED_SHIFT = 2**32  # a basic group's history inside its supergroup's export: id − 10**9 < 0
_PEER = re.compile(r"(user|channel|chat)([0-9]+)", re.ASCII)
SERVICE, UNSUPPORTED = Skipped("service message"), Skipped("unsupported message")
OWN = Skipped("bot's own message")
# private chats that are not a DM with the bot (fail closed: nothing of them is read)
NO_BOT_ID = Skipped("private chat (no --bot-user-id)")  # no bot named: no chat can be told to be with it
WITHOUT_BOT = Skipped("private chat without the bot")  # e.g. a member's chat with a friend, in their export
OTHER_BOT = Skipped("chat with another bot")  # a bot_chat whose bot is not one of bot_user_ids (BotFather, …)
FORWARDED, AS_CHANNEL = Skipped("forwarded"), Skipped("sent as a channel")
CHANNEL, SAVED, OTHER_CHAT = Skipped("channel"), Skipped("saved messages"), Skipped("unsupported chat")


@dataclass(frozen=True)
class TelegramOptions:
    """visibility "restricted" marks every group and channel restricted; restricted_chats, these
    chats; bot_user_ids: the bot's own account(s), whose messages are never chat, and without which
    no private chat is imported (a DM is a chat with the bot: `_dm_key`)."""

    visibility: str | None = None
    restricted_chats: frozenset[int] = frozenset()
    bot_user_ids: frozenset[int] = frozenset()
    include_bots: bool = False
    include_channels: bool = False

    def __post_init__(self):
        if self.visibility not in (None, "public", "restricted"):
            raise ValueError(f"visibility for a Telegram export must be public or restricted, not {self.visibility!r}")
        for name in ("restricted_chats", "bot_user_ids"):
            ids = frozenset(parse_id(i, name[:-1].replace("_", " ")) for i in getattr(self, name))
            object.__setattr__(self, name, ids)


@dataclass
class Found:
    """What the Telegram exports of one import held (over all its files): the ids of its groups
    and channels, and the users seen (senders, private chats' ids, the export's owner)."""

    chats: set[int] = field(default_factory=set)
    users: set[int] = field(default_factory=set)

    def check(self, options: TelegramOptions) -> list[str]:
        """InputError for a restricted chat that is no group or channel of the import (fail
        closed: a typo would leave the staff room public); a warning per bot id never seen."""
        for chat_id in sorted(options.restricted_chats - self.chats):
            bare = bare_chat_id(str(chat_id))
            hint = f"; it looks like a Bot API chat id: pass {bare}, the id Telegram Desktop writes" \
                if bare is not None else ""
            raise InputError("--restricted-chat", str(chat_id), "matches no group or channel of this import "
                                                                f"(nothing was imported){hint}")
        return [f"--bot-user-id {bot} is in no chat of this import" for bot in sorted(options.bot_user_ids - self.users)]


def read_telegram(
    path: str | os.PathLike, *, visibility: str | None = None, restricted_chats: Collection[int] = (),
    bot_user_ids: Collection[int] = (), include_bots: bool = False, include_channels: bool = False,
) -> Iterator[tuple[str, dict[str, Any] | Skipped]]:
    """Yield ("chat <chat id> message <id>", row) per exported message of every chat; row is a
    `Skipped` reason for a skipped one. InputError on anything that is not a readable export."""
    options = TelegramOptions(visibility, restricted_chats, bot_user_ids, include_bots, include_channels)
    source = os.fspath(path)
    return telegram_rows(load_json(source, TelegramDoc), source, options)


def telegram_rows(doc: Any, source: str, options: TelegramOptions,
                  found: Found | None = None) -> Iterator[tuple[str, dict[str, Any] | Skipped]]:
    """read_telegram on a document already read (pipeline/ingest/jsondoc.py) from `source`.
    `found`: gathers what the import's exports hold, checked by the caller once every file is
    read (Found.check); without it, this document is checked when it is read to its end."""
    chats = _chats(doc, source)
    return _rows(chats, source, options, _owner(doc, source), found)


def _rows(chats: list[tuple[str, Any]], source: str, options: TelegramOptions, owner: int | None,
          found: Found | None):
    alone = found is None
    found = Found() if found is None else found
    if owner is not None:
        found.users.add(owner)
    seen: dict[int, str] = {}  # chat id -> where it was listed: one export lists a chat once
    for label, chat in chats:
        yield from _chat_rows(chat, label, source, options, seen, owner, found)
    if alone:
        found.check(options)


def _owner(doc: Any, source: str) -> int | None:
    """Whose export it is: a full-account export's personal_information.user_id (None: not said)."""
    info = doc.get("personal_information") if isinstance(doc, dict) else None
    if not isinstance(info, dict) or info.get("user_id") is None:
        return None
    return located_id(info["user_id"], source, "personal_information", "user_id")


def _chats(doc: Any, source: str) -> list[tuple[str, Any]]:
    """(where, chat) for each chat of the export: the document itself, or chats.list (and left_chats.list)."""
    if not isinstance(doc, dict):
        raise InputError(source, "top level",
                         f"not a Telegram Desktop JSON export: expected an object, got {kind_of(doc)}")
    if "chats" not in doc and "left_chats" not in doc:
        if "messages" not in doc and "type" not in doc:
            raise InputError(source, "top level", "not a Telegram Desktop JSON export: no messages array (one chat) "
                                                  "and no chats.list (the whole account); export it again as JSON")
        return [("chat", doc)]
    chats = []
    for key in ("chats", "left_chats"):
        section = doc.get(key)
        if section is None:
            continue
        listed = section.get("list") if isinstance(section, dict) else None
        if not isinstance(listed, list):
            raise InputError(source, key,
                             f'expected an object with a list of chats ({{"list": [...]}}), got {kind_of(section)}')
        chats += [(f"{key}.list[{i}]", chat) for i, chat in enumerate(listed)]
    return chats


def _chat_rows(chat: Any, label: str, source: str, options: TelegramOptions, seen: dict[int, str],
               owner: int | None, found: Found):
    if not isinstance(chat, dict):
        raise InputError(source, label, f"expected a chat object, got {kind_of(chat)}")
    for key in ("type", "id"):
        if key not in chat:
            raise InputError(source, label, f"missing field {key} (the chat's {key})")
    chat_type = chat["type"]  # null: a kind Telegram Desktop could not name
    chat_id = located_id(chat["id"], source, label, "id")
    where_chat = f"chat {chat_id}"
    messages = chat.get("messages")
    if not isinstance(messages, list):
        raise InputError(source, where_chat, f"messages: expected an array of messages, got {kind_of(messages)}")

    skip = None
    if chat_type in GROUP_TYPES or chat_type in CHANNEL_TYPES:
        found.chats.add(chat_id)
    if chat_type in DM_TYPES:
        found.users.add(chat_id)
        guild_id, vis, is_group = None, "dm", False
        channel_id = _dm_key(chat_type, chat_id, messages, source, where_chat, options.bot_user_ids, owner)
        if isinstance(channel_id, Skipped):
            skip = channel_id
    elif chat_type in GROUP_TYPES or (chat_type in CHANNEL_TYPES and options.include_channels):
        restricted = options.visibility == "restricted" or chat_id in options.restricted_chats
        guild_id, channel_id, vis, is_group = chat_id, chat_id, "restricted" if restricted else "public", None
    else:
        skip = CHANNEL if chat_type in CHANNEL_TYPES else SAVED if chat_type == "saved_messages" else OTHER_CHAT
    if skip is not None:  # a whole chat left out: nothing of it is read further
        for index, msg in enumerate(messages):
            yield message_where(msg.get("id") if isinstance(msg, dict) else None, index, f"{where_chat} "), skip
        return
    if chat_id in seen:
        raise InputError(source, label, f"chat {chat_id} is listed twice in this export (also at {seen[chat_id]}): "
                                        "two chats would share one id; export them one at a time")
    seen[chat_id] = label

    name = chat.get("name") if channel_id == chat_id else None  # a DM keyed by the member: not the bot's name
    for index, msg in enumerate(messages):
        where = message_where(msg.get("id") if isinstance(msg, dict) else None, index, f"{where_chat} ")
        if not isinstance(msg, dict):
            raise InputError(source, where, f"expected a message object, got {kind_of(msg)}")
        if "id" not in msg:
            raise InputError(source, where, "missing field id")
        message_id = _message_id(msg["id"], source, where, "id")
        mtype = msg.get("type")
        if mtype != "message":
            if mtype is None:
                raise InputError(source, where, 'missing field type ("message" or "service")')
            yield where, SERVICE if mtype == "service" else UNSUPPORTED
            continue
        kind, sender = _peer(msg.get("from_id"), source, where, "from_id")
        if kind == "user" and sender in options.bot_user_ids:
            found.users.add(sender)
            yield where, OWN
        elif kind != "user" and not options.include_channels:
            yield where, AS_CHANNEL
        elif "forwarded_from" in msg:  # present (null for a hidden account) on every forward
            yield where, FORWARDED
        elif not (text := message_text(msg, source, where)).strip():
            yield where, EMPTY
        else:
            yield where, {
                "message_id": message_id, "guild_id": guild_id, "channel_id": channel_id, "visibility": vis,
                "is_group": is_group, "channel_name": name, "user_id": sender,
                "user_name": _name(msg, source, where), "text": text,
                "ts": _time(msg, "date_unixtime", source, where),
                "edited_ts": _time(msg, "edited_unixtime", source, where) if _edited(msg, source, where) else None,
                "reply_to": _reply_to(msg, chat_id, source, where),
            }


def _dm_key(chat_type: str, chat_id: int, messages: list, source: str, where: str, bots: frozenset[int],
            owner: int | None) -> int | Skipped:
    """A private chat is a DM only when the bot is one side of it (fail closed: anything else is
    skipped, by reason). Its key is the Bot API's chat id of the member's DM with the bot, the
    member's user id: the chat id is the other side, so a chat with the bot (a member's export of
    it) is keyed by the member who wrote in it; a chat in the bot's own export (its account's
    full export, or a chat a bot wrote in) by the chat id. Any other private chat — a member's
    chat with a friend, whose chat id is that friend's id and so the key of the friend's own DM —
    and a bot_chat with another bot are not the bot's conversations."""
    if not bots:
        return NO_BOT_ID
    senders = _user_senders(messages)
    if chat_id in bots:  # a member's own export of their chat with the bot
        members = senders - bots
        if len(members) > 1:
            raise InputError(source, where, f"a one-to-one chat with the bot {chat_id} has messages from "
                                            f"{len(members)} other users ({', '.join(map(str, sorted(members)))}): "
                                            "not a DM export")
        return members.pop() if members else owner if owner is not None and owner not in bots else chat_id
    if chat_type == "bot_chat":
        return OTHER_BOT
    if owner is not None:  # a full-account export: the bot's own, or a member's
        return chat_id if owner in bots else WITHOUT_BOT
    if not senders & bots:  # one chat's export, where the bot never wrote: not a chat with it
        return WITHOUT_BOT
    if others := senders - bots - {chat_id}:
        raise InputError(source, where, f"a one-to-one chat with {chat_id} has messages from other users "
                                        f"({', '.join(map(str, sorted(others)))}): not a DM export")
    return chat_id


def _user_senders(messages: list) -> set[int]:
    """The user ids that wrote a message of the chat (the exact checks come later, per message)."""
    senders = set()
    for msg in messages:
        if isinstance(msg, dict) and msg.get("type") == "message" and isinstance(msg.get("from_id"), str):
            match = _PEER.fullmatch(msg["from_id"])
            if match and match[1] == "user" and len(match[2]) <= 19:
                senders.add(int(match[2]))
    return senders


def _message_id(value: Any, source: str, where: str, key: str) -> int:
    """A message id of the chat; a migrated basic group's (below zero) moved above the int32 ids."""
    if type(value) is int and -(2**31) <= value < 0:
        return MIGRATED_SHIFT + value
    return located_id(value, source, where, key)


def _peer(value: Any, source: str, where: str, key: str) -> tuple[str, int]:
    """("user" | "channel" | "chat", id) from "user123…"."""
    match = _PEER.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        if value is None:
            raise InputError(source, where, f"missing field {key}")
        raise InputError(source, where, f'{key}: expected "user" followed by the user id (or channel…, chat…), '
                                        f"got {shown(value)}")
    return match[1], located_id(match[2], source, where, key)


def _time(msg: dict, key: str, source: str, where: str) -> dt.datetime:
    """An aware UTC datetime from seconds since 1970 (text or a number)."""
    value = msg.get(key)
    if value is None:
        raise InputError(source, where, f"missing field {key}: the true time of a message (its `date` has no UTC "
                                        "offset and is not used); export again with a current Telegram Desktop")
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 15:
        seconds = int(value)
    elif type(value) is int:
        seconds = value
    else:
        raise InputError(source, where, f"{key}: expected seconds since 1970 as digits, got {shown(value)}")
    try:
        ts = TS_MIN + dt.timedelta(seconds=seconds)
    except OverflowError:
        ts = TS_MAX
    if not TS_MIN <= ts < TS_MAX:
        raise InputError(source, where, f"{key}: {seconds} is out of range: a time from 1970 to 9998 (UTC)")
    return ts


def _edited(msg: dict, source: str, where: str) -> bool:
    if "edited_unixtime" in msg:
        return True
    if "edited" in msg:
        raise InputError(source, where, "edited without edited_unixtime: the edit's true time is missing; "
                                        "export again with a current Telegram Desktop")
    return False


def _reply_to(msg: dict, chat_id: int, source: str, where: str) -> int | None:
    """The replied message, when it is in this chat (reply_to_peer_id names another chat's)."""
    reply = msg.get("reply_to_message_id")
    if reply is None:
        return None
    peer = msg.get("reply_to_peer_id")
    if peer is not None and _peer(peer, source, where, "reply_to_peer_id")[1] != chat_id:
        return None
    return _message_id(reply, source, where, "reply_to_message_id")


def _name(msg: dict, source: str, where: str) -> str:
    name = msg.get("from")
    if name is None:
        return ""  # a deleted account: no name, the stages' neutral placeholder
    if not isinstance(name, str):
        raise InputError(source, where, f"from: expected the sender's name as text, got {kind_of(name)}")
    return name
