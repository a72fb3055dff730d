"""The words of a Telegram Desktop export's message (pipeline/ingest/telegram.py): its `text` (a
string, or a list of strings and entities) with the formatting dropped, and its media as a marker
("[sticker 👍]", "[photo: caption]", "[voice message]", …)."""

from __future__ import annotations

from typing import Any

from ..errors import IdError, InputError
from .model import kind_of, parse_id

# media_type of a document -> what the message reads
MEDIA = {"animation": "GIF", "video_file": "video", "video_message": "video message",
         "voice_message": "voice message", "audio_file": "audio"}
# other media, by the key that marks it
OTHER_MEDIA = (("contact_information", "contact"), ("location_information", "location"), ("place_name", "location"),
               ("game_title", "game"), ("invoice_information", "invoice"))


def message_text(msg: dict, source: str, where: str) -> str:
    """The message's words, with its media as a marker ("[photo: caption]")."""
    words = _words(msg.get("text", ""), source, where)
    label = _media(msg)
    poll = msg.get("poll")
    if isinstance(poll, dict) and not words.strip() and isinstance(poll.get("question"), str):
        words = poll["question"]
    if label is None:
        return words
    caption = words.strip()
    return f"[{label}: {caption}]" if caption else f"[{label}]"


def _words(text: Any, source: str, where: str) -> str:
    if isinstance(text, str):
        return text
    if not isinstance(text, list):
        raise InputError(source, where,
                         f"text: expected a string or a list of strings and entities, got {kind_of(text)}")
    parts = []
    for part in text:
        if isinstance(part, str):
            parts.append(part)
            continue
        shown = part.get("text") if isinstance(part, dict) else None
        if not isinstance(shown, str):
            raise InputError(source, where, f"text: expected a string or an entity with a text, got {kind_of(part)}")
        kind = part.get("type")
        if kind == "mention_name":  # the name shown, with the user id beside it
            parts.append(_mention(part, shown))
        elif kind == "link":
            parts.append("[link]")
        else:  # plain, mention (@username), bold, italic, code, text_link (its words), hashtag, …
            parts.append(shown)
    return "".join(parts)


def _media(msg: dict) -> str | None:
    if "photo" in msg:
        return "photo"
    media_type = msg.get("media_type")
    if media_type == "sticker":
        emoji = msg.get("sticker_emoji")
        return f"sticker {emoji}" if isinstance(emoji, str) and emoji.strip() else "sticker"
    if media_type in MEDIA:
        return MEDIA[media_type]
    if "file" in msg:
        return "file"
    if "poll" in msg:
        return "poll"
    return next((label for key, label in OTHER_MEDIA if key in msg), None)



def _mention(entity: dict, shown: str) -> str:
    """A mention of a user by id, as the rest of the pipeline stores one: `<@id>`, shown as the
    name the user has in the partition at the message's time (pipeline/summarize/markup.py), and
    found by `user erase`. Without a user id: the name as shown."""
    try:
        return f"<@{parse_id(entity.get('user_id'))}>"
    except IdError:
        return shown if shown.startswith("@") else "@" + shown
