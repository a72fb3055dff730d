"""The pure parts of `serve --http`: HOST:PORT, reason classes, age buckets, chart geometry."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from pipeline.llm.errors import QuotaExhausted, fallback_reason
from pipeline.llm.limiter import RateLimiter
from pipeline.web import parse_address
from pipeline.web.charts import HEIGHT, day_bars, nice_ceiling, share_bars
from pipeline.web.data import AGE_BUCKETS, REASONS, age_bucket, reason_class


@pytest.mark.parametrize("text, expected", [
    ("127.0.0.1:8089", ("127.0.0.1", 8089)),
    ("0.0.0.0:0", ("0.0.0.0", 0)),
    ("localhost:65535", ("localhost", 65535)),
    ("[::1]:8089", ("::1", 8089)),
])
def test_addresses(text, expected):
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["8089", ":8089", "host:", "host:port", "h:65536", "h:-1", "::1:80", "h:８０"])
def test_bad_addresses_say_what_to_write(text):
    with pytest.raises(ValueError, match="HOST:PORT|port must be|brackets"):
        parse_address(text)


def test_reason_classes_of_what_the_llm_layer_stores():
    limiter = RateLimiter(None, None, rpd=1)

    async def twice():
        await limiter.acquire(1)
        await limiter.acquire(1)

    with pytest.raises(QuotaExhausted) as spent:
        asyncio.run(twice())
    assert reason_class(fallback_reason(spent.value)) == "quota_exhausted"
    # the texts pipeline/llm/gemini.py and summarize/llm.py raise with
    for text, cls in (("gemini-2.5-flash: rate limited (429 RESOURCE_EXHAUSTED)", "rate_limited"),
                      ("gemini-2.5-flash: timed out after 60s", "timeout"),
                      ("gemini-2.5-flash: request timeout (408)", "timeout"),
                      ("gemini-2.5-flash: server error 503 UNAVAILABLE", "server_error"),
                      ("gemini-2.5-flash: connection failed: ConnectError", "server_error"),
                      ("gemini-2.5-flash: rejected with 400 INVALID_ARGUMENT: bad", "rejected"),
                      ("gemini-2.5-flash: answer truncated (finishReason MAX_TOKENS)", "bad_output"),
                      ("gemini-2.5-flash: answer does not match DailyAnswer: Field required", "bad_output")):
        assert reason_class(f"fallback: {text}") == cls
    assert reason_class("built from degraded summaries") == "built_from_degraded"
    assert reason_class("something new") == "other" and reason_class(None) == "unknown"
    assert {reason_class(r) for r in ("x", None)} <= set(REASONS)


def test_age_buckets_cover_every_age_once():
    labels = [label for label, _, _ in AGE_BUCKETS]
    ages = (0, 1, 2, 7, 8, 30, 31, 400)
    assert [age_bucket(d) for d in ages] == ["0", "1", "2-7", "2-7", "8-30", "8-30", "31+", "31+"]
    assert set(age_bucket(d) for d in range(100)) == set(labels)


def test_axis_tops_are_round():
    assert [nice_ceiling(v) for v in (0, 0.3, 1, 7, 13, 49, 51, 250, 1001)] == [1, 0.5, 1, 10, 20, 50, 100, 500, 2000]


def test_day_bars_stack_in_proportion():
    days = [dt.date(2026, 11, 1) + dt.timedelta(days=i) for i in range(3)]
    chart = day_bars("t", "Tokens", days, [("prompt", [0, 30, 10]), ("output", [0, 10, 0])])
    assert not chart.empty and chart.legend == ["prompt", "output"]
    assert [(r.series, r.title) for r in chart.rects] == [(0, "2026-11-02: 30 prompt"), (1, "2026-11-02: 10 output"),
                                                           (0, "2026-11-03: 10 prompt")]
    prompt, output, third = chart.rects
    assert prompt.h == pytest.approx(3 * third.h, abs=0.2)  # 30 vs 10, one scale
    assert output.y + output.h == pytest.approx(prompt.y, abs=0.1)  # stacked on top
    assert prompt.y + prompt.h <= HEIGHT
    assert day_bars("e", "Nothing", days, [("x", [0, 0, 0])]).empty


def test_share_bars_fill_the_row():
    chart = share_bars("f", "Fresh", [("guild:1", [3, 1, 0]), ("DMs", [0, 0, 2])], ["0 d", "1 d", "2-7 d"])
    first = [r for r in chart.rects if r.title.startswith("guild:1")]
    assert [r.series for r in first] == [0, 1]
    assert first[0].w == pytest.approx(3 * first[1].w, abs=0.2)
    widths = {r.title.split(":")[0]: 0 for r in chart.rects}
    for r in chart.rects:
        widths[r.title.split(":")[0]] += r.w
    assert widths["guild"] == pytest.approx(widths["DMs"], abs=0.2)  # every row spans the same width
