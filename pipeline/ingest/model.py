"""MessageIn: one chat message as every importer hands it to the write path, and `validate`,
the plain-function check that makes one from a row of the JSONL shape.

Validation messages are written for an operator reading `mempipe import` output: they name the
field and say what is wrong, every problem of the row at once. Ids are 64-bit integers (Discord
snowflakes): ints or strings of ASCII digits, never floats. Timestamps must carry a UTC offset;
they are converted to UTC here, once.

Bulk speed: a good row costs one pass of plain checks (an id text seen before is looked up, not
parsed again); only a bad row takes the slower pass that collects every problem by name. The
structs are msgspec's (no per-instance validation: `validate` is the check).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

import msgspec

from ..calendar import VISIBILITIES
from ..errors import IdError, InputError
from ..ids import MAX_ID, parse_id, shown  # noqa: F401  (re-exported: the importers use them from here)

UTC = dt.timezone.utc
_TS_EXAMPLE = "2026-11-02T18:22:10+00:00"
# What every stage can turn into local days and both databases store: nothing chats before 1970,
# and a year of margin at the top keeps local-day arithmetic (±14 h, +1 day) within datetime.
TS_MIN = dt.datetime(1970, 1, 1, tzinfo=UTC)
TS_MAX = dt.datetime(9999, 1, 1, tzinfo=UTC)
_SURROGATE = re.compile("[\ud800-\udfff]")
# What the pydantic model accepted for a bool (its lax mode), kept so that no file stops importing
_BOOLS = {"true": True, "t": True, "yes": True, "y": True, "on": True, "1": True,
          "false": False, "f": False, "no": False, "n": False, "off": False, "0": False}
_MISSING = object()


class MessageIn(msgspec.Struct, frozen=True, kw_only=True):
    """One validated message (by `validate`; constructing one checks nothing, and
    ingest_messages validates a MessageIn it is given). `visibility` decides the partition
    (ARCHITECTURE.md, "partition"); ts and edited_ts are aware datetimes in UTC."""

    message_id: int
    guild_id: int | None
    channel_id: int
    visibility: Literal["public", "restricted", "dm"]
    user_id: int
    user_name: str
    text: str
    ts: dt.datetime
    reply_to: int | None = None
    edited_ts: dt.datetime | None = None
    # a DM's kind as the input states it: True a group, False one-to-one, None not said (then the
    # DM is treated as a group: ARCHITECTURE.md, "scope", fail closed)
    is_group: bool | None = None
    channel_name: str | None = None


class JsonlRow(msgspec.Struct, kw_only=True):
    """A JSONL line as msgspec decodes it in one pass (pipeline/ingest/jsonl.py): MessageIn's fields
    with the types JSON has for them (ids an int or text, times text). Decoding checks the JSON
    types, the required fields, the visibility and the text (msgspec refuses a lone surrogate);
    `Validator.typed` does the rest. A line that does not decode as one is read as a dict and
    validated by `Validator`, which names every problem; a deletion row is one of those."""

    message_id: int | str
    guild_id: int | str | None
    channel_id: int | str
    visibility: Literal["public", "restricted", "dm"]
    user_id: int | str
    user_name: str
    text: str
    ts: str
    reply_to: int | str | None = None
    edited_ts: str | None = None
    is_group: bool | None = None
    channel_name: str | None = None
    deleted: bool = False


class DeletionIn(msgspec.Struct, frozen=True, kw_only=True):
    """A deletion row of an import: `{"message_id": …, "channel_id": …, "deleted": true}`. Without
    a channel it deletes every stored message with that id (pipeline/ingest/deletion.py)."""

    message_id: int
    channel_id: int | None = None
    deleted: Literal[True] = True


class Skipped(str):
    """A message an importer leaves out, yielded in its place: the reason, as the import report
    counts it ("bot author", "service message", …)."""


EMPTY = Skipped("empty")  # no text left (every importer; the writer counts it too)
BOT_AUTHOR = Skipped("bot author")  # written by a bot account (Discord's isBot; a Telegram bot_chat's bot)


class RowError(ValueError):
    """A row that is not a message: the text names every problem ("missing field ts; …")."""


def parse_timestamp(value: Any) -> dt.datetime:
    """An aware datetime in UTC from ISO-8601 text with an offset (or an aware datetime);
    raises ValueError otherwise."""
    if isinstance(value, str):
        try:
            parsed = dt.datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"bad timestamp {value!r}: use ISO-8601 with a UTC offset, e.g. {_TS_EXAMPLE}") from None
        # most inputs are in UTC already ("+00:00", "Z": fromisoformat gives timezone.utc itself):
        # nothing to convert (0.47 -> 0.21 µs a call; a large import parses a million)
        if parsed.tzinfo is UTC and TS_MIN <= parsed < TS_MAX:
            return parsed
    elif isinstance(value, dt.datetime):
        parsed = value
    else:
        raise ValueError(f"bad timestamp {value!r}: use ISO-8601 text with a UTC offset, e.g. {_TS_EXAMPLE}")
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise ValueError(f"timestamp {value!r} has no UTC offset (write it like {_TS_EXAMPLE})")
    try:
        utc = parsed.astimezone(UTC)
    except OverflowError:  # year 1 east of UTC, year 9999 west of it
        utc = None
    if utc is None or not TS_MIN <= utc < TS_MAX:
        raise ValueError(f"timestamp {value!r} is out of range: use a time from 1970 to 9998 (UTC)")
    return utc


def check_text(value: Any, *, nul: bool) -> str:
    """Text both databases can store, or ValueError saying where it is not: a lone UTF-16
    surrogate (written by a broken encoder; no database encodes it) anywhere, a NUL where `nul`
    is false (PostgreSQL text cannot hold one; message text has it replaced instead)."""
    if type(value) is not str:
        if not isinstance(value, str):
            raise ValueError(f"expected text, got {kind_of(value)}")
        value = str(value)
    if not value.isascii() and (bad := _SURROGATE.search(value)) is not None:
        raise ValueError(f"not text: a lone surrogate {bad.group()!r} at character {bad.start() + 1}")
    if not nul and "\x00" in value:
        raise ValueError(f"a NUL character at character {value.index(chr(0)) + 1}")
    return value


def is_deletion(raw: Any) -> bool:
    """A row that deletes (`"deleted": true`); `"deleted": false` is an ordinary message, any other
    value is refused when validated."""
    return isinstance(raw, Mapping) and "deleted" in raw and raw["deleted"] is not False


class Validator:
    """`validate` with a memory of the id texts seen in one import: channel, guild and user ids
    repeat on every row, so each is parsed once."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def __call__(self, raw: Mapping[str, Any]) -> MessageIn | DeletionIn:
        """The row (a mapping) as a MessageIn or DeletionIn (see is_deletion), or RowError naming
        every problem."""
        if "deleted" in raw and raw["deleted"] is not False:
            return _checked(raw, _DELETION, DeletionIn, None)
        try:
            return self._message(raw)
        except Exception:  # any problem: the slow pass names them all (the same checks, per field)
            return _checked(raw, _MESSAGE, MessageIn, _audience)

    def _message(self, raw: Mapping[str, Any]) -> MessageIn:
        # The checks of _MESSAGE, inlined: this runs once per row of every import.
        get = raw.get
        guild_id, channel_id, user_id = self._ids(raw["guild_id"], raw["channel_id"], raw["user_id"])
        visibility, user_name, text = raw["visibility"], raw["user_name"], raw["text"]
        if visibility not in VISIBILITIES or type(user_name) is not str or type(text) is not str:
            raise ValueError("a field")
        if (not user_name.isascii() or not text.isascii()) and (_SURROGATE.search(user_name) or _SURROGATE.search(text)):
            raise ValueError("a lone surrogate")
        if "\x00" in user_name:
            raise ValueError("a NUL")
        reply, edited, is_group, channel_name = get("reply_to"), get("edited_ts"), get("is_group"), get("channel_name")
        msg = MessageIn(
            message_id=parse_id(raw["message_id"]), guild_id=guild_id, channel_id=channel_id, visibility=visibility,
            user_id=user_id, user_name=user_name, text=text, ts=parse_timestamp(raw["ts"]),
            reply_to=None if reply is None else parse_id(reply),
            edited_ts=None if edited is None else parse_timestamp(edited),
            is_group=is_group if is_group is None or type(is_group) is bool else _bool(is_group),
            channel_name=None if channel_name is None else check_text(channel_name, nul=False))
        if _audience(msg) is not None:
            raise ValueError("audience")
        return msg

    def typed(self, row: JsonlRow) -> MessageIn | DeletionIn:
        """A decoded JSONL line as `__call__` reads the same line as a dict: the same checks, with
        those msgspec made already left out; any problem goes to the dict's slow pass."""
        try:
            if row.deleted:
                raise ValueError("a deletion")
            guild_id, channel_id, user_id = self._ids(row.guild_id, row.channel_id, row.user_id)
            reply, edited, channel_name = row.reply_to, row.edited_ts, row.channel_name
            if "\x00" in row.user_name or (channel_name is not None and "\x00" in channel_name):
                raise ValueError("a NUL")
            msg = MessageIn(
                message_id=parse_id(row.message_id), guild_id=guild_id, channel_id=channel_id,
                visibility=row.visibility, user_id=user_id, user_name=row.user_name, text=row.text,
                ts=parse_timestamp(row.ts), reply_to=None if reply is None else parse_id(reply),
                edited_ts=None if edited is None else parse_timestamp(edited), is_group=row.is_group,
                channel_name=channel_name)
            if _audience(msg) is not None:
                raise ValueError("audience")
            return msg
        except Exception:
            return self(msgspec.structs.asdict(row))

    def _ids(self, guild: Any, channel: Any, user: Any) -> tuple[int | None, int, int]:
        """The row's guild (None stays None), channel and user ids; IdError for a bad one."""
        ids = self.ids
        # only text ids are remembered: 12.0 == 12 would let a float through a dict of ints
        guild_id = None if guild is None else ids.get(guild) if type(guild) is str else None
        if guild_id is None and guild is not None:
            guild_id = self._remember(guild)
        channel_id = ids.get(channel) if type(channel) is str else None
        if channel_id is None:
            channel_id = self._remember(channel)
        user_id = ids.get(user) if type(user) is str else None
        if user_id is None:
            user_id = self._remember(user)
        return guild_id, channel_id, user_id

    def _remember(self, value: Any) -> int:
        number = parse_id(value)
        if type(value) is str:
            self.ids[value] = number
        return number


