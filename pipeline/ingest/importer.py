"""The write path shared by every importer: validate, cut, batch, upsert — in one transaction.

A message is (channel, message id): ids are unique only within a channel (Telegram's are per
chat), so the same id in another channel is another message. Idempotent by that key (the store
upserts); a newer edit (a later edited_ts) replaces the text, an older or equal one does not, and
a second copy that differs in anything else (author, time, reply) is refused: it would put one
person's words under another's name. A deletion row (`"deleted": true`, pipeline/ingest/deletion.py)
deletes instead, in input order relative to the other rows. A message keeps the author's display
name it was first stored with (author_name, the name at its time): a later copy — an edit, or an
export made after a rename — does not change it, so an earlier day never reads differently. Any bad row aborts the whole import:
nothing is written, and the InputError names the file (or "python") and the line or message id.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Literal, Mapping

from pydantic import ValidationError
from sqlalchemy.engine import Connection

from ..calendar import partition_for
from ..clock import Clock, system_clock
from ..config import Settings
from ..errors import InputError
from ..store import Store
from ..store.ingest import MESSAGE_IDENTITY
from .deletion import delete_in
from .discord import read_discord
from .jsonl import read_jsonl
from .model import DeletionIn, MessageIn, describe, is_deletion, parse_id

BATCH_SIZE = 5000
CUT_MARK = "…"
NAME_CHARS = 64  # display names: a prompt shows many, and one may not crowd out the chat
CHANNEL_NAME_CHARS = 100  # Discord's own limit
# What a second copy of a message may not change (an edit changes text and edited_ts only), as said
IDENTITY = dict(zip(MESSAGE_IDENTITY, ("author", "time", "reply")))

Progress = Callable[[int], Any]
Format = Literal["jsonl", "discord"]


@dataclass
class IngestReport:
    """Counts of one import. read = written + skipped + deletions.

    written counts the messages sent to the store: re-importing unchanged data counts them
    again although no row changes. skipped: bot, system and empty messages. cut: texts longer
    than settings.max_message_chars, shortened (ending in "…"), not rejected. deletions: rows
    with `"deleted": true`; deleted: the stored messages they removed; not_found: deletion rows
    that matched no stored message."""

    read: int = 0
    written: int = 0
    skipped: int = 0
    cut: int = 0
    deletions: int = 0
    deleted: int = 0
    not_found: int = 0


def ingest_messages(
    store: Store,
    rows: Iterable[MessageIn | Mapping[str, Any]],
    settings: Settings,
    *,
    source: str = "python",
    progress: Progress | None = None,
    clock: Clock = system_clock,
) -> IngestReport:
    """Write messages given as MessageIn or dicts (validated into MessageIn), all in one
    transaction. A bad row raises InputError(source, "message <id>" or "row <n>", what).
    progress, clock: as for import_files."""
    report = IngestReport()
    with store.transaction() as conn:
        writer = _Writer(store, conn, settings, report, progress, clock())
        for n, raw in enumerate(rows, 1):
            report.read += 1
            where = _python_where(raw, n)
            msg = raw if isinstance(raw, (MessageIn, DeletionIn)) else _validate(raw, source, where)
            writer.take(msg, source, where)
        writer.finish()
    return report


def import_files(
    store: Store,
    paths: Iterable[str | os.PathLike] | str | os.PathLike,
    settings: Settings,
    *,
    fmt: Format | None = None,
    visibility: Literal["public", "restricted"] | None = None,
    include_bots: bool = False,
    progress: Progress | None = None,
    clock: Clock = system_clock,
) -> IngestReport:
    """Parse and write every file in one transaction: any error writes nothing.

    fmt: "jsonl", "discord" or None (by extension: .jsonl/.ndjson -> jsonl, .json -> discord;
    otherwise by content). visibility and include_bots apply to Discord exports only (JSONL rows
    carry their own visibility): visibility "restricted" marks guild channels restricted; DMs
    stay dm. progress(n) is called after each batch with the number of messages read since the
    previous call (a step, as click's ProgressBar.update takes it). clock() is read once: every
    message of the import gets the same ingested_at."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if fmt not in (None, "jsonl", "discord"):
        raise ValueError(f"unknown import format {fmt!r} (use jsonl or discord)")
    if visibility not in (None, "public", "restricted"):
        raise ValueError(f"visibility for a Discord export must be public or restricted, not {visibility!r}")
    plan = [(os.fspath(path), fmt or detect_format(path)) for path in paths]

    report = IngestReport()
    with store.transaction() as conn:
        writer = _Writer(store, conn, settings, report, progress, clock())
        for source, kind in plan:
            rows: Iterator[tuple[str, Any]]
            if kind == "jsonl":
                rows = read_jsonl(source)
            else:
                rows = read_discord(source, visibility=visibility, include_bots=include_bots)
            with contextlib.closing(rows):
                for where, raw in rows:
                    report.read += 1
                    if raw is None:
                        report.skipped += 1
                        continue
                    writer.take(_validate(raw, source, where), source, where)
        writer.finish()
    return report


def detect_format(path: str | os.PathLike) -> Format:
    """jsonl or discord, by extension, else by the first line of the file."""
    source = os.fspath(path)
    suffix = os.path.splitext(source)[1].lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".json":
        return "discord"
    try:
        with open(source, encoding="utf-8-sig", errors="replace") as fh:
            first = ""
            for line in fh:
                if line.strip():
                    first = line
                    break
    except OSError as exc:
        raise InputError(source, "cannot open", exc.strerror or str(exc)) from None
    try:
        head = json.loads(first)
    except ValueError:
        head = None
    if isinstance(head, dict):
        return "discord" if "messages" in head and "channel" in head else "jsonl"
    if first.strip() == "{":
        return "discord"  # a pretty-printed export
    raise InputError(source, "format", "cannot tell JSONL from a Discord export: name the file .jsonl or "
                                       ".json, or pass the format explicitly")


# ---------------------------------------------------------------------------------------------


def _validate(raw: Any, source: str, where: str) -> MessageIn | DeletionIn:
    if not isinstance(raw, Mapping):
        raise InputError(source, where, f"expected a message (a mapping of fields), got {type(raw).__name__}")
    try:
        if is_deletion(raw):
            return DeletionIn.model_validate(dict(raw))
        return MessageIn.model_validate(dict(raw))
    except ValidationError as exc:
        raise InputError(source, where, describe(exc)) from None


def _python_where(raw: Any, n: int) -> str:
    value = raw.message_id if isinstance(raw, (MessageIn, DeletionIn)) else (raw.get("message_id") if isinstance(raw, Mapping) else None)
    try:
        return f"message {parse_id(value)}"
    except ValueError:
        return f"row {n}"


class _Writer:
    """Accumulates one batch of messages, members and channels; flushes it through the store.

    Within a batch, rows are merged per key the way the store's upserts would merge them one
    after the other, so one multi-row statement never touches the same row twice."""

    def __init__(self, store: Store, conn: Connection, settings: Settings, report: IngestReport,
                 progress: Progress | None, now: dt.datetime):
        self.store, self.conn, self.report, self.progress = store, conn, report, progress
        self.max_chars = settings.max_message_chars
        self.now = now  # ingested_at of every message in this import
        self.pending = 0
        self.messages: dict[tuple[int, int], dict[str, Any]] = {}  # by (channel id, message id)
        self.origin: dict[tuple[int, int], tuple[str, str]] = {}  # where each was read: (source, where)
        self.members: dict[tuple[str, int], dict[str, Any]] = {}  # by (partition, user id)
        self.channels: dict[int, dict[str, Any]] = {}
        # channel id -> (visibility, guild id, partition, source, where) as first seen in this import
        self.audience: dict[int, tuple[str, int | None, str, str, str]] = {}
        self.unchecked: set[int] = set()  # channels not yet compared with the stored ones
        self.reported = 0
        self.settings = settings
        self.deletions: list[DeletionIn] = []  # applied after the messages read before them

    def take(self, row: MessageIn | DeletionIn, source: str, where: str) -> None:
        """A message, or a deletion: in input order (messages read before a deletion are written
        before it; consecutive deletions are applied together)."""
        if isinstance(row, DeletionIn):
            if self.messages:
                self.flush()
            self.deletions.append(row)
            self.report.deletions += 1
            if len(self.deletions) >= BATCH_SIZE:
                self._delete()
            return
        if self.deletions:
            self._delete()
        self.add(row, source, where)

    def _delete(self) -> None:
        pairs = [(d.channel_id, d.message_id) for d in self.deletions if d.channel_id is not None]
        bare = [d.message_id for d in self.deletions if d.channel_id is None]
        self.deletions = []
        counts = delete_in(self.store, self.conn, pairs, bare, self.settings, self.now)
        self.report.deleted += counts["deleted"]
        self.report.not_found += counts["unknown"]

    def add(self, msg: MessageIn, source: str, where: str) -> None:
        if not msg.text.strip():
            self.report.skipped += 1
            return
        partition = partition_for(msg.visibility, msg.guild_id, msg.channel_id)
        self._same_audience(msg, partition, source, where)

        text = msg.text.replace("\x00", "\ufffd")  # PostgreSQL text cannot hold NUL
        if len(text) > self.max_chars:
            text = _cut(text, self.max_chars)
            self.report.cut += 1

        # Names are learned per partition, from that partition's messages: a name seen only in a
        # restricted channel or a DM never labels anyone elsewhere (ARCHITECTURE.md, "names").
        # The message keeps the name it was posted under (author_name); an edit keeps it too.
        name = _cut(msg.user_name.strip(), NAME_CHARS)
        row = {
            "message_id": msg.message_id, "guild_id": msg.guild_id, "channel_id": msg.channel_id,
            "visibility": msg.visibility, "partition": partition, "user_id": msg.user_id, "text": text,
            "ts": msg.ts, "reply_to": msg.reply_to, "edited_ts": msg.edited_ts, "ingested_at": self.now,
            "author_name": name or None,
        }
        key = (msg.channel_id, msg.message_id)
        prev = self.messages.get(key)
        if prev is None:
            self.messages[key], self.origin[key] = row, (source, where)
        elif changed := _changed(row, prev):
            earlier = self.origin[key]
            raise InputError(source, where, _conflict(key, changed, earlier[1] if earlier[0] == source
                                                      else f"{earlier[0]} {earlier[1]}"))
        elif _newer_edit(row["edited_ts"], prev["edited_ts"]):
            prev["text"], prev["edited_ts"] = row["text"], row["edited_ts"]

        member = self.members.get((partition, msg.user_id))
        if name and (member is None or msg.ts >= member["seen_at"]):
            self.members[(partition, msg.user_id)] = {"partition": partition, "user_id": msg.user_id,
                                                      "display_name": name, "seen_at": msg.ts}

        # A DM is one-to-one only when the input says so; a group flag once seen wins.
        channel_name = None if msg.channel_name is None else _cut(msg.channel_name, CHANNEL_NAME_CHARS)
        channel = self.channels.get(msg.channel_id)
        if channel is None:
            self.channels[msg.channel_id] = channel = {
                "channel_id": msg.channel_id, "guild_id": msg.guild_id, "visibility": msg.visibility,
                "partition": partition, "is_group": False, "name": channel_name, "one_to_one": False}
        elif channel_name is not None:
            channel["name"] = channel_name
        channel["is_group"] = channel["is_group"] or msg.is_group is True
        said_one_to_one = msg.visibility == "dm" and msg.is_group is False
        channel["one_to_one"] = (channel["one_to_one"] or said_one_to_one) and not channel["is_group"]

        self.report.written += 1
        self.pending += 1
        if self.pending >= BATCH_SIZE:
            self.flush()

    def flush(self) -> None:
        if self.messages:
            self._check_stored()
            self._check_stored_messages()
            self.store.write_channels(self.conn, list(self.channels.values()))
            self.store.write_members(self.conn, list(self.members.values()))
            self.store.write_messages(self.conn, list(self.messages.values()))
        self.messages, self.origin, self.members, self.channels, self.pending = {}, {}, {}, {}, 0
        if self.progress is not None and self.report.read > self.reported:
            done, self.reported = self.report.read - self.reported, self.report.read
            self.progress(done)

    def finish(self) -> None:
        self.flush()
        if self.deletions:
            self._delete()

    def _same_audience(self, msg: MessageIn, partition: str, source: str, where: str) -> None:
        """A channel has one audience: refuse an input that puts it in two partitions."""
        seen = self.audience.get(msg.channel_id)
        if seen is None:
            self.audience[msg.channel_id] = (msg.visibility, msg.guild_id, partition, source, where)
            self.unchecked.add(msg.channel_id)
            return
        if seen[:2] != (msg.visibility, msg.guild_id):
            earlier = f"{seen[4]}" if seen[3] == source else f"{seen[3]} {seen[4]}"
            raise InputError(source, where, (
                f"channel {msg.channel_id} is {_audience(msg.visibility, msg.guild_id, partition)} here but "
                f"{_audience(*seen[:3])} at {earlier}: a channel has one visibility"))

    def _check_stored_messages(self) -> None:
        """Against what is stored — earlier imports, and earlier batches of this one (same
        transaction): a message already there may get a newer text, nothing else."""
        stored = self.store.stored_messages(self.conn, self.messages)
        for key, row in self.messages.items():  # in input order: the first conflicting line is named
            if key in stored and (changed := _changed(row, stored[key])):
                source, where = self.origin[key]
                raise InputError(source, where, _conflict(key, changed, None))

    def _check_stored(self) -> None:
        if not self.unchecked:
            return
        stored = self.store.stored_channels(self.conn, self.unchecked)
        for channel_id, old in sorted(stored.items()):
            vis, guild_id, partition, source, where = self.audience[channel_id]
            if (old["visibility"], old["guild_id"]) != (vis, guild_id):
                raise InputError(source, where, (
                    f"channel {channel_id} is stored as {_audience(old['visibility'], old['guild_id'], old['partition'])} "
                    f"but this input makes it {_audience(vis, guild_id, partition)}: a channel keeps the "
                    f"visibility it was first imported with"))
        self.unchecked.clear()


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - len(CUT_MARK)] + CUT_MARK


def _changed(new: dict, old: Mapping) -> list[str]:
    return [what for col, what in IDENTITY.items() if new[col] != old[col]]


def _newer_edit(new: dt.datetime | None, old: dt.datetime | None) -> bool:
    return new is not None and (old is None or new > old)


def _conflict(key: tuple[int, int], changed: list[str], earlier: str | None) -> str:
    seen = f"earlier in this import ({earlier})" if earlier else "in the database"
    return (f"message {key[1]} of channel {key[0]} is {seen} with another {' and '.join(changed)}: a message id "
            f"names one message of its channel, and a later copy (an edit) may change only its text")


def _audience(visibility: str, guild_id: int | None, partition: str) -> str:
    guild = f" in guild {guild_id}" if guild_id is not None else ""
    return f"{visibility}{guild} (partition {partition})"
