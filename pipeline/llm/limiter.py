"""Per-model sliding-window limiter for requests/min and tokens/min, plus a daily count.

The server counts a request when it *arrives*, which is somewhere between when we send it and
when its answer comes back. So a request occupies the window from when it is sent until one
window after its answer arrived: the count the server sees can never exceed the limit, whatever
the network does. With real latencies (seconds) against a 60 s window the cost is a few percent
of the quota.

Time and sleeping are injected so tests can drive it without waiting: a monotonic timer and a
sleep for the window, and a Clock (pipeline/clock.py) for the UTC day the daily count belongs to."""

from __future__ import annotations

import asyncio
import datetime as dt
import math
import time
from typing import Awaitable, Callable

from ..clock import Clock, system_clock
from .errors import QuotaExhausted

WINDOW_S = 60.0
_POLL_S = 0.05  # while every slot is held by a request in flight, check again this often


class Slot:
    """One request's place in the window: in flight until released."""

    __slots__ = ("tokens", "until")

    def __init__(self, tokens: int):
        self.tokens = tokens
        self.until = math.inf  # the request counts until this time


class RateLimiter:
    def __init__(self, rpm: int | None, tpm: int | None, rpd: int | None = None, *,
                 window_s: float = WINDOW_S,
                 monotonic: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 clock: Clock = system_clock):
        self.rpm, self.tpm, self.rpd = rpm, tpm, rpd
        self.window = window_s
        self._now, self._sleep, self._clock = monotonic, sleep, clock
        self._slots: list[Slot] = []
        self._today = 0  # requests sent on self._day
        self._day = self._utc_day()
        self._blocked_until = 0.0
        self._lock = asyncio.Lock()

    def _utc_day(self) -> dt.date:
        return self._clock().astimezone(dt.timezone.utc).date()

    def _prune(self, now: float) -> None:
        self._slots = [s for s in self._slots if s.until > now]

    def _wait_needed(self, now: float, tokens: int) -> float:
        if self._blocked_until > now:
            return self._blocked_until - now
        if self.rpm is not None and len(self._slots) >= self.rpm:
            return min(s.until for s in self._slots) - now
        if self.tpm is not None and self._slots and sum(s.tokens for s in self._slots) + tokens > self.tpm:
            # wait until enough of the window frees (a request larger than the whole budget goes
            # alone in an empty window rather than never)
            need = sum(s.tokens for s in self._slots) + tokens - self.tpm
            freed = 0
            for s in sorted(self._slots, key=lambda s: s.until):
                freed += s.tokens
                if freed >= need:
                    return s.until - now
        return 0.0

    async def acquire(self, tokens: int) -> Slot:
        """Wait until one request of `tokens` prompt tokens fits; count it. Release the slot when
        the answer arrives (or the request failed)."""
        async with self._lock:  # one waiter at a time keeps the order fair and the count exact
            day = self._utc_day()
            if day != self._day:
                self._day, self._today = day, 0
            if self.rpd is not None and self._today >= self.rpd:
                raise QuotaExhausted(f"daily request quota of {self.rpd} is spent")
            while True:
                now = self._now()
                self._prune(now)
                wait = self._wait_needed(now, tokens)
                if wait <= 0:
                    break
                await self._sleep(min(wait, _POLL_S) if math.isinf(wait) else wait)
            slot = Slot(tokens)
            self._slots.append(slot)
            self._today += 1
            return slot

    def release(self, slot: Slot) -> None:
        """The answer arrived: the request stays in the window for one window from now."""
        slot.until = self._now() + self.window

    def penalize(self, seconds: float) -> None:
        """After a 429 with a retry delay, hold every request to this model for `seconds`:
        the server knows its quota better than our count does."""
        if seconds > 0:
            self._blocked_until = max(self._blocked_until, self._now() + seconds)
