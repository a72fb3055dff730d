"""The per-model limiter on a virtual clock: a minute passes in microseconds."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from pipeline.llm.errors import QuotaExhausted
from pipeline.llm.limiter import RateLimiter


class VirtualClock:
    def __init__(self):
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += max(seconds, 0)


def _max_in_window(times, window=60.0):
    times = sorted(times)
    best, j = 0, 0
    for i, t in enumerate(times):
        while times[j] <= t - window:
            j += 1
        best = max(best, i - j + 1)
    return best


def test_requests_per_minute_hold_under_concurrency():
    clock = VirtualClock()
    limiter = RateLimiter(30, None, monotonic=clock.monotonic, sleep=clock.sleep)
    sent = []

    async def one():
        slot = await limiter.acquire(10)
        sent.append(clock.now)
        await clock.sleep(0.5)  # the request's latency
        limiter.release(slot)

    async def go():
        await asyncio.gather(*(one() for _ in range(200)))

    asyncio.run(go())
    assert len(sent) == 200
    assert _max_in_window(sent) == 30  # full use of the quota, never more
    assert sent[-1] - sent[0] < 60.5 * (200 / 30)  # and no idle minutes beyond the latency


def test_tokens_per_minute_hold():
    clock = VirtualClock()
    limiter = RateLimiter(None, 1000, monotonic=clock.monotonic, sleep=clock.sleep)
    log = []

    async def go():
        for _ in range(30):
            limiter.release(await limiter.acquire(300))
            log.append(clock.now)

    asyncio.run(go())
    for i, t in enumerate(log):
        in_window = [u for u in log[: i + 1] if u > t - 60]
        assert 300 * len(in_window) <= 1000


def test_a_request_larger_than_the_budget_goes_alone_rather_than_never():
    clock = VirtualClock()
    limiter = RateLimiter(None, 100, monotonic=clock.monotonic, sleep=clock.sleep)
    limiter.release(asyncio.run(limiter.acquire(500)))
    limiter.release(asyncio.run(limiter.acquire(50)))
    assert clock.now >= 1060


def test_penalize_holds_requests_for_the_servers_retry_delay():
    clock = VirtualClock()
    limiter = RateLimiter(100, None, monotonic=clock.monotonic, sleep=clock.sleep)
    limiter.penalize(7.5)
    limiter.release(asyncio.run(limiter.acquire(1)))
    assert clock.now == pytest.approx(1007.5)


def test_daily_quota_is_spent_then_refused():
    clock = VirtualClock()
    limiter = RateLimiter(None, None, 3, monotonic=clock.monotonic, sleep=clock.sleep)

    async def go():
        for _ in range(3):
            limiter.release(await limiter.acquire(1))
        await limiter.acquire(1)

    with pytest.raises(QuotaExhausted, match="daily request quota of 3"):
        asyncio.run(go())


def test_daily_quota_starts_again_on_the_next_utc_day():
    clock = VirtualClock()
    wall = [dt.datetime(2026, 11, 6, 0, 30, tzinfo=dt.timezone(dt.timedelta(hours=2)))]  # 5 Nov 22:30 UTC
    limiter = RateLimiter(None, None, 2, monotonic=clock.monotonic, sleep=clock.sleep, clock=lambda: wall[0])

    async def spend(n):
        for _ in range(n):
            limiter.release(await limiter.acquire(1))

    asyncio.run(spend(2))
    wall[0] = dt.datetime(2026, 11, 5, 23, 59, tzinfo=dt.timezone.utc)  # the same UTC day
    with pytest.raises(QuotaExhausted):
        asyncio.run(spend(1))
    wall[0] = dt.datetime(2026, 11, 6, 0, 1, tzinfo=dt.timezone.utc)
    asyncio.run(spend(2))  # a new day: the full quota again
    with pytest.raises(QuotaExhausted):
        asyncio.run(spend(1))


def test_a_request_in_flight_holds_its_slot_until_its_answer_plus_a_window():
    clock = VirtualClock()
    limiter = RateLimiter(1, None, monotonic=clock.monotonic, sleep=clock.sleep)

    async def go():
        first = await limiter.acquire(1)
        await clock.sleep(5.0)  # a slow answer
        limiter.release(first)
        await limiter.acquire(1)

    asyncio.run(go())
    assert clock.now == pytest.approx(1065.0, abs=0.06)  # answer at 1005, + 60 s window
