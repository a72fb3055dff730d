"""MessageIn: one chat message as every importer hands it to the write path.

Validation messages are written for an operator reading `mempipe import` output: they name the
field and say what is wrong. Ids are 64-bit integers (Discord snowflakes): ints or strings of
ASCII digits, never floats. Timestamps must carry a UTC offset; they keep it here and the store
converts them to UTC.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from ..calendar import VISIBILITIES

MAX_ID = 2**63 - 1
_DIGITS = re.compile(r"[0-9]{1,19}")
_TS_EXAMPLE = "2026-11-02T18:22:10+00:00"


def parse_id(value: Any) -> int:
    """A 64-bit id from an int or a string of ASCII digits; raises ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"id not an integer: {value!r}")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and _DIGITS.fullmatch(value):
        number = int(value)
    elif isinstance(value, str) and value.isascii() and value.isdigit():
        raise ValueError(f"id not an integer: {value!r} is larger than 2**63-1")
    else:
        raise ValueError(f"id not an integer: {value!r}")
    if number < 0:
        raise ValueError(f"id not an integer: {value!r} is negative")
    if number > MAX_ID:
        raise ValueError(f"id not an integer: {value!r} is larger than 2**63-1")
    return number


def parse_timestamp(value: Any) -> dt.datetime:
    """An aware datetime from ISO-8601 text (or a datetime); raises ValueError otherwise."""
    if isinstance(value, str):
        try:
            parsed = dt.datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"bad timestamp {value!r}: use ISO-8601 with a UTC offset, e.g. {_TS_EXAMPLE}") from None
    elif isinstance(value, dt.datetime):
        parsed = value
    else:
        raise ValueError(f"bad timestamp {value!r}: use ISO-8601 text with a UTC offset, e.g. {_TS_EXAMPLE}")
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise ValueError(f"timestamp {value!r} has no UTC offset (write it like {_TS_EXAMPLE})")
    return parsed


def _id(value: Any) -> int:
    try:
        return parse_id(value)
    except ValueError as exc:
        raise PydanticCustomError("id", str(exc)) from None


def _ts(value: Any) -> dt.datetime:
    try:
        return parse_timestamp(value)
    except ValueError as exc:
        raise PydanticCustomError("timestamp", str(exc)) from None


Id = Annotated[int, BeforeValidator(_id)]
Timestamp = Annotated[dt.datetime, BeforeValidator(_ts)]


class MessageIn(BaseModel):
    """One message, validated. `visibility` decides the partition (ARCHITECTURE.md, "partition")."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    message_id: Id
    guild_id: Id | None
    channel_id: Id
    visibility: Literal["public", "restricted", "dm"]
    user_id: Id
    user_name: str
    text: str
    ts: Timestamp
    reply_to: Id | None = None
    edited_ts: Timestamp | None = None
    is_group: bool = False  # group DM: more than one human reader
    channel_name: str | None = None

    @field_validator("visibility", mode="before")
    @classmethod
    def _known_visibility(cls, value: Any) -> Any:
        if value not in VISIBILITIES:
            raise PydanticCustomError(
                "visibility", "unknown visibility {value} (use public, restricted or dm)", {"value": repr(value)}
            )
        return value

    @model_validator(mode="after")
    def _audience(self) -> "MessageIn":
        if self.visibility == "dm":
            if self.guild_id is not None:
                raise PydanticCustomError(
                    "audience", "a dm message has no guild: guild_id must be null, got {guild_id}",
                    {"guild_id": self.guild_id})
        else:
            if self.guild_id is None:
                raise PydanticCustomError(
                    "audience", "a {visibility} message needs a guild_id (null is only for dm)",
                    {"visibility": self.visibility})
            if self.guild_id == 0:
                raise PydanticCustomError(
                    "audience", "guild_id 0 is not a guild (exports use 0 for direct messages: "
                    "give those visibility dm and guild_id null)")
            if self.is_group:
                raise PydanticCustomError(
                    "audience", "is_group is only for dm messages (a group DM), not {visibility}",
                    {"visibility": self.visibility})
        return self


def describe(exc: ValidationError) -> str:
    """One line naming every problem of a row: "missing field ts; message_id: id not an integer: '12.5'"."""
    parts = []
    for err in exc.errors(include_url=False):
        field = ".".join(str(p) for p in err["loc"])
        if err["type"] == "missing":
            parts.append(f"missing field {field}")
        elif field:
            parts.append(f"{field}: {err['msg']}")
        else:
            parts.append(err["msg"])
    return "; ".join(parts)
