"""What the export readers use of a JSON export (jsondoc.load_json `shape`): a document is decoded
with these keys only, every key optional and every value as it is (the readers check them and
name what is wrong), so what an export repeats on every message and no reader uses — an author's
roles and avatar, embeds, reactions (DiscordChatExporter); text_entities, photo and file details
(Telegram Desktop) — is never built. A document that does not decode so is read whole.

Measured with `mempipe import` (SQLite, /usr/bin/time; the same rows either way): a 266 MB
DiscordChatExporter export of 300,000 messages peaked at 1,247 MB in 7.7 s read whole, 685 MB in
5.2 s read so.

`shape_of` picks the shape by how the file begins, as the exporters write it. Each shape keeps
every key `jsondoc.export_kind` looks at, so a document is told apart (and a wrong `--format`
named) as if it had been read whole.
"""

from __future__ import annotations

import re
from typing import Any, TypedDict

from .telegram_text import OTHER_MEDIA

# ------------------------------------------------------------------ DiscordChatExporter


class _Author(TypedDict, total=False):
    id: Any
    name: Any
    nickname: Any
    isBot: Any


class _Named(TypedDict, total=False):  # an attachment (fileName) or a sticker (name)
    fileName: Any
    name: Any


class _Reference(TypedDict, total=False):
    messageId: Any
    channelId: Any


class _DiscordMessage(TypedDict, total=False):
    id: Any
    type: Any
    timestamp: Any
    timestampEdited: Any
    content: Any
    author: _Author
    attachments: list[_Named] | None
    stickers: list[_Named] | None
    reference: _Reference | None
    date_unixtime: Any  # (export_kind's mark of a Telegram message)


class DiscordDoc(TypedDict, total=False):
    guild: Any
    channel: Any
    messages: list[_DiscordMessage]
    chats: Any  # (export_kind's marks of a Telegram export)
    left_chats: Any
    type: Any
    id: Any


# ------------------------------------------------------------------ Telegram Desktop


# (the functional form: Telegram's "from" is no identifier). Media are told by the key that marks
# them (telegram_text.py `_media`): those keys are kept, their values as they are.
_TelegramMessage = TypedDict("_TelegramMessage", {  # type: ignore[misc]
    "id": Any, "type": Any, "date_unixtime": Any, "edited": Any, "edited_unixtime": Any, "from": Any, "from_id": Any,
    "forwarded_from": Any, "text": Any, "poll": Any, "media_type": Any, "sticker_emoji": Any, "photo": Any,
    "file": Any, "reply_to_message_id": Any, "reply_to_peer_id": Any, **{key: Any for key, _label in OTHER_MEDIA},
}, total=False)


class _TelegramChat(TypedDict, total=False):
    name: Any
    type: Any
    id: Any
    messages: list[_TelegramMessage]


class _TelegramChats(TypedDict, total=False):
    list: list[_TelegramChat]


class TelegramDoc(_TelegramChat, total=False):
    """A full-account export (personal_information, chats.list, left_chats.list) or one chat."""

    personal_information: Any
    chats: _TelegramChats | None
    left_chats: _TelegramChats | None
    guild: Any  # (export_kind's marks of a DiscordChatExporter export)
    channel: Any


_DISCORD_START = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"(?:guild|channel)"\s*:')
# a chat's export begins with its name, type and id; the whole account's with "about"
_TELEGRAM_START = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"(?:about|personal_information|chats|name|type|id)"\s*:')


def shape_of(source: str) -> type | None:
    """The shape to read `source` in, by how it begins (None: read it whole)."""
    try:
        with open(source, "rb") as fh:
            head = fh.read(256)
    except OSError:  # load_json says why it cannot be read
        return None
    if _DISCORD_START.match(head):
        return DiscordDoc
    if _TELEGRAM_START.match(head):
        return TelegramDoc
    return None
