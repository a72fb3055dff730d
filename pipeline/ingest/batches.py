"""The import's per-message work that needs no database: `BatchBuilder` checks each validated
message against the rest of the import, merges copies, learns names and channels, and hands on
batches of rows ready for the store (pipeline/ingest/writer.py writes them).

A message is (channel, message id): ids are unique only within a channel (Telegram's are per
chat), so the same id in another channel is another message. Within a batch, copies of one
message are merged the way the store's upsert would merge them one after the other: a newer edit
(a later edited_ts) replaces the text, an older or equal one does not, and a second copy that
differs in anything else (author, time, reply) is refused: it would put one person's words under
another's name. A message keeps the author's display name it was first stored with (author_name,
the name at its time): a later copy — an edit, or an export made after a rename — does not change
it, so an earlier day never reads differently. Copies in different batches meet in the database
(the writer reads the stored copies of each batch).

The builder runs in the importer's process, or, for a large JSONL import, in a reader process
beside it (pipeline/ingest/reader.py): then decoding and checking the next batch overlaps with
writing this one. What it hands on (`Batch`, `Deletions`, `Finished`, `Failed`) is plain data, so
it crosses the process boundary as msgpack.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Callable

import msgspec

from ..calendar import partition_for
from ..errors import InputError
from ..utc_text import to_utc_text, utc_texts
from .model import EMPTY, DeletionIn, MessageIn

CUT_MARK = "…"
NAME_CHARS = 64  # display names: a prompt shows many, and one may not crowd out the chat
CHANNEL_NAME_CHARS = 100  # Discord's own limit
# A batch's rows are lists in chat_history's column order (what the store writes as they are;
# pipeline/ingest/writer.py checks the order against the table: this module loads no database code).
RECORD_ORDER = ("message_id", "guild_id", "channel_id", "visibility", "partition", "user_id", "text", "ts",
                "reply_to", "edited_ts", "ingested_at", "author_name")
MESSAGE_ID, GUILD_ID, CHANNEL_ID, PARTITION, USER_ID, TEXT, TS, REPLY_TO, EDITED_TS = 0, 1, 2, 4, 5, 6, 7, 8, 9
# What a second copy of a message may not change (an edit changes text and edited_ts only), as said
IDENTITY = ((USER_ID, "author"), (TS, "time"), (REPLY_TO, "reply"))


class Batch(msgspec.Struct, tag="batch", array_like=True):
    """One batch of messages, one row per (channel, message id), copies merged. `origins[i]`:
    where row i was first read, (index into `sources`, place). `copies`: for a message read more
    than once, each copy's edited_ts in input order (the writer counts what each did). `audience`:
    the channels first seen since the last batch, (channel id, visibility, guild id, partition,
    source, place), for the writer to check against the stored ones. `read`: rows read so far."""

    records: list[tuple]
    sources: list[str]
    origins: list[tuple[int, str]]
    copies: dict[int, list[dt.datetime | None]]
    audience: list[tuple[int, str, int | None, str, str, str]]
    read: int


class Deletions(msgspec.Struct, tag="deletions", array_like=True):
    """Consecutive deletion rows, applied after the messages read before them."""

    rows: list[DeletionIn]
    read: int


class Finished(msgspec.Struct, tag="finished", array_like=True):
    """The end of the import: its members ((partition, user id, name, seen at), the latest name per
    partition and user) and channels, and the counts the builder keeps."""

    members: list[tuple[str, int, str, dt.datetime]]
    channels: list[dict[str, Any]]
    read: int
    skipped_by: dict[str, int]
    cut: int
    deletions: int


class Failed(msgspec.Struct, tag="failed", array_like=True):
    """A bad row (an InputError), sent by a reader process in the error's place."""

    source: str
    where: str
    what: str


Item = Batch | Deletions | Finished | Failed
Emit = Callable[[Batch | Deletions | Finished], Any]


