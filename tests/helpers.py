"""Test helpers: run shortcuts (RecordingSummarizer lives in pipeline/testing.py, shipped)."""

from __future__ import annotations

import asyncio
import datetime as dt

from pipeline.clock import fixed_clock
from pipeline.runner import execute
from pipeline.app import App
from pipeline.stages.context import RunContext
from pipeline.summarize import ExtractiveSummarizer
from pipeline.testing import RecordingSummarizer

UTC = dt.timezone.utc


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
    return {t: store.dump(t) for t in ("partition_days", "daily_summaries", "historical_summaries", "memory_context",
                                            "memory_profiles")}
