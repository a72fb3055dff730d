"""The shared LLM quota (pipeline/llm/shared_limiter.py) on PostgreSQL: limiters on separate
engines stand for separate processes' views of one count. Real time with sub-second windows: the
database's clock is the one every process agrees on, so it is not faked. The rule itself
(wait_needed) is also checked on plain values."""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import time

import pytest
import sqlalchemy as sa

from pipeline.errors import ConfigError, StoreError
from pipeline.llm.errors import QuotaExhausted
from pipeline.llm.gemini import GeminiClient
from pipeline.llm.limiter import RateLimiter
from pipeline.llm.shared_limiter import IN_FLIGHT_MARGIN_S, SharedQuota, SharedRateLimiter, wait_needed
from pipeline.store import Store
from pipeline.store.quota import QuotaSlotState, QuotaWindow
from pipeline.summarize.base import Usage
from pipeline.summarize.llm import LLMSummarizer
from pipeline.summarize.schemas import HistoricalOut
from tests.fakes.gemini_server import FakeGemini, status

UTC = dt.timezone.utc
MODEL = "gemini-2.5-flash"
T0 = dt.datetime(2026, 11, 5, 12, tzinfo=UTC)


def _at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


# ---------------------------------------------------------------------- the rule on plain values

def _wait(slots=(), *, rpm=None, tpm=None, rpd=None, tokens=10, day_requests=0, blocked_until=None) -> float:
    window = QuotaWindow(T0, blocked_until, tuple(slots), day_requests)
    return wait_needed(window, tokens, rpm=rpm, tpm=tpm, rpd=rpd, window_s=60.0, in_flight_s=70.0)


def test_the_rule_waits_for_the_slot_that_frees_first_and_never_less_than_a_window_for_one_in_flight():
    answered = [QuotaSlotState(10, _at(-30), _at(20)), QuotaSlotState(10, _at(-40), _at(5))]
    assert _wait(answered, rpm=3) == 0
    assert _wait(answered, rpm=2) == 5  # the earlier held_until frees the place
    in_flight = QuotaSlotState(10, _at(-1), None)
    assert _wait([in_flight], rpm=1) == 60  # its answer comes at the earliest now: one window more
    # past its deadline (70 s in flight at most) 5 s ago: the server saw it by then, if ever
    dead = QuotaSlotState(10, _at(-75), None)
    assert _wait([dead], rpm=1) == 55


def test_the_rule_for_tokens_a_pause_and_the_day():
    slots = [QuotaSlotState(600, _at(-30), _at(10)), QuotaSlotState(300, _at(-20), _at(30))]
    assert _wait(slots, tpm=1000, tokens=100) == 0
    assert _wait(slots, tpm=1000, tokens=200) == 10  # the first slot's 600 tokens are enough
    assert _wait(slots, tpm=1000, tokens=800) == 30  # both must free
    assert _wait(slots, tpm=1000, tokens=5000) == 30  # too big for any window: alone, not never
    assert _wait([], tpm=1000, tokens=5000) == 0
    assert _wait(rpm=100, blocked_until=_at(7)) == 7
    assert _wait(rpd=5, day_requests=4) == 0
    with pytest.raises(QuotaExhausted, match="daily request quota of 5"):
        _wait(rpd=5, day_requests=5)


# ---------------------------------------------------------------------- on PostgreSQL

@pytest.fixture
def pg_url(db_url, db_kind, store):
    """A PostgreSQL database at the current schema (the `store` fixture upgraded it)."""
    if db_kind != "postgresql":
        pytest.skip("the shared quota is PostgreSQL's (SQLite: see test_sqlite_says_to_use_postgresql)")
    return db_url


@pytest.fixture
def processes(pg_url):
    """open(): a store on an engine of its own, as another process would have."""
    opened: list[Store] = []

    def open_store() -> Store:
        opened.append(Store.open(pg_url))
        return opened[-1]

    yield open_store
    for s in opened:
        s.close()


def _timed_run(go):
    """asyncio.run(go()) with the garbage collector held off: a full collection of the test
    process's heap landing inside a measured wait would be counted as the limiter's delay. (One
    wait measured 1.24 s late in a whole suite, the same test alone 6 of 6 within bounds; the
    collection is the likely cause, not a proven one.)"""
    gc.disable()
    try:
        return asyncio.run(go())
    finally:
        gc.enable()


