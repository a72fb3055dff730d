"""The LLM quota shared by every process (llm_quota_models, llm_quota_slots; PostgreSQL only):
what each model's window holds, counted in one short transaction per request under the model
row's lock (`SELECT … FOR UPDATE`). The rule that decides how long a request must wait is the
limiter's (pipeline/llm/shared_limiter.py), passed in as `decide`; the store only reads, prunes
and counts.

Every time here is the database's clock (`clock_timestamp()`, not the transaction's `now()`),
so that processes on different machines, whose clocks differ, agree on one timeline.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Callable, Protocol

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.engine import Connection

from ..db.tables import llm_quota_models, llm_quota_slots
from ..db.types import UtcDateTime

UTC = dt.timezone.utc


@dataclass(frozen=True)
class QuotaSlotState:
    tokens: int
    sent_at: dt.datetime
    held_until: dt.datetime | None  # None: in flight


@dataclass(frozen=True)
class QuotaWindow:
    """A model's window when a request asks to go, read under the model row's lock."""

    now: dt.datetime                      # the database's clock
    blocked_until: dt.datetime | None     # a 429's pause, when one is still ahead
    slots: tuple[QuotaSlotState, ...]     # the requests that still count
    day_requests: int                     # requests sent so far on now's UTC day


# The limiter's rule: seconds to wait before the request may go (0: it goes now); it raises
# QuotaExhausted when the daily count is spent.
Decide = Callable[[QuotaWindow], float]


class QuotaStorage(Protocol):
    def quota_take(self, model: str, tokens: int, holder: str, *, in_flight_s: float,
                   window_s: float, decide: Decide) -> tuple[int | None, float]: ...
    def quota_release(self, slot_id: int, window_s: float) -> None: ...
    def quota_block(self, model: str, seconds: float) -> None: ...
    def quota_slots(self, model: str) -> list[dict]: ...
    def close(self) -> None: ...


def _now(conn: Connection) -> dt.datetime:
    return conn.execute(sa.select(sa.func.clock_timestamp(type_=UtcDateTime()))).scalar_one()


def _seconds(seconds: float):
    return sa.literal(dt.timedelta(seconds=seconds), sa.Interval())


def _lock_model(conn: Connection, model: str) -> sa.Row:
    """The model's row, locked until the transaction ends (made on first use)."""
    locked = sa.select(llm_quota_models).where(llm_quota_models.c.model == model).with_for_update()
    row = conn.execute(locked).one_or_none()
    if row is None:
        conn.execute(insert(llm_quota_models).values(model=model).on_conflict_do_nothing(index_elements=["model"]))
        row = conn.execute(locked).one()
    return row


class QuotaStore:
    def quota_take(self, model: str, tokens: int, holder: str, *, in_flight_s: float,
                   window_s: float, decide: Decide) -> tuple[int | None, float]:
        """One request of `tokens` asks to go: (slot id, 0) when it was counted, in flight, or
        (None, seconds to wait) when `decide` says it must wait. Under the model row's lock:
        slots whose time is over are deleted first — answered ones at held_until, ones still in
        flight (their process died, or lost its database) at sent_at + in_flight_s + window_s."""
        slots = llm_quota_slots.c
        with self.writing("counting the LLM quota") as conn:
            # READ COMMITTED (the default): each statement after the lock sees every slot that
            # the transactions it waited for committed
            row = _lock_model(conn, model)
            now = _now(conn)
            dead_before = now - dt.timedelta(seconds=in_flight_s + window_s)
            conn.execute(sa.delete(llm_quota_slots).where(
                slots.model == model,
                sa.or_(slots.held_until <= now, sa.and_(slots.held_until.is_(None), slots.sent_at <= dead_before))))
            counted = tuple(QuotaSlotState(*r) for r in conn.execute(
                sa.select(slots.tokens, slots.sent_at, slots.held_until).where(slots.model == model)))
            today = now.astimezone(UTC).date()
            day_requests = row.day_requests if row.day == today else 0
            blocked = row.blocked_until if row.blocked_until is not None and row.blocked_until > now else None
            wait = decide(QuotaWindow(now, blocked, counted, day_requests))
            if wait > 0:
                return None, wait
            slot_id = conn.execute(sa.insert(llm_quota_slots).values(
                model=model, tokens=tokens, sent_at=now, held_until=None, holder=holder,
            ).returning(slots.id)).scalar_one()
            conn.execute(sa.update(llm_quota_models).where(llm_quota_models.c.model == model).values(
                day=today, day_requests=day_requests + 1))
            return slot_id, 0.0

    def quota_release(self, slot_id: int, window_s: float) -> None:
        """The answer arrived (or the request failed): the slot counts for one more window from
        now. A slot already deleted as dead stays deleted."""
        with self.writing("releasing an LLM quota slot") as conn:
            conn.execute(sa.update(llm_quota_slots).where(llm_quota_slots.c.id == slot_id).values(
                held_until=sa.func.clock_timestamp() + _seconds(window_s)))

    def quota_block(self, model: str, seconds: float) -> None:
        """Hold every process's requests to `model` for `seconds` from now (a 429's retry
        delay); a longer pause already set stays."""
        with self.writing("pausing the LLM quota") as conn:
            _lock_model(conn, model)
            conn.execute(sa.update(llm_quota_models).where(llm_quota_models.c.model == model).values(
                blocked_until=sa.func.greatest(llm_quota_models.c.blocked_until,
                                               sa.func.clock_timestamp() + _seconds(seconds))))

    def quota_slots(self, model: str) -> list[dict]:
        """The model's slot rows as stored (expired ones included until the next request prunes
        them), oldest first."""
        return self.rows("reading the LLM quota", sa.select(llm_quota_slots)
                         .where(llm_quota_slots.c.model == model).order_by(llm_quota_slots.c.id))
