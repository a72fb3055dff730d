"""The batch writer every importer feeds: checks each validated message against the rest of the
import and the database, merges copies, and writes through the store in batches.

A message is (channel, message id): ids are unique only within a channel (Telegram's are per
chat), so the same id in another channel is another message. Idempotent by that key (the store
upserts); a newer edit (a later edited_ts) replaces the text, an older or equal one does not, and
a second copy that differs in anything else (author, time, reply) is refused: it would put one
person's words under another's name. A message keeps the author's display name it was first
stored with (author_name, the name at its time): a later copy — an edit, or an export made after
a rename — does not change it, so an earlier day never reads differently.

Per message only plain Python runs (no statement); per batch: one read of the stored copies, one
upsert of the messages. Members and channels are gathered over the whole import and upserted
once, when it finishes, from one entry per (partition, user) and per channel.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Callable, Mapping

from sqlalchemy.engine import Connection

from ..calendar import partition_for
from ..config import Settings
from ..errors import InputError
from ..store import Store
from ..store.ingest import DEFER_INDEXES_AFTER, MESSAGE_IDENTITY
from .deletion import delete_in
from .model import EMPTY, DeletionIn, MessageIn

CUT_MARK = "…"
NAME_CHARS = 64  # display names: a prompt shows many, and one may not crowd out the chat
CHANNEL_NAME_CHARS = 100  # Discord's own limit
# What a second copy of a message may not change (an edit changes text and edited_ts only), as said
IDENTITY = dict(zip(MESSAGE_IDENTITY, ("author", "time", "reply")))

Progress = Callable[[int], Any]


class Writer:
    """Accumulates one batch of messages and the import's members and channels; flushes through
    the store. Within a batch, rows are merged per key the way the store's upserts would merge them
    one after the other, so one multi-row statement never touches the same row twice."""

    def __init__(self, store: Store, conn: Connection, settings: Settings, report, progress: Progress | None,
                 now: dt.datetime, batch_size: int):
        self.store, self.conn, self.report, self.progress = store, conn, report, progress
        self.settings, self.batch_size = settings, batch_size
        self.max_chars = settings.max_message_chars
        self.now = now  # ingested_at of every message in this import
        self.messages: dict[tuple[int, int], dict[str, Any]] = {}  # by (channel id, message id)
        self.origin: dict[tuple[int, int], tuple[str, str]] = {}  # where each was read: (source, where)
        self.members: dict[tuple[str, int], tuple[str, dt.datetime]] = {}  # (partition, user) -> name, seen at
        self.channels: dict[int, dict[str, Any]] = {}
        # channel id -> (visibility, guild id, partition, source, where) as first seen in this import
        self.audience: dict[int, tuple[str, int | None, str, str, str]] = {}
        self.unchecked: set[int] = set()  # channels not yet compared with the stored ones
        self.reported = 0
        self.deletions: list[DeletionIn] = []  # applied after the messages read before them
        self.copies: dict[tuple[int, int], list] = {}  # a message read more than once: each copy's edited_ts
        self.next_index_check = DEFER_INDEXES_AFTER  # doubles: the checks cost O(rows) in all
        self.deferred_indexes: list[str] | None = None  # dropped for the import, built at its end

    def take(self, row: MessageIn | DeletionIn, source: str, where: str) -> None:
        """A message, or a deletion: in input order (messages read before a deletion are written
        before it; consecutive deletions are applied together)."""
        if type(row) is DeletionIn:
            if self.messages:
                self.flush()
            self.deletions.append(row)
            self.report.deletions += 1
            if len(self.deletions) >= self.batch_size:
                self._delete()
            return
        if self.deletions:
            self._delete()
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
            text = _cut(text, self.max_chars)
            self.report.cut += 1

        # Names are learned per partition, from that partition's messages: a name seen only in a
        # restricted channel or a DM never labels anyone elsewhere (ARCHITECTURE.md, "names").
        # The message keeps the name it was posted under (author_name); an edit keeps it too.
        name = msg.user_name.strip()
        if len(name) > NAME_CHARS:
            name = _cut(name, NAME_CHARS)
        ts, user_id = msg.ts, msg.user_id
        key = (channel_id, msg.message_id)
        prev = self.messages.get(key)
        row = {
            "message_id": msg.message_id, "guild_id": msg.guild_id, "channel_id": channel_id,
            "visibility": msg.visibility, "partition": partition, "user_id": user_id, "text": text,
            "ts": ts, "reply_to": msg.reply_to, "edited_ts": msg.edited_ts, "ingested_at": self.now,
            "author_name": name or None,
        }
        if prev is None:
            self.messages[key], self.origin[key] = row, (source, where)
        elif changed := _changed(row, prev):
            earlier = self.origin[key]
            raise InputError(source, where, _conflict(key, changed, earlier[1] if earlier[0] == source
                                                      else f"{earlier[0]} {earlier[1]}"))
        else:
            # each copy's edit time, in input order, to count what each did (_count)
            self.copies.setdefault(key, [prev["edited_ts"]]).append(row["edited_ts"])
            if _newer_edit(row["edited_ts"], prev["edited_ts"]):
                prev["text"], prev["edited_ts"] = row["text"], row["edited_ts"]

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
            channel["name"] = _cut(msg.channel_name, CHANNEL_NAME_CHARS)
        if msg.is_group is not None:
            if msg.is_group:
                channel["is_group"], channel["one_to_one"] = True, False
            elif msg.visibility == "dm" and not channel["is_group"]:
                channel["one_to_one"] = True

    def flush(self) -> None:
        """Write the batch of messages (after checking it against what is stored)."""
        if self.messages:
            self._check_stored()
            stored = self._check_stored_messages()
            self._count(stored)
            self.store.write_messages(self.conn, list(self.messages.values()), stored.keys())
            # new messages only: a re-import (all unchanged) adds no index entry to save
            if self.deferred_indexes is None and self.report.new >= self.next_index_check:
                self.next_index_check *= 2
                self.deferred_indexes = self.store.defer_message_indexes(self.conn, self.report.new)
        self.messages, self.origin, self.copies = {}, {}, {}
        if self.progress is not None and self.report.read > self.reported:
            done, self.reported = self.report.read - self.reported, self.report.read
            self.progress(done)

    def finish(self) -> None:
        self.flush()
        if self.deletions:
            self._delete()
        if self.deferred_indexes is not None:
            self.store.restore_message_indexes(self.conn, self.deferred_indexes)
            self.deferred_indexes = None
        if self.channels:
            self.store.write_channels(self.conn, list(self.channels.values()))
        if self.members:
            self.store.write_members(self.conn, [
                {"partition": partition, "user_id": user_id, "display_name": name, "seen_at": seen_at}
                for (partition, user_id), (name, seen_at) in self.members.items()])

    def _delete(self) -> None:
        pairs = [(d.channel_id, d.message_id) for d in self.deletions if d.channel_id is not None]
        bare = [d.message_id for d in self.deletions if d.channel_id is None]
        self.deletions = []
        counts = delete_in(self.store, self.conn, pairs, bare, self.settings, self.now)
        self.report.deleted += counts["deleted"]
        self.report.not_found += counts["unknown"]

    def _first_audience(self, msg: MessageIn, seen, source: str, where: str) -> str:
        """A channel has one audience: the partition of a channel first seen, or InputError for an
        input that puts a seen one in another partition."""
        partition = partition_for(msg.visibility, msg.guild_id, msg.channel_id)
        if seen is None:
            self.audience[msg.channel_id] = (msg.visibility, msg.guild_id, partition, source, where)
            self.unchecked.add(msg.channel_id)
            return partition
        earlier = f"{seen[4]}" if seen[3] == source else f"{seen[3]} {seen[4]}"
        raise InputError(source, where, (
            f"channel {msg.channel_id} is {_audience(msg.visibility, msg.guild_id, partition)} here but "
            f"{_audience(*seen[:3])} at {earlier}: a channel has one visibility"))

    def _check_stored_messages(self) -> dict:
        """Against what is stored — earlier imports, and earlier batches of this one (same
        transaction): a message already there may get a newer text, nothing else. Returns the
        stored copies."""
        stored = self.store.stored_messages(self.conn, self.messages)
        if not stored:
            return stored
        for key, row in self.messages.items():  # in input order: the first conflicting line is named
            if key in stored and (changed := _changed(row, stored[key])):
                source, where = self.origin[key]
                raise InputError(source, where, _conflict(key, changed, None))
        return stored

    def _count(self, stored: dict) -> None:
        """What each message row of the batch does, as the store's upsert will: a message not
        stored is new; a copy whose edit is newer than the text it would replace (stored, or an
        earlier copy's) is an edit; any other copy changes nothing."""
        report = self.report
        if not stored and not self.copies:  # the common case of new messages: no per-row work
            report.new += len(self.messages)
            return
        for key, row in self.messages.items():
            old = stored.get(key)
            edits = self.copies.get(key) or (row["edited_ts"],)
            if old is None:
                report.new += 1
                latest, edits = edits[0], edits[1:]
            else:
                latest = old["edited_ts"]
            for edit in edits:
                if _newer_edit(edit, latest):
                    report.edited += 1
                    latest = edit
                else:
                    report.unchanged += 1

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