def _limiter(store, rpm=None, tpm=None, rpd=None, *, window_s=0.6, in_flight_s=30.0, holder=None):
    return SharedRateLimiter(store, MODEL, rpm, tpm, rpd, window_s=window_s, in_flight_s=in_flight_s, holder=holder)


def test_two_processes_share_one_count(processes):
    a, b = _limiter(processes(), rpm=3, holder="a:1"), _limiter(processes(), rpm=3, holder="b:2")

    async def go():
        slots = [await a.acquire(10), await a.acquire(10), await b.acquire(10)]
        waiting = asyncio.ensure_future(b.acquire(10))  # a fourth would make 4 in the window
        await asyncio.sleep(0.3)
        assert not waiting.done()
        a.release(slots[0])
        await a.flush()
        released = time.monotonic()
        fourth = await waiting
        return slots + [fourth], time.monotonic() - released

    slots, waited = _timed_run(go)
    assert 0.6 - 0.02 <= waited < 0.6 + 0.4  # the released request still counted for one window
    rows = processes().quota_slots(MODEL)
    assert [r["holder"] for r in rows] == ["a:1", "b:2", "b:2"]  # the expired one was pruned
    assert [r["id"] for r in rows] == [s.id for s in slots[1:]]
    assert [r["held_until"] is None for r in rows] == [True, True, True]


def test_a_released_request_holds_its_place_for_one_window_after_the_answer(processes):
    a, b = _limiter(processes(), rpm=1), _limiter(processes(), rpm=1)

    async def go():
        slot = await a.acquire(10)
        await asyncio.sleep(0.4)  # the request's latency
        a.release(slot)
        await a.flush()
        released = time.monotonic()
        await b.acquire(10)
        return time.monotonic() - released

    waited = _timed_run(go)
    assert 0.6 - 0.02 <= waited < 0.6 + 0.3  # counted from the answer, not from the send


def test_a_429_pause_holds_every_process(processes):
    a, b = _limiter(processes(), rpm=100), _limiter(processes(), rpm=100)

    async def go():
        await a.acquire(10)
        a.penalize(0.8)
        await a.flush()
        paused = time.monotonic()
        await b.acquire(10)
        b_waited = time.monotonic() - paused
        await a.acquire(10)
        return b_waited

    waited = _timed_run(go)
    assert 0.8 - 0.02 <= waited < 0.8 + 0.3


def test_the_daily_count_is_shared_and_belongs_to_the_utc_day(processes, pg_url):
    a, b = _limiter(processes(), rpd=2), _limiter(processes(), rpd=2)

    async def spend():
        await a.acquire(10)
        await b.acquire(10)
        for limiter in (a, b):
            with pytest.raises(QuotaExhausted, match="daily request quota of 2 is spent"):
                await limiter.acquire(10)

    asyncio.run(spend())
    engine = sa.create_engine(pg_url)
    with engine.begin() as conn:
        today = conn.execute(sa.text("SELECT (clock_timestamp() AT TIME ZONE 'UTC')::date")).scalar_one()
        assert conn.execute(sa.text("SELECT day, day_requests FROM llm_quota_models")).one() == (today, 2)
        # the same two requests made yesterday (UTC): today's count starts again
        conn.execute(sa.text("UPDATE llm_quota_models SET day = day - 1"))
    asyncio.run(b.acquire(10))
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT day, day_requests FROM llm_quota_models")).one() == (today, 1)
    engine.dispose()


def test_a_dead_processs_request_in_flight_stops_counting_after_timeout_and_a_window(processes):
    dead_store = processes()
    dead = _limiter(dead_store, rpm=1, window_s=0.5, in_flight_s=0.4)
    alive = _limiter(processes(), rpm=1, window_s=0.5, in_flight_s=0.4)

    async def go():
        await dead.acquire(10)  # sent, and its process never answers
        sent = time.monotonic()
        dead_store.close()
        await alive.acquire(10)
        return time.monotonic() - sent

    waited = _timed_run(go)
    assert 0.9 - 0.02 <= waited < 0.9 + 0.3  # sent_at + in flight at most 0.4 s + the 0.5 s window
    assert len(processes().quota_slots(MODEL)) == 1  # the dead one is gone


