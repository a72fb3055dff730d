"""The batch writer every importer feeds: writes what pipeline/ingest/batches.py builds, after
checking it against the database, inside the importer's one transaction.

Per batch: one read of the stored channels first seen in it, one read of the stored copies of its
messages (a message already stored may get a newer text, nothing else: pipeline/ingest/batches.py
says why), one upsert. Where the store can (PostgreSQL), a batch is first copied as all new,
without that read (`guess_new`): if none of its messages was stored that is the whole write; if one
was, the copy is undone and the batch goes the way above. Deletions in their place. Members and
channels, gathered over the whole import, are upserted once when it finishes. The counts of what
each message row did (new, edited, unchanged) are made here, against the stored copies.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Callable

from sqlalchemy.engine import Connection

from ..config import Settings
from ..errors import InputError
from ..store import Store
from ..store.ingest import DEFER_INDEXES_AFTER, MESSAGE_COLUMNS
from .batches import (CHANNEL_ID, EDITED_TS, GUILD_ID, IDENTITY, MESSAGE_ID, PARTITION, RECORD_ORDER, REPLY_TO, TS,
                      USER_ID, Batch, BatchBuilder, Deletions, Finished, audience_text, conflict, newer_edit)
from .deletion import delete_in, partition_days_of
from .model import DeletionIn

Progress = Callable[[int], Any]
EDIT_REASON = "message edited"
if RECORD_ORDER != MESSAGE_COLUMNS:  # a migration that adds or moves a column must change the builder too
    raise RuntimeError(f"pipeline/ingest/batches.py builds rows as {RECORD_ORDER}, chat_history has {MESSAGE_COLUMNS}")


class Writer:
    """Writes `Batch`, `Deletions` and `Finished` in order (`apply`); `builder()` is the
    BatchBuilder that feeds it in the same process."""

    def __init__(self, store: Store, conn: Connection, settings: Settings, report, progress: Progress | None,
                 now: dt.datetime, batch_size: int):
        self.store, self.conn, self.report, self.progress = store, conn, report, progress
        self.settings, self.now, self.batch_size = settings, now, batch_size
        # times as the store keeps them: SQLite's UTC text is made by the builder (once, in bulk)
        dialect = getattr(conn, "dialect", None)
        self.text_times = dialect is not None and dialect.name == "sqlite"
        # A batch is first offered to the store as all new, without reading what is stored
        # (store.copy_new_messages: PostgreSQL copies it; a store without that path declines at
        # once); once one turns out to hold a stored message, each batch is read first, until a
        # read finds none stored. PostgreSQL, a fresh 1.05M-message import: 101-109k -> 124-128k
        # msgs/s (the per-batch read was a sixth of it); a re-import pays one failed COPY of a batch.
        self.guess_new = True
        # channel id -> (visibility, guild id, partition, source, where) as first seen in this import
        self.audience: dict[int, tuple[str, int | None, str, str, str]] = {}
        self.unchecked: set[int] = set()  # channels not yet compared with the stored ones
        self.reported = 0
        self.next_index_check = DEFER_INDEXES_AFTER  # doubles: the checks cost O(rows) in all
        self.deferred_indexes: list[str] | None = None  # dropped for the import, built at its end
        self.edited: dict[tuple[int, int], dict] = {}  # stored messages whose text an edit replaced

    def builder(self) -> BatchBuilder:
        return BatchBuilder(self.apply, self.report, max_chars=self.settings.max_message_chars, now=self.now,
                            batch_size=self.batch_size, text_times=self.text_times)

    def apply(self, item: Batch | Deletions | Finished) -> None:
        if type(item) is Batch:
            self._write(item)
        elif type(item) is Deletions:
            self._delete(item.rows)
        else:
            self._finish(item)
        self._progress(item.read)

    def _write(self, batch: Batch) -> None:
        for channel_id, *seen in batch.audience:
            self.audience[channel_id] = tuple(seen)
            self.unchecked.add(channel_id)
        if not batch.records:
            return
        self._check_stored_channels()
        if self.guess_new and self.store.copy_new_messages(self.conn, batch.records):
            self._count(batch, {})  # none of them was stored: all new (edits among copies still counted)
        else:
            stored = self._check_stored_messages(batch)
            self._count(batch, stored)
            self.store.write_message_records(self.conn, batch.records, stored.keys())
            self.guess_new = not stored  # an overlap: read first until a batch has nothing stored
        # new messages only: a re-import (all unchanged) adds no index entry to save
        if (self.deferred_indexes is None and self.report.new >= self.next_index_check
                and self.settings.defer_import_indexes):
            self.next_index_check *= 2
            self.deferred_indexes = self.store.defer_message_indexes(self.conn, self.report.new)

    def _progress(self, read: int) -> None:
        if self.progress is not None and read > self.reported:
            done, self.reported = read - self.reported, read
            self.progress(done)

    def _finish(self, finished: Finished) -> None:
        if self.deferred_indexes is not None:
            self.store.restore_message_indexes(self.conn, self.deferred_indexes)
            self.deferred_indexes = None
        if finished.channels:
            self.store.write_channels(self.conn, finished.channels)
        # a second writer in a DM makes it a group for good (later deletions must not reopen it)
        if dms := [channel for channel, seen in self.audience.items() if seen[0] == "dm"]:
            self.store.mark_group_dms(self.conn, dms)
        if finished.members:
            self.store.write_members(self.conn, [
                {"partition": partition, "user_id": user_id, "display_name": name, "seen_at": seen_at}
                for partition, user_id, name, seen_at in finished.members])
        self._forget_edited()

    def _forget_edited(self) -> None:
        """What an edit took back is forgotten, however old the message: like a deletion
        (pipeline/ingest/deletion.py), its partition-day is queued (recomputed even after day 7,
        where a changed input alone is never looked at again) and facts lose the message from
        their sources — one resting only on it goes, and the recompute proposes again what the new
        text still says. Not today's: the next run sees its changed input, and a queued today
        would be summarised whole where an edit of a message not yet folded in waits for the
        hourly fold (README "mempipe serve")."""
        if not self.edited:
            return
        found = list(self.edited.values())
        tz_for = self.settings.timezones.for_guild
        today = {m["partition"]: self.now.astimezone(tz_for(m["guild_id"])).date() for m in found}
        queued = sorted((p, d) for p, d in partition_days_of(found, tz_for) if d < today[p])
        if queued:
            self.store.enqueue_days([{"partition": p, "day": d, "reason": EDIT_REASON} for p, d in queued],
                                    self.now, conn=self.conn)
        self.store.drop_fact_sources({m["partition"] for m in found}, {f"{c}:{m}" for c, m in self.edited},
                                     conn=self.conn)

    def _delete(self, deletions: list[DeletionIn]) -> None:
        pairs = [(d.channel_id, d.message_id) for d in deletions if d.channel_id is not None]
        bare = [d.message_id for d in deletions if d.channel_id is None]
        counts = delete_in(self.store, self.conn, pairs, bare, self.settings, self.now)
        self.report.deleted += counts["deleted"]
        self.report.not_found += counts["unknown"]

    def _check_stored_messages(self, batch: Batch) -> dict:
        """Against what is stored — earlier imports, and earlier batches of this one (same
        transaction): a message already there may get a newer text, nothing else. Returns the
        stored copies (user_id, ts, reply_to, edited_ts: aware datetimes)."""
        records = batch.records
        stored = self.store.stored_messages(self.conn, [(r[CHANNEL_ID], r[MESSAGE_ID]) for r in records])
        if not stored:
            return stored
        for i, record in enumerate(records):  # in input order: the first conflicting line is named
            key = (record[CHANNEL_ID], record[MESSAGE_ID])
            old = stored.get(key)
            if old is not None and (changed := [what for j, what in IDENTITY
                                                if _value(record[j]) != old[_NAMES[j]]]):
                source, where = batch.origins[i]
                raise InputError(batch.sources[source], where, conflict(key, changed, None))
        return stored

    def _count(self, batch: Batch, stored: dict) -> None:
        """What each message row of the batch does, as the store's upsert will: a message not
        stored is new; a copy whose edit is newer than the text it would replace (stored, or an
        earlier copy's) is an edit; any other copy changes nothing."""
        report = self.report
        if not stored and not batch.copies:  # the common case of new messages: no per-row work
            report.new += len(batch.records)
            return
        for i, record in enumerate(batch.records):
            old = stored.get((record[CHANNEL_ID], record[MESSAGE_ID]))
            edits = batch.copies.get(i) or (_value(record[EDITED_TS]),)
            if old is None:
                report.new += 1
                latest, edits = edits[0], edits[1:]
            else:
                latest = old["edited_ts"]
            for edit in edits:
                if newer_edit(edit, latest):
                    report.edited += 1
                    latest = edit
                    if old is not None:
                        key = (record[CHANNEL_ID], record[MESSAGE_ID])
                        self.edited[key] = {"partition": record[PARTITION], "guild_id": record[GUILD_ID],
                                            "ts": old["ts"]}
                else:
                    report.unchanged += 1

    def _check_stored_channels(self) -> None:
        if not self.unchecked:
            return
        stored = self.store.stored_channels(self.conn, self.unchecked)
        for channel_id, old in sorted(stored.items()):
            vis, guild_id, partition, source, where = self.audience[channel_id]
            if (old["visibility"], old["guild_id"]) != (vis, guild_id):
                raise InputError(source, where, (
                    f"channel {channel_id} is stored as {audience_text(old['visibility'], old['guild_id'], old['partition'])} "
                    f"but this input makes it {audience_text(vis, guild_id, partition)}: a channel keeps the "
                    f"visibility it was first imported with"))
        self.unchecked.clear()


_NAMES = {USER_ID: "user_id", TS: "ts", REPLY_TO: "reply_to"}  # a record's column -> stored_messages' key


def _value(value: Any) -> Any:
    """A record's value as stored_messages gives it: a time in SQLite's UTC text as a datetime."""
    return dt.datetime.fromisoformat(value) if type(value) is str else value
