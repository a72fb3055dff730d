"""chat_requests: in-chat memory requests found by the daily stage, applied once
(pipeline/stages/requests.py). A request is recorded when found (pending, with its text) — a
request found again, when its day is made again, is left as it is — and claimed (marked
applied or refused, its text cleared) by the one run that then applies it."""

from __future__ import annotations

import datetime as dt
from typing import Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.tables import chat_requests
from .base import chunks


class RequestsStorage(Protocol):
    def record_requests(self, rows: list[dict]) -> None: ...
    def pending_requests(self) -> list[dict]: ...
    def claim_request(self, channel_id: int, message_id: int, status: str, reason: str | None,
                      now: dt.datetime) -> bool: ...
    def handled_request(self, channel_id: int, message_id: int, status: str, reason: str | None,
                        now: dt.datetime) -> None: ...
    def drop_chat_requests(self, keys: list[tuple[int, int]], *, conn: Connection | None = None) -> int: ...
    def prune_chat_requests(self, before: dt.datetime, batch_size: int) -> int: ...


class RequestsStore:
    def record_requests(self, rows: list[dict]) -> None:
        """New requests, pending; one already known (pending or handled) is kept as it is."""
        if not rows:
            return
        with self.writing("recording chat requests") as conn:
            known = {(r.channel_id, r.message_id) for r in conn.execute(
                sa.select(chat_requests.c.channel_id, chat_requests.c.message_id).where(
                    sa.tuple_(chat_requests.c.channel_id, chat_requests.c.message_id).in_(
                        [(r["channel_id"], r["message_id"]) for r in rows])))}
            new = [r for r in rows if (r["channel_id"], r["message_id"]) not in known]
            if new:
                conn.execute(sa.insert(chat_requests), [{**r, "status": "pending"} for r in new])

    def pending_requests(self) -> list[dict]:
        """Pending requests in the order they were said."""
        c = chat_requests.c
        return self.rows("reading chat requests", sa.select(chat_requests).where(c.status == "pending")
                         .order_by(c.ts, c.channel_id, c.message_id))

    def claim_request(self, channel_id: int, message_id: int, status: str, reason: str | None,
                      now: dt.datetime) -> bool:
        """Mark a pending request handled (applied, or refused with its reason), its text cleared;
        True when this call did it — False when it was no longer pending (handled by an
        overlapping run, or deleted by a clear): only the caller that claims it applies it."""
        c = chat_requests.c
        with self.writing("claiming a chat request") as conn:
            return conn.execute(sa.update(chat_requests).where(
                c.channel_id == channel_id, c.message_id == message_id, c.status == "pending")
                .values(status=status, reason=reason, text=None, handled_at=now)).rowcount == 1

    def handled_request(self, channel_id: int, message_id: int, status: str, reason: str | None,
                        now: dt.datetime) -> None:
        """Set a request's outcome (a claimed one the controls then refused)."""
        c = chat_requests.c
        with self.writing("recording a chat request") as conn:
            conn.execute(sa.update(chat_requests).where(c.channel_id == channel_id, c.message_id == message_id)
                         .values(status=status, reason=reason, text=None, handled_at=now))

    def drop_chat_requests(self, keys: list[tuple[int, int]], *, conn: Connection | None = None) -> int:
        """Delete the requests of these messages ((channel_id, message_id): deleted messages), in
        the caller's transaction when given; returns the rows deleted."""
        c = chat_requests.c
        with self.writing_in("dropping chat requests", conn) as cx:
            if cx.dialect.name == "sqlite":  # one keyed statement per message: a row-value IN scans the table
                values = [{"ch": ch, "msg": msg} for ch, msg in sorted(set(keys))]
                if not values:
                    return 0
                return cx.execute(sa.delete(chat_requests).where(
                    c.channel_id == sa.bindparam("ch"), c.message_id == sa.bindparam("msg")), values).rowcount
            return sum(cx.execute(sa.delete(chat_requests).where(sa.tuple_(c.channel_id, c.message_id).in_(chunk)))
                       .rowcount for chunk in chunks(keys))

    def prune_chat_requests(self, before: dt.datetime, batch_size: int) -> int:
        """Delete handled requests (applied or refused) said before `before`, `batch_size` rows per
        transaction; a pending one is kept until applied. Returns the rows deleted."""
        c = chat_requests.c
        total = 0
        while True:
            with self.writing("pruning chat requests") as conn:
                batch = conn.execute(sa.select(c.channel_id, c.message_id).where(
                    c.status != "pending", c.ts < before).limit(batch_size)).all()
                if batch:
                    self.drop_chat_requests([tuple(r) for r in batch], conn=conn)
                total += len(batch)
            if len(batch) < batch_size:
                return total

