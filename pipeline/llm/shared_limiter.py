"""One LLM quota for every process on one API key: the per-model limits (rpm, tpm, rpd) counted
in PostgreSQL (llm_quota_models, llm_quota_slots; pipeline/store/quota.py) instead of in each
process's memory, so that three workers on one key send the configured RPM, not three times it.

Used instead of RateLimiter (pipeline/llm/limiter.py; same interface: acquire → slot, release,
penalize, QuotaExhausted) when `gemini.shared_quota` or `workers.enabled` is set; that needs
PostgreSQL (SharedQuota.for_settings says so on SQLite).

The rule is RateLimiter's: a request counts from when it is sent until one window after its
answer arrived, so the count the server sees never exceeds the limit. In the database:

- acquire: one transaction locks the model's row (`SELECT … FOR UPDATE`, the row made on first
  use), prunes the slots whose time is over, checks the day's count, a 429's pause and the
  rpm/tpm window, and either inserts the request's slot (held_until NULL: in flight) or answers
  how long to wait; the limiter sleeps that long and asks again. Requests of one process ask one
  at a time per model (an asyncio.Lock), in order.
- release: held_until = the database's now + one window.
- penalize: every process's requests to the model wait until the database's now + seconds.
- a process that dies with a request in flight leaves its slot: it stops counting at
  sent_at + gemini.timeout_s + IN_FLIGHT_MARGIN_S + one window (by then the server saw the
  request, if it ever did, and its window is over).
- every time is the database's clock (clock_timestamp()), so machines whose clocks differ agree.
- every process on one key must configure the same limits: each checks its own against the
  shared count.

The database calls are blocking SQLAlchemy (the store layer and its StoreError boundary, shared
with every other role) run in threads (asyncio.to_thread): one short transaction per request is
cheap to hand to a thread, and an async engine would need a second error boundary and pool.
release() and penalize() are called synchronously by the summarizer, so their writes run as
background tasks; the next acquire (and aclose) waits for them and raises their StoreError, so
an acquire always counts this process's own releases. The one place such an error is only
logged is the run's closing (runner._close: a run's outcome is not replaced by its client's
close); the slot then counts until it expires, as a dead process's would — cautious, never over.
An acquire cancelled while its transaction runs may leave a slot in flight: it counts until it
expires as a dead process's would (too cautious, never over the limit).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import socket
from dataclasses import dataclass
from typing import Awaitable, Callable, Iterable

import sqlalchemy as sa

from ..errors import ConfigError
from ..store.quota import QuotaStorage, QuotaWindow
from .errors import QuotaExhausted
from .limiter import WINDOW_S

log = logging.getLogger(__name__)
# beyond gemini.timeout_s, how long a request may still be in flight: GeminiClient's own deadline
# is timeout_s + 5 s, and the rest covers the hop from the slot's insert to the request's send
IN_FLIGHT_MARGIN_S = 10.0


def _seconds(delta: dt.timedelta) -> float:
    return delta.total_seconds()


def wait_needed(window: QuotaWindow, tokens: int, *, rpm: int | None, tpm: int | None, rpd: int | None,
                window_s: float, in_flight_s: float) -> float:
    """Seconds until a request of `tokens` may go (0: now), from the model's window; raises
    QuotaExhausted when the daily count is spent. Each counted slot frees at the earliest at its
    held_until when answered; in flight, one window after now (its answer cannot come sooner)
    or when it expires as a dead process's, whichever is first. So the wait is never too long,
    and a request waiting on slots all in flight looks again after at most one window."""
    if rpd is not None and window.day_requests >= rpd:
        raise QuotaExhausted(f"daily request quota of {rpd} is spent (counted for every process in the database)")
    now = window.now
    if window.blocked_until is not None and window.blocked_until > now:
        return _seconds(window.blocked_until - now)
    in_flight_end = now + dt.timedelta(seconds=window_s)
    ends = sorted((s.held_until if s.held_until is not None else
                   min(in_flight_end, s.sent_at + dt.timedelta(seconds=in_flight_s + window_s)), s.tokens)
                  for s in window.slots)
    wait = 0.0
    if rpm is not None and len(ends) >= rpm:
        wait = _seconds(ends[len(ends) - rpm][0] - now)  # the slot whose end leaves rpm - 1 counted
    used = sum(t for _, t in ends)
    if tpm is not None and ends and used + tokens > tpm:
        # enough of the window must free; a request larger than the whole budget goes alone in
        # an empty window rather than never
        need, freed, until = used + tokens - tpm, 0, ends[-1][0]
        for end, t in ends:
            freed += t
            if freed >= need:
                until = end
                break
        wait = max(wait, _seconds(until - now))
    return max(wait, 0.0)


@dataclass(frozen=True)
class SharedSlot:
    """One request's row in llm_quota_slots."""

    id: int
    tokens: int