def test_database_errors_are_store_errors_and_a_failed_release_is_raised_by_the_next_acquire(processes, pg_url):
    store = processes()
    limiter = _limiter(store, rpm=10)

    async def go():
        slot = await limiter.acquire(10)
        engine = sa.create_engine(pg_url)
        with engine.begin() as conn:
            conn.execute(sa.text("ALTER TABLE llm_quota_slots RENAME TO llm_quota_slots_gone"))
        engine.dispose()
        limiter.release(slot)  # fails in the background
        with pytest.raises(StoreError, match="releasing an LLM quota slot"):
            await limiter.acquire(10)
        with pytest.raises(StoreError, match="counting the LLM quota: .*llm_quota_slots"):
            await limiter.acquire(10)

    asyncio.run(go())


# ---------------------------------------------------------------------- choosing the limiter

def test_the_summarizer_counts_in_the_database_with_shared_quota_or_workers(settings, processes, pg_url):
    settings.database_url = pg_url
    assert isinstance(LLMSummarizer(settings, client=None)._limiter(MODEL), RateLimiter)
    for shared_quota, workers in ((True, False), (False, True)):
        s = settings.model_copy(deep=True)
        s.gemini.shared_quota, s.workers.enabled = shared_quota, workers
        summarizer = LLMSummarizer(s, client=_NoClient())
        limiter = summarizer._limiter(MODEL)
        assert isinstance(limiter, SharedRateLimiter)
        assert (limiter.rpm, limiter.tpm, limiter.rpd) == (10, 250000, 250)  # gemini.limits of default.toml
        assert limiter.in_flight_s == s.gemini.timeout_s + IN_FLIGHT_MARGIN_S
        assert limiter.window == s.gemini.rate_window_s

        async def use_and_close():
            limiter.release(await limiter.acquire(10))
            await summarizer.aclose()  # writes the release, closes its engine

        asyncio.run(use_and_close())
        assert [r["held_until"] is not None for r in processes().quota_slots(MODEL)][-1:] == [True]


def test_sqlite_says_to_use_postgresql(settings, tmp_path):
    settings.database_url = f"sqlite:///{tmp_path}/m.db"
    settings.gemini.shared_quota = True
    with pytest.raises(ConfigError, match=r"gemini.shared_quota .* needs PostgreSQL: set database_url to "
                                          r"postgresql\+psycopg://"):
        LLMSummarizer(settings, client=None)
    settings.gemini.shared_quota, settings.workers.enabled = False, True
    with pytest.raises(ConfigError, match=r"workers.enabled \(it implies gemini.shared_quota\)"):
        SharedQuota.for_settings(settings)


class _NoClient:
    async def aclose(self) -> None:
        pass


def test_a_429_met_by_one_summarizer_pauses_the_others_requests(settings, pg_url):
    """Two summarizers (two processes) on one key and one database: the 429's retry delay one of
    them meets holds the other's request too, through the real client and the fake server."""
    with FakeGemini(lambda _req: '{"summary": "fine"}') as server:
        s = settings.model_copy(deep=True)
        s.database_url, s.summarizer = pg_url, "gemini"
        s.gemini.base_url, s.gemini.shared_quota, s.gemini.backoff_max_s = server.url, True, 5.0
        a, b = (LLMSummarizer(s, GeminiClient("test-key", base_url=server.url, timeout_s=5.0)) for _ in range(2))
        server.script(status(429, "quota", retry_delay="1s"))

        async def go():
            first = asyncio.ensure_future(a.ask("historical", "a's week", HistoricalOut, Usage()))
            while not any(r.status_code == 429 for r in server.calls()):
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)  # a has had the answer and written the pause
            await b.ask("historical", "b's week", HistoricalOut, Usage())
            await first
            await a.aclose()
            await b.aclose()

        asyncio.run(go())
        refused, *answered = server.calls()
    assert refused.status_code == 429 and [r.status_code for r in answered] == [200, 200]
    assert all(r.time - refused.time >= 1.0 - 0.05 for r in answered)  # a's retry and b's request