class BatchBuilder:
    """Takes validated messages and deletions in input order; emits a `Batch` every `batch_size`
    messages, `Deletions` in their place, and `Finished` from `finish()`. `report` counts read,
    skipped, cut and deletions (the importer's IngestReport). `text_times`: times as SQLite stores
    them (UTC text, pipeline/utc_text.py), else aware UTC datetimes."""

    def __init__(self, emit: Emit, report, *, max_chars: int, now: dt.datetime, batch_size: int, text_times: bool):
        self.emit, self.report = emit, report
        self.max_chars, self.batch_size, self.text_times = max_chars, batch_size, text_times
        self.messages: dict[tuple[int, int], list[Any]] = {}  # by (channel id, message id)
        self.origin: dict[tuple[int, int], tuple[int, str]] = {}  # where each was read: (source number, where)
        self.copies: dict[tuple[int, int], list] = {}  # a message read more than once: each copy's edited_ts
        self.members: dict[tuple[str, int], tuple[str, dt.datetime]] = {}  # (partition, user) -> name, seen at
        self.channels: dict[int, dict[str, Any]] = {}
        # channel id -> (visibility, guild id, partition, source, where) as first seen in this import
        self.audience: dict[int, tuple[str, int | None, str, str, str]] = {}
        self.new_channels: list[tuple[int, str, int | None, str, str, str]] = []  # since the last batch
        self.deletions: list[DeletionIn] = []
        self.sources: dict[str, int] = {}  # the batch's sources, numbered (its rows name one each)
        self.source, self.source_no = None, 0  # the last row's source, and its number
        self.edited: list[list[Any]] = []  # the batch's rows with an edited_ts (their times are made text too)
        # ingested_at, the same for every row: in the store's form once
        self.now_value = to_utc_text(now) if text_times else now.astimezone(dt.timezone.utc)

    def take(self, row: MessageIn | DeletionIn, source: str, where: str) -> None:
        """A message, or a deletion: in input order (messages read before a deletion are written
        before it; consecutive deletions are applied together)."""
        if type(row) is DeletionIn:
            if self.messages:
                self.flush()
            self.deletions.append(row)
            self.report.deletions += 1
            if len(self.deletions) >= self.batch_size:
                self._emit_deletions()
            return
        if self.deletions:
            self._emit_deletions()
        self.add(row, source, where)

    def add(self, msg: MessageIn, source: str, where: str) -> None:
        text = msg.text
        if not text or text.isspace():
            self.report.skip(EMPTY)
            return
        channel_id = msg.channel_id
        seen = self.audience.get(channel_id)
        if seen is not None and seen[0] == msg.visibility and seen[1] == msg.guild_id:
            partition = seen[2]
        else:
            partition = self._first_audience(msg, seen, source, where)

        if "\x00" in text:
            text = text.replace("\x00", "\ufffd")  # PostgreSQL text cannot hold NUL
        if len(text) > self.max_chars:
            text = cut(text, self.max_chars)
            self.report.cut += 1

        # Names are learned per partition, from that partition's messages: a name seen only in a
        # restricted channel or a DM never labels anyone elsewhere (ARCHITECTURE.md, "names").
        # The message keeps the name it was posted under (author_name); an edit keeps it too.
        name = msg.user_name.strip()
        if len(name) > NAME_CHARS:
            name = cut(name, NAME_CHARS)
        ts, user_id, edited = msg.ts, msg.user_id, msg.edited_ts
        key = (channel_id, msg.message_id)
        prev = self.messages.get(key)
        if prev is None:
            if source is not self.source:
                self.source, self.source_no = source, self.sources.setdefault(source, len(self.sources))
            self.messages[key] = row = [msg.message_id, msg.guild_id, channel_id, msg.visibility, partition, user_id,
                                        text, ts, msg.reply_to, edited, self.now_value, name or None]
            self.origin[key] = (self.source_no, where)
            if edited is not None:
                self.edited.append(row)
        else:
            if changed := changed_fields((user_id, ts, msg.reply_to), prev):
                number, place = self.origin[key]
                earlier = next(name for name, n in self.sources.items() if n == number)
                raise InputError(source, where, conflict(key, changed, place if earlier == source
                                                         else f"{earlier} {place}"))
            # each copy's edit time, in input order, to count what each did (the writer's count)
            self.copies.setdefault(key, [prev[EDITED_TS]]).append(edited)
            if newer_edit(edited, prev[EDITED_TS]):
                if prev[EDITED_TS] is None:
                    self.edited.append(prev)
                prev[TEXT], prev[EDITED_TS] = text, edited

        if name:
            member = self.members.get((partition, user_id))
            if member is None or ts >= member[1]:
                self.members[(partition, user_id)] = (name, ts)

        channel = self.channels.get(channel_id)
        if channel is None or msg.is_group is not None or (msg.channel_name is not None and msg.channel_name != channel["name"]):
            self._channel(msg, partition)
        if len(self.messages) >= self.batch_size:
            self.flush()

    def _channel(self, msg: MessageIn, partition: str) -> None:
        """A DM is one-to-one only when the input says so; a group flag once seen wins."""
        channel = self.channels.get(msg.channel_id)
        if channel is None:
            channel = self.channels[msg.channel_id] = {
                "channel_id": msg.channel_id, "guild_id": msg.guild_id, "visibility": msg.visibility,
                "partition": partition, "is_group": False, "name": None, "one_to_one": False}
        if msg.channel_name is not None:
            channel["name"] = cut(msg.channel_name, CHANNEL_NAME_CHARS)
        if msg.is_group is not None:
            if msg.is_group:
                channel["is_group"], channel["one_to_one"] = True, False
            elif msg.visibility == "dm" and not channel["is_group"]:
                channel["one_to_one"] = True

    def _first_audience(self, msg: MessageIn, seen, source: str, where: str) -> str:
        """A channel has one audience: the partition of a channel first seen, or InputError for an
        input that puts a seen one in another partition."""
        partition = partition_for(msg.visibility, msg.guild_id, msg.channel_id)
        if seen is None:
            self.audience[msg.channel_id] = (msg.visibility, msg.guild_id, partition, source, where)
            self.new_channels.append((msg.channel_id, msg.visibility, msg.guild_id, partition, source, where))
            return partition
        earlier = f"{seen[4]}" if seen[3] == source else f"{seen[3]} {seen[4]}"
        raise InputError(source, where, (
            f"channel {msg.channel_id} is {audience_text(msg.visibility, msg.guild_id, partition)} here but "
            f"{audience_text(*seen[:3])} at {earlier}: a channel has one visibility"))

    def flush(self) -> None:
        """Emit the batch of messages (also when it is empty: the writer reports progress)."""
        rows = list(self.messages.values())
        copies = {}
        if self.copies:
            index = {key: i for i, key in enumerate(self.messages)}
            copies = {index[key]: edits for key, edits in self.copies.items()}
        if self.text_times and rows:  # in bulk: utc_texts is one C call for the column
            for row, text in zip(rows, utc_texts([r[TS] for r in rows])):
                row[TS] = text
            for row, text in zip(self.edited, utc_texts([r[EDITED_TS] for r in self.edited])):
                row[EDITED_TS] = text
        records = list(map(tuple, rows))  # (what the drivers bind, and what msgpack gives back as typed)
        batch = Batch(records, list(self.sources), list(self.origin.values()), copies, self.new_channels,
                      self.report.read)
        self.messages, self.origin, self.copies, self.new_channels, self.edited = {}, {}, {}, [], []
        self.sources, self.source = {}, None
        self.emit(batch)

    def _emit_deletions(self) -> None:
        rows, self.deletions = self.deletions, []
        self.emit(Deletions(rows, self.report.read))

    def finish(self) -> None:
        self.flush()
        if self.deletions:
            self._emit_deletions()
        report = self.report
        self.emit(Finished([(partition, user_id, name, seen_at)
                            for (partition, user_id), (name, seen_at) in self.members.items()],
                           list(self.channels.values()), report.read, dict(report.skipped_by), report.cut,
                           report.deletions))


def changed_fields(identity: tuple[int, Any, int | None], old: list[Any]) -> list[str]:
    """What a copy with this (user id, ts, reply to) changes of the row `old`, by name."""
    return [what for (i, what), value in zip(IDENTITY, identity) if value != old[i]]


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - len(CUT_MARK)] + CUT_MARK


def newer_edit(new: dt.datetime | None, old: dt.datetime | None) -> bool:
    return new is not None and (old is None or new > old)


def conflict(key: tuple[int, int], changed: list[str], earlier: str | None) -> str:
    seen = f"earlier in this import ({earlier})" if earlier else "in the database"
    return (f"message {key[1]} of channel {key[0]} is {seen} with another {' and '.join(changed)}: a message id "
            f"names one message of its channel, and a later copy (an edit) may change only its text")


def audience_text(visibility: str, guild_id: int | None, partition: str) -> str:
    guild = f" in guild {guild_id}" if guild_id is not None else ""
    return f"{visibility}{guild} (partition {partition})"
