"""JSON export files (DiscordChatExporter's and Telegram Desktop's): read one whole document, and
tell which exporter wrote it by its top-level keys.

A document is read once: by msgspec (several times faster); a document it refuses is read again
by the json module, so that every error is json's, located by its line. Telegram Desktop writes an
ASCII control character in a string as `\\xHH`, which is not JSON (its SerializeString; tdesktop
issue #27571): a refused document has those read as the `\\u00HH` they mean before either reading.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

import msgspec

from ..errors import InputError

ExportKind = Literal["discord", "telegram"]
# `\xHH` after an even run of backslashes (an odd one ends in an escaped backslash, then text "x")
_HEX_ESCAPE = re.compile(rb"(?<!\\)((?:\\\\)*)\\x([0-9A-Fa-f]{2})")


def load_json(source: str, shape: Any = None) -> Any:
    """The document in the file; InputError naming the line of bad UTF-8 or JSON. `shape`: a
    TypedDict of the keys a reader uses (shapes.py): a document that has that shape is decoded
    with those keys only; one that has not is read whole, as without it, so that its reader names
    what is wrong."""
    try:
        with open(source, "rb") as fh:
            data = fh.read()
        try:
            return _decoded(data, shape)
        except (msgspec.DecodeError, UnicodeDecodeError):
            pass
        if b"\\x" in data:  # (line numbers stay: no newline is added or removed)
            data = _HEX_ESCAPE.sub(rb"\1\\u00\2", data)
            try:
                return _decoded(data, shape)
            except (msgspec.DecodeError, UnicodeDecodeError):
                pass
        return json.loads(data.decode("utf-8-sig"))
    except OSError as exc:
        raise InputError(source, "cannot open", exc.strerror or str(exc)) from None
    except UnicodeDecodeError as exc:  # located: the line holding the first bad byte
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(source, f"line {line}", f"not UTF-8 text ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise InputError(source, f"line {exc.lineno}", f"invalid JSON: {exc.msg} (column {exc.colno})") from None


def _decoded(data: bytes, shape: Any) -> Any:
    """msgspec's reading: in `shape` when the document has it, else whole (DecodeError if neither)."""
    body = data.removeprefix(b"\xef\xbb\xbf")
    if shape is not None:
        try:
            return msgspec.json.decode(body, type=shape)
        except (msgspec.DecodeError, UnicodeDecodeError):  # (a ValidationError too: another shape)
            pass
    return msgspec.json.decode(body)


def export_kind(doc: Any) -> ExportKind | None:
    """Which exporter wrote the document, by its top-level keys, or None for neither.

    DiscordChatExporter: `guild`, `channel`, `messages`. Telegram Desktop: one chat is `name`,
    `type`, `id`, `messages` (each message with `type` and `date_unixtime`); a full-account export
    has `chats: {list: […]}` (and `left_chats`). A document with some of one exporter's keys is
    taken as that exporter's, so that its reader names what is missing."""
    if not isinstance(doc, dict):
        return None
    if "guild" in doc or "channel" in doc:
        return "discord"
    if "chats" in doc or "left_chats" in doc or ("messages" in doc and ("type" in doc or "id" in doc)):
        return "telegram"
    messages = doc.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[0], dict) and "date_unixtime" in messages[0]:
        return "telegram"
    return None