class SharedRateLimiter:
    def __init__(self, store: QuotaStorage, model: str, rpm: int | None, tpm: int | None, rpd: int | None = None, *,
                 window_s: float = WINDOW_S, in_flight_s: float = 60.0 + IN_FLIGHT_MARGIN_S,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep, holder: str | None = None):
        self.store, self.model = store, model
        self.rpm, self.tpm, self.rpd = rpm, tpm, rpd
        self.window, self.in_flight_s = window_s, in_flight_s
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}"
        self._sleep = sleep
        self._lock = asyncio.Lock()
        self._pending: set[asyncio.Task] = set()
        self._errors: list[BaseException] = []

    def _decide(self, tokens: int) -> Callable[[QuotaWindow], float]:
        return lambda window: wait_needed(window, tokens, rpm=self.rpm, tpm=self.tpm, rpd=self.rpd,
                                          window_s=self.window, in_flight_s=self.in_flight_s)

    async def acquire(self, tokens: int) -> SharedSlot:
        """Wait until one request of `tokens` prompt tokens fits the shared count; count it.
        Release the slot when the answer arrives (or the request failed)."""
        async with self._lock:  # one waiter per model in this process keeps its order fair
            await self.flush()
            while True:
                slot_id, wait = await asyncio.to_thread(
                    self.store.quota_take, self.model, tokens, self.holder, in_flight_s=self.in_flight_s,
                    window_s=self.window, decide=self._decide(tokens))
                if slot_id is not None:
                    return SharedSlot(slot_id, tokens)
                await self._sleep(wait)

    def release(self, slot: SharedSlot) -> None:
        """The answer arrived: the request counts for one window from the database's now."""
        self._in_background(self.store.quota_release, slot.id, self.window)

    def penalize(self, seconds: float) -> None:
        """After a 429 with a retry delay, hold every process's requests to this model for
        `seconds`: the server knows its quota better than our count does."""
        if seconds > 0:
            self._in_background(self.store.quota_block, self.model, seconds)

    def _in_background(self, write: Callable, *args) -> None:
        task = asyncio.get_running_loop().create_task(asyncio.to_thread(write, *args))
        self._pending.add(task)
        task.add_done_callback(self._written)

    def _written(self, task: asyncio.Task) -> None:
        self._pending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._errors.append(task.exception())

    async def flush(self) -> None:
        """Wait for this limiter's releases and pauses to be written; raise the first that
        failed (a StoreError)."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)
        if self._errors:
            first, *rest = self._errors
            self._errors.clear()
            if rest:
                log.error("%d more LLM quota writes failed for %s", len(rest), self.model)
            raise first


def shared_quota_wanted(settings) -> bool:
    return bool(settings.gemini.shared_quota or settings.workers.enabled)


class SharedQuota:
    """The database connection one summarizer's shared limiters count through: a small engine of
    its own from settings.database_url, opened at the first request and closed by aclose()."""

    def __init__(self, database_url: str, *, window_s: float, in_flight_s: float, max_overflow: int,
                 open_store: Callable[[], QuotaStorage] | None = None):
        self.database_url, self.window_s, self.in_flight_s = database_url, window_s, in_flight_s
        self._open_store = open_store or (lambda: _open_store(database_url, max_overflow))
        self._store: QuotaStorage | None = None

    @classmethod
    def for_settings(cls, settings) -> "SharedQuota | None":
        """None unless gemini.shared_quota or workers.enabled is set; then the quota's
        database, which must be PostgreSQL (ConfigError otherwise, saying what to change)."""
        if not shared_quota_wanted(settings):
            return None
        if _backend(settings.database_url) != "postgresql":
            why = ("gemini.shared_quota" if settings.gemini.shared_quota
                   else "workers.enabled (it implies gemini.shared_quota)")
            raise ConfigError(
                f"{why} counts the LLM quota in the database for every process, which needs PostgreSQL: "
                "set database_url to postgresql+psycopg://user@host/db, or turn it off (one process on SQLite "
                "keeps its own count)")
        cfg = settings.gemini
        return cls(settings.database_url, window_s=cfg.rate_window_s, in_flight_s=cfg.timeout_s + IN_FLIGHT_MARGIN_S,
                   max_overflow=cfg.concurrency)

    def limiter(self, model: str, rpm: int | None, tpm: int | None, rpd: int | None, *,
                sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> SharedRateLimiter:
        if self._store is None:
            self._store = self._open_store()
        return SharedRateLimiter(self._store, model, rpm, tpm, rpd, window_s=self.window_s,
                                 in_flight_s=self.in_flight_s, sleep=sleep)

    async def aclose(self, limiters: Iterable) -> None:
        """Write what the limiters still hold (raising the first failure), then close."""
        try:
            for limiter in limiters:
                if isinstance(limiter, SharedRateLimiter):
                    await limiter.flush()
        finally:
            if self._store is not None:
                store, self._store = self._store, None
                await asyncio.to_thread(store.close)


def _backend(url: str) -> str:
    try:
        return sa.engine.make_url(url).get_backend_name()
    except sa.exc.ArgumentError:
        return "?"  # make_engine says what is wrong with it


def _open_store(database_url: str, max_overflow: int) -> QuotaStorage:
    from ..store import Store

    # one connection for the acquires (one per model at a time), more for releases in parallel
    return Store.open(database_url, check_schema=False, pool_size=1, max_overflow=max_overflow)
