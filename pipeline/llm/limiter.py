"""Per-model sliding-window limiter for requests/min and tokens/min, plus a daily count.

Time and sleeping are injected so tests can drive it without waiting."""

from __future__ import annotations

import asyncio
import collections
import time
from typing import Awaitable, Callable

from .errors import QuotaExhausted

WINDOW_S = 60.0


class RateLimiter:
    def __init__(self, rpm: int | None, tpm: int | None, rpd: int | None = None, *,
                 window_s: float = WINDOW_S,
                 monotonic: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep):
        self.rpm, self.tpm, self.rpd = rpm, tpm, rpd
        self.window = window_s
        # A small margin: the server counts arrivals, we count departures, and the two clocks
        # differ by network jitter. 2% of the window, at most half a second.
        self.margin = min(window_s * 0.02, 0.5)
        self._now, self._sleep = monotonic, sleep
        self._events: collections.deque[tuple[float, int]] = collections.deque()
        self._tokens_in_window = 0
        self._today = 0
        self._day = time.gmtime().tm_yday
        self._blocked_until = 0.0
        self._lock = asyncio.Lock()
        self.waited_s = 0.0

    def _prune(self, now: float) -> None:
        while self._events and self._events[0][0] <= now - self.window:
            _, tokens = self._events.popleft()
            self._tokens_in_window -= tokens

    def _wait_needed(self, now: float, tokens: int) -> float:
        if self._blocked_until > now:
            return self._blocked_until - now
        if self.rpm is not None and len(self._events) >= self.rpm:
            return self._events[0][0] + self.window + self.margin - now
        if self.tpm is not None and self._events and self._tokens_in_window + tokens > self.tpm:
            # free enough of the window for this request (a request larger than the whole
            # budget goes alone in an empty window rather than never)
            freed, need = 0, self._tokens_in_window + tokens - self.tpm
            for t, tok in self._events:
                freed += tok
                if freed >= need:
                    return t + self.window + self.margin - now
            return self._events[-1][0] + self.window + self.margin - now
        return 0.0

    async def acquire(self, tokens: int) -> None:
        """Wait until one request of `tokens` prompt tokens fits, then count it."""
        async with self._lock:  # one waiter at a time keeps the order fair and the count exact
            if time.gmtime().tm_yday != self._day:
                self._day, self._today = time.gmtime().tm_yday, 0
            if self.rpd is not None and self._today >= self.rpd:
                raise QuotaExhausted(f"daily request quota of {self.rpd} is spent")
            while True:
                now = self._now()
                self._prune(now)
                wait = self._wait_needed(now, tokens)
                if wait <= 0:
                    break
                self.waited_s += wait
                await self._sleep(wait)
            self._events.append((self._now(), tokens))
            self._tokens_in_window += tokens
            self._today += 1

    def penalize(self, seconds: float) -> None:
        """After a 429 with a retry delay, hold every request to this model for `seconds`:
        the server knows its quota better than our count does."""
        if seconds > 0:
            self._blocked_until = max(self._blocked_until, self._now() + seconds)