def validate(raw: Any) -> MessageIn | DeletionIn:
    """One row (a mapping of the JSONL shape) as a MessageIn or DeletionIn; RowError otherwise."""
    if not isinstance(raw, Mapping):
        raise RowError(f"expected a message (a mapping of fields), got {type(raw).__name__}")
    return Validator()(raw)


def _optional(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else check(value)


def _visibility(value: Any) -> str:
    if value not in VISIBILITIES:
        raise ValueError(f"unknown visibility {value!r} (use public, restricted or dm)")
    return value


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _BOOLS:
        return _BOOLS[value.strip().lower()]
    raise ValueError(f"expected true or false, got {value!r}")


def _deleted(value: Any) -> bool:
    if value is not True:
        raise ValueError(f"expected true (a deletion row) or false (a message), got {value!r}")
    return value


# (field, required, check) in the order problems are named; `None` is allowed where the check is _optional
_MESSAGE = (
    ("message_id", True, parse_id), ("guild_id", True, _optional(parse_id)), ("channel_id", True, parse_id),
    ("visibility", True, _visibility), ("user_id", True, parse_id),
    ("user_name", True, lambda v: check_text(v, nul=False)), ("text", True, lambda v: check_text(v, nul=True)),
    ("ts", True, parse_timestamp), ("reply_to", False, _optional(parse_id)),
    ("edited_ts", False, _optional(parse_timestamp)), ("is_group", False, _optional(_bool)),
    ("channel_name", False, _optional(lambda v: check_text(v, nul=False))),
)
_DELETION = (("message_id", True, parse_id), ("channel_id", False, _optional(parse_id)), ("deleted", True, _deleted))


def _checked(raw: Mapping[str, Any], fields, make, rule: Callable[[Any], str | None] | None):
    """Every field checked on its own; RowError naming all problems, else the struct (and then the
    row-level rule, which needs valid fields)."""
    values, problems = {}, []
    for name, required, check in fields:
        value = raw.get(name, _MISSING)
        if value is _MISSING:
            if required:
                problems.append(f"missing field {name}")
            continue
        try:
            values[name] = check(value)
        except ValueError as exc:
            problems.append(f"{name}: {exc}")
    if problems:
        raise RowError("; ".join(problems))
    out = make(**values)
    if rule is not None and (problem := rule(out)) is not None:
        raise RowError(problem)
    return out


def _audience(msg: MessageIn) -> str | None:
    """What is wrong with the message's audience (guild, visibility, DM kind), or None."""
    if msg.visibility == "dm":
        if msg.guild_id is not None:
            return f"a dm message has no guild: guild_id must be null, got {msg.guild_id}"
        return None
    if msg.guild_id is None:
        return f"a {msg.visibility} message needs a guild_id (null is only for dm)"
    if msg.guild_id == 0:
        return ("guild_id 0 is not a guild (exports use 0 for direct messages: give those visibility dm and "
                "guild_id null)")
    if msg.is_group:
        return f"is_group is only for dm messages (a group DM), not {msg.visibility}"
    return None


def kind_of(value: Any) -> str:
    """A JSON value's kind, as an error message names it ("an array")."""
    return {list: "an array", dict: "an object", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


def located_id(value: Any, source: str, where: str, key: str) -> int:
    """An id of an export (parse_id), its error an InputError naming the file, the place and the key."""
    try:
        return parse_id(value)
    except IdError as exc:
        raise InputError(source, where, f"{key}: {exc}") from None


def message_where(raw_id: Any, index: int, prefix: str = "") -> str:
    """Where a message of an export is, for its errors: "message <id>" when the id is one to show
    (an int, or text of at most 24 characters), else its place in the array, "messages[<index>]"."""
    if type(raw_id) is int or (isinstance(raw_id, str) and len(raw_id) <= 24):
        return f"{prefix}message {raw_id}"
    return f"{prefix}messages[{index}]"
