"""The ingest role of pipeline/testing.py's InMemoryStageStore (IngestStorage): messages, members
and channels with the SQL store's upsert semantics (pipeline/store/ingest.py). A `conn` is
accepted and ignored: the in-memory transaction already makes an import all or nothing."""

from __future__ import annotations

from .store.ingest import MESSAGE_COLUMNS, MESSAGE_IDENTITY
from .testing_records import _out, _recorded


class InMemoryIngest:
    """Mixed into InMemoryStageStore (which provides tables, calls, _merge and _select)."""

    @_recorded
    def write_messages(self, conn, rows, stored=None) -> None:  # (stored: what the SQL store need not ask again)
        def newer_edit(old, new):  # by (channel, message id); never for another author
            newer = new["edited_ts"] is not None and (old["edited_ts"] is None or new["edited_ts"] > old["edited_ts"])
            return {"text": new["text"], "edited_ts": new["edited_ts"]} if newer and new["user_id"] == old["user_id"] else None
        self._merge("chat_history", rows, newer_edit)

    def write_message_records(self, conn, records, stored) -> None:  # the importer's ready rows (datetimes here)
        self.write_messages(conn, [dict(zip(MESSAGE_COLUMNS, record)) for record in records], stored)

    def copy_new_messages(self, conn, records) -> bool:  # the SQL store's PostgreSQL shortcut: not here
        return False

    @_recorded
    def write_members(self, conn, rows) -> None:
        self._merge("members", rows, lambda old, new: {"display_name": new["display_name"], "seen_at": new["seen_at"]}
                    if new["seen_at"] >= old["seen_at"] else None)

    @_recorded
    def write_channels(self, conn, rows) -> None:  # a group flag once seen wins; one-to-one only if said, never a group
        self._merge("channels", rows, lambda old, new: {
            "is_group": (group := old["is_group"] or new["is_group"]), "one_to_one": (old["one_to_one"] or new["one_to_one"])
            and not group, "name": new["name"] if new["name"] is not None else old["name"]})

    @_recorded
    def mark_group_dms(self, conn, channel_ids) -> None:  # two writers ever: a group for good
        with self._writing():
            for row in self._select("channels", channel_id=tuple(channel_ids), visibility="dm"):
                if len({m["user_id"] for m in self._select("chat_history", partition=row["partition"])}) > 1:
                    self._update("channels", self._key("channels", row), {"is_group": True, "one_to_one": False})

    @_recorded
    def stored_channels(self, conn, channel_ids) -> dict[int, dict]:
        return {r["channel_id"]: _out(r, ("channel_id", "guild_id", "visibility", "partition"))
                for r in self._select("channels", channel_id=channel_ids)}

    @_recorded
    def stored_messages(self, conn, keys) -> dict[tuple[int, int], dict]:
        return {k: _out(r, (*MESSAGE_IDENTITY, "edited_ts")) for k in keys if (r := self.tables["chat_history"].get(k))}

    def defer_message_indexes(self, conn, new) -> None:  # no index to keep up to date in memory
        return None  # (so restore_message_indexes is never called)
