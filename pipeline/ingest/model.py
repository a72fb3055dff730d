"""MessageIn: one chat message as every importer hands it to the write path.

Validation messages are written for an operator reading `mempipe import` output: they name the
field and say what is wrong. Ids are 64-bit integers (Discord snowflakes): ints or strings of
ASCII digits, never floats. Timestamps must carry a UTC offset; they keep it here and the store
converts them to UTC.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from ..calendar import VISIBILITIES
from ..ids import MAX_ID, parse_id  # noqa: F401  (re-exported: the importers use them from here)

_TS_EXAMPLE = "2026-11-02T18:22:10+00:00"
# What every stage can turn into local days and both databases store: nothing chats before 1970,
# and a year of margin at the top keeps local-day arithmetic (±14 h, +1 day) within datetime.
TS_MIN = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
TS_MAX = dt.datetime(9999, 1, 1, tzinfo=dt.timezone.utc)
_SURROGATE = re.compile("[\ud800-\udfff]")


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
    try:
        in_range = TS_MIN <= parsed.astimezone(dt.timezone.utc) < TS_MAX
    except OverflowError:  # year 1 east of UTC, year 9999 west of it
        in_range = False
    if not in_range:
        raise ValueError(f"timestamp {value!r} is out of range: use a time from 1970 to 9998 (UTC)")
    return parsed


def check_text(value: str, *, nul: bool) -> str:
    """Text both databases can store, or ValueError saying where it is not: a lone UTF-16
    surrogate (written by a broken encoder; no database encodes it) anywhere, a NUL where `nul`
    is false (PostgreSQL text cannot hold one; message text has it replaced instead)."""
    if (bad := _SURROGATE.search(value)) is not None:
        raise ValueError(f"not text: a lone surrogate {bad.group()!r} at character {bad.start() + 1}")
    if not nul and "\x00" in value:
        raise ValueError(f"a NUL character at character {value.index(chr(0)) + 1}")
    return value


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
    # a DM's kind as the input states it: True a group, False one-to-one, None not said (then the
    # DM is treated as a group: ARCHITECTURE.md, "scope", fail closed)
    is_group: bool | None = None
    channel_name: str | None = None

    @field_validator("text", "user_name", "channel_name")
    @classmethod
    def _storable(cls, value: str | None, info) -> str | None:
        if value is None:
            return None
        try:
            return check_text(value, nul=info.field_name == "text")
        except ValueError as exc:
            raise PydanticCustomError("text", str(exc)) from None

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


class DeletionIn(BaseModel):
    """A deletion row of an import: `{"message_id": …, "channel_id": …, "deleted": true}`. Without
    a channel it deletes every stored message with that id (pipeline/ingest/deletion.py)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    message_id: Id
    channel_id: Id | None = None
    deleted: Literal[True]


def is_deletion(raw: Any) -> bool:
    """A row that deletes (`"deleted": true`); `"deleted": false` is an ordinary message, any other
    value is refused when validated (as a DeletionIn)."""
    return isinstance(raw, Mapping) and "deleted" in raw and raw["deleted"] is not False


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
