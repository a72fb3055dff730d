"""Test helpers: a recording summarizer wrapper and run shortcuts."""

from __future__ import annotations

import asyncio
import datetime as dt

from pipeline.clock import fixed_clock
from pipeline.runner import execute
from pipeline.app import App
from pipeline.stages.context import RunContext
from pipeline.summarize import ExtractiveSummarizer

UTC = dt.timezone.utc


class RecordingSummarizer:
    """The real extractive summarizer, recording every operation it is asked for, so tests can
    assert exactly which partition-days and users were recomputed."""

    def __init__(self, inner):
        self.inner = inner
        self.kind = inner.kind
        self.calls: list[tuple] = []

    def fingerprint(self, operation):
        return self.inner.fingerprint(operation)

    async def daily(self, pd):
        self.calls.append(("daily", pd.partition, pd.day))
        return await self.inner.daily(pd)

    async def fold(self, new, previous):
        self.calls.append(("fold", new.partition, new.day))
        return await self.inner.fold(new, previous)

    async def historical(self, name, dailies):
        self.calls.append(("historical", name))
        return await self.inner.historical(name, dailies)

    async def merge(self, name, facts, day1, historical):
        self.calls.append(("merge", name))
        return await self.inner.merge(name, facts, day1, historical)

    async def remember(self, blob, fact):
        self.calls.append(("remember", fact))
        return await self.inner.remember(blob, fact)

    async def forget(self, blob, fact, subject=""):
        self.calls.append(("forget", fact))
        return await self.inner.forget(blob, fact, subject)


def make_context(store, settings, *, now=None, summarizer=None, **kw) -> RunContext:
    """A run built the way the CLI and the scheduler build theirs (pipeline/app.py)."""
    summarizer = summarizer or RecordingSummarizer(ExtractiveSummarizer(settings.summary))
    clock = fixed_clock(now or dt.datetime(2026, 11, 5, 12, tzinfo=UTC))
    return App(settings, store, clock).run_context(summarizer=summarizer, **kw)


def replay(store, settings, first: str, last: str, **kw):
    ctx = make_context(store, settings, **kw)
    result = asyncio.run(execute(ctx, "replay", dt.date.fromisoformat(first), dt.date.fromisoformat(last)))
    return ctx, result


def dump_derived(store) -> dict[str, list[tuple]]:
    return {t: store.dump(t) for t in ("partition_days", "daily_summaries", "historical_summaries", "memory_context")}
