"""Discord markup rendered as plain text before a message reaches a summarizer, so that no raw id
does (README, "No raw ids reach the model"): user, role and channel mentions, custom emoji,
slash-command mentions, message links, attachment URLs, and any other id-sized number."""

from __future__ import annotations

import re
from typing import Mapping

_USER = re.compile(r"<@!?(\d+)>")
_ROLE = re.compile(r"<@&\d+>")
_CHANNEL = re.compile(r"<#(\d+)>")
_EMOJI = re.compile(r"<a?:(\w{1,64}):\d+>")
_COMMAND = re.compile(r"</([-\w]{1,32}(?: [-\w]{1,32}){0,2}):\d+>")
_HOST = r"https?://(?:(?:www|ptb|canary)\.)?discord(?:app)?\.com"
_LINK = re.compile(rf"<?{_HOST}/channels/(?:\d+|@me)(?:/\d+){{1,2}}>?")
_ATTACHMENT = re.compile(r"<?https?://(?:cdn\.discordapp\.com|media\.discordapp\.net)/(?:attachments|ephemeral-attachments)/\S+")
# Snowflakes are 17-20 digits; 15 leaves a margin and spares phone and order numbers.
_NUMBER = re.compile(r"\d{15,}")


def mentioned_ids(text: str) -> set[int]:
    """The users a message mentions (their names are needed to render it)."""
    return {int(m) for m in _USER.findall(text)} if "<@" in text else set()


def mentioned_channels(text: str) -> set[int]:
    return {int(m) for m in _CHANNEL.findall(text)} if "<#" in text else set()


def render(text: str, names: Mapping[int, str], channels: Mapping[int, str | None] | None = None) -> str:
    """`names`: display names by user id; `channels`: the channels readable where the message was
    posted, by id, with their names (None: no name known). Any other channel is `#channel`, so a
    restricted channel's name never reaches an audience that cannot read it."""
    if "<" not in text and "://" not in text:  # no pattern but the number's can match: most chat
        return _NUMBER.sub("[number]", text)
    channels = channels or {}
    text = _LINK.sub("[link]", text)
    text = _ATTACHMENT.sub("[attachment]", text)
    text = _ROLE.sub("@role", text)
    text = _CHANNEL.sub(lambda m: "#" + (channels.get(int(m.group(1))) or "channel"), text)
    text = _EMOJI.sub(r":\1:", text)
    text = _COMMAND.sub(r"/\1", text)
    text = _USER.sub(lambda m: "@" + names.get(int(m.group(1)), "someone"), text)  # last: names are not markup
    return _NUMBER.sub("[number]", text)
