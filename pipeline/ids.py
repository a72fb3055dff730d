"""Platform ids — guilds, channels, users, messages (Discord snowflakes, Telegram chat and user
ids) — are 64-bit integers stored as BIGINT. They are checked once, where they come in (scopes,
`get_context`, the CLI, every importer), by `parse_id`; a bad one is an IdError and never reaches
the database, where it would fail as an outage or, as a float, be silently rounded."""

from __future__ import annotations

import operator
from typing import Any

from .errors import IdError

MAX_ID = 2**63 - 1


def shown(value: Any) -> str:
    """A value as an error message quotes it: its repr, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def parse_id(value: Any, what: str = "id") -> int:
    """An id from an int (or anything int-like but a bool) or a string of ASCII digits, within
    0..2**63-1. Floats are refused even when whole: 1.16e18 has already lost the id's last digits."""
    if isinstance(value, str):
        # ASCII digits only: str.isdigit() alone also accepts "²" and "١٢", int() also " 1", "+1", "1_0"
        if not (value.isascii() and value.isdigit()):
            raise IdError(f"{what} not an integer: {shown(value)}{_bot_api_hint(value)}")
        # more digits than 2**63-1 has: too large, without converting (int() refuses > 4300 digits)
        number = int(value) if len(value) <= 19 or len(value.lstrip("0")) <= 19 else MAX_ID + 1
        if number <= MAX_ID:  # the common case (a snowflake has 19 digits); digits are never negative
            return number
    elif type(value) is int:
        number = value
    elif isinstance(value, (bool, float)):
        raise IdError(f"{what} not an integer: {shown(value)}")
    else:
        try:
            number = operator.index(value)
        except TypeError:
            raise IdError(f"{what} not an integer: {shown(value)}") from None
    if number < 0:
        raise IdError(f"{what} not an integer: {shown(value)} is negative{_bot_api_hint(str(number))}")
    if number > MAX_ID:
        raise IdError(f"{what} not an integer: {shown(value)} is larger than 2**63-1")
    return number


def _bot_api_hint(text: str) -> str:
    """For a negative id that reads as a Telegram Bot API supergroup or channel id (-100 and ten
    digits, as a bot sees the chat): the id to use instead, the one Telegram Desktop exports and
    mempipe keys the chat by. Not for a short negative number: that could be anything."""
    bare = bare_chat_id(text) if text.startswith("-100") and len(text) == 14 else None
    if bare is None:
        return ""
    return (f" (a Telegram Bot API chat id? mempipe keys a Telegram chat by the id Telegram Desktop's export "
            f"gives it: {bare})")


def bare_chat_id(text: str) -> int | None:
    """The chat id Telegram Desktop writes for a Bot API chat id ("-1001824466019" -> 1824466019,
    a basic group's "-5" -> 5; also "1001824466019", the supergroup form without its minus),
    or None when `text` does not look like one."""
    digits = text[1:] if text.startswith("-") else text
    if not (digits.isascii() and digits.isdigit()) or (digits == text and not (len(text) == 13 and text.startswith("100"))):
        return None
    return int(digits[3:]) if len(digits) == 13 and digits.startswith("100") else int(digits)
