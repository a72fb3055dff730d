"""DiscordChatExporter JSON import (the exporter's JsonMessageWriter layout).

Root: guild{id,name}, channel{id,type,name}, messages[{id, type, timestamp, timestampEdited,
content, author{id,name,nickname,isBot}, attachments[{fileName}], stickers[{name}],
reference{messageId}}].

Mapping:
- DirectTextChat / DirectGroupTextChat -> visibility dm, guild_id None (the export says guild
  "0"), is_group False (one-to-one: the export says so) / True.
- GuildPrivateThread -> restricted (only invited members can read it).
- GuildPublicThread / GuildNewsThread -> its parent channel's audience (the export's categoryId):
  restricted unless the parent is known public (`parent_public`), so a restricted channel's
  thread imported on its own never lands in the guild's public partition.
- every other channel type -> public, or restricted when the caller says so.
- skipped (yielded as a `Skipped` reason, counted by it in the import report): system messages
  (any type but Default/Reply), bot authors unless include_bots, and messages with no content,
  attachments or stickers.
- attachment-only messages read "[attachment: farm.png]"; attachments next to text are appended.
- user_name = author.nickname or author.name; reply_to = reference.messageId of a Reply in the
  same channel; edited_ts = timestampEdited. Timestamps are converted to UTC when the row is validated.

Ids stay strings here: validation (pipeline/ingest/model.py) parses them as 64-bit integers.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator

from ..errors import InputError
from .jsondoc import load_json
from .model import BOT_AUTHOR, EMPTY, Skipped, kind_of, located_id, message_where
from .shapes import DiscordDoc

DM_TYPES = {"DirectTextChat": False, "DirectGroupTextChat": True}  # type -> is_group
PRIVATE_TYPES = {"GuildPrivateThread"}
THREAD_TYPES = {"GuildPublicThread", "GuildNewsThread"}  # readable by whoever reads the parent
MESSAGE_TYPES = {"Default", "Reply"}
GUILD_VISIBILITIES = (None, "public", "restricted")


SYSTEM, BOT = Skipped("system message"), BOT_AUTHOR
__all__ = ["BOT", "EMPTY", "SYSTEM", "Skipped", "discord_rows", "read_discord"]


def read_discord(
    path: str | os.PathLike, *, visibility: str | None = None, include_bots: bool = False
) -> Iterator[tuple[str, dict[str, Any] | Skipped]]:
    """Yield ("message <id>", row) per exported message; row is a `Skipped` reason for a skipped
    message (system, bot, empty). InputError on anything that is not a readable export."""
    source = os.fspath(path)
    return discord_rows(load_json(source, DiscordDoc), source, visibility=visibility, include_bots=include_bots)


def discord_rows(
    doc: Any, source: str, *, visibility: str | None = None, include_bots: bool = False,
    parent_public: Callable[[int], bool] = lambda _parent: False,
) -> Iterator[tuple[str, dict[str, Any] | Skipped]]:
    """read_discord on a document already read (pipeline/ingest/jsondoc.py) from `source`.
    parent_public(channel id): is that channel known to be public (a thread's parent)?"""
    if visibility not in GUILD_VISIBILITIES:
        raise ValueError(f"visibility for a Discord export must be public or restricted, not {visibility!r}")
    if not isinstance(doc, dict):
        raise InputError(source, "top level", "not a DiscordChatExporter JSON export: expected an object")
    return _rows(doc, source, visibility, include_bots, parent_public)


def _rows(doc: dict[str, Any], source: str, visibility: str | None, include_bots: bool,
          parent_public: Callable[[int], bool]):
    guild = _section(doc, "guild", source)
    channel = _section(doc, "channel", source)
    messages = doc.get("messages")
    if not isinstance(messages, list):
        raise InputError(source, "top level", "not a DiscordChatExporter JSON export: no messages array")

    channel_type = _field(channel, "type", source, "channel")
    channel_id = located_id(_field(channel, "id", source, "channel"), source, "channel", "id")
    channel_name = channel.get("name")
    if channel_type in DM_TYPES:
        vis, guild_id, is_group = "dm", None, DM_TYPES[channel_type]
    else:
        guild_id = located_id(_field(guild, "id", source, "guild"), source, "guild", "id")
        if guild_id == 0:
            raise InputError(source, "guild", f"guild id 0 is for direct messages, but the channel type is {channel_type}")
        if channel_type in PRIVATE_TYPES:
            vis = "restricted"
        elif channel_type in THREAD_TYPES and not _parent_known_public(channel, source, parent_public):
            vis = "restricted"  # fail closed: a thread of a restricted (or unknown) channel
        else:
            vis = visibility or "public"
        is_group = None  # only a DM has a kind

    for index, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise InputError(source, f"messages[{index}]", f"expected a message object, got {kind_of(msg)}")
        raw_id = msg.get("id")
        where = message_where(raw_id, index)
        if raw_id is None:
            raise InputError(source, where, "missing field id")

        mtype = _field(msg, "type", source, where)
        if mtype not in MESSAGE_TYPES:
            yield where, SYSTEM  # join, pin, call, rename, ...
            continue
        author = msg.get("author")
        if not isinstance(author, dict):
            raise InputError(source, where, "missing field author")
        if author.get("isBot") and not include_bots:
            yield where, BOT
            continue

        text = _text(msg, source, where)
        if not text.strip():
            yield where, EMPTY
            continue

        reply_to = None
        if mtype == "Reply":
            reference = msg.get("reference")
            # reply_to names a message of this channel; a reply quoting another channel (whose
            # audience may differ) keeps no link to it
            if isinstance(reference, dict) and str(reference.get("channelId") or channel_id) == str(channel_id):
                reply_to = reference.get("messageId")

        yield where, {
            "message_id": raw_id,
            "guild_id": guild_id,
            "channel_id": channel_id,
            "visibility": vis,
            "is_group": is_group,
            "channel_name": channel_name,
            "user_id": _field(author, "id", source, where, "author."),
            "user_name": author.get("nickname") or _field(author, "name", source, where, "author."),
            "text": text,
            "ts": _field(msg, "timestamp", source, where),
            "edited_ts": msg.get("timestampEdited"),
            "reply_to": reply_to,
        }


def _parent_known_public(channel: dict[str, Any], source: str, parent_public: Callable[[int], bool]) -> bool:
    parent = channel.get("categoryId")  # a thread's parent channel (DiscordChatExporter's naming)
    return parent is not None and parent_public(located_id(parent, source, "channel", "categoryId"))


def _text(msg: dict[str, Any], source: str, where: str) -> str:
    content = msg.get("content") or ""
    if not isinstance(content, str):
        raise InputError(source, where, f"content: expected text, got {kind_of(content)}")
    markers = []
    for att in msg.get("attachments") or ():
        if isinstance(att, dict):
            markers.append(f"[attachment: {att.get('fileName') or 'file'}]")
    for sticker in msg.get("stickers") or ():
        if isinstance(sticker, dict):
            markers.append(f"[sticker: {sticker.get('name') or 'sticker'}]")
    if not markers:
        return content
    if not content.strip():
        return " ".join(markers)
    return content + "\n" + " ".join(markers)


def _section(doc: dict[str, Any], key: str, source: str) -> dict[str, Any]:
    value = doc.get(key)
    if not isinstance(value, dict):
        raise InputError(source, "top level", f"not a DiscordChatExporter JSON export: no {key} object")
    return value


def _field(obj: dict[str, Any], key: str, source: str, where: str, prefix: str = "") -> Any:
    value = obj.get(key)
    if value is None:
        raise InputError(source, where, f"missing field {prefix}{key}")
    return value

