"""A run raises the collector's first threshold while it is under way and puts back what it found
(pipeline/gc_thresholds.py), also when runs overlap or one fails."""

from __future__ import annotations

import asyncio
import datetime as dt
import gc

import pytest

from pipeline.gc_thresholds import RUN_THRESHOLD, fewer_collections
from pipeline.ingest import import_files
from pipeline.runner import execute
from pipeline.summarize import ExtractiveSummarizer
from pipeline.testing import InMemoryStageStore
from tests.conftest import SAMPLE
from tests.helpers import make_context

UTC = dt.timezone.utc


@pytest.fixture
def thresholds():
    """The process's thresholds set to known values for the test, and put back after it."""
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)


def test_within_a_run_collections_are_rarer_and_after_it_as_before(thresholds):
    with fewer_collections():
        assert gc.get_threshold() == (RUN_THRESHOLD, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_overlapping_runs_restore_only_when_the_last_one_ends(thresholds):
    first, second = fewer_collections(), fewer_collections()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first ends while the second is still under way
    assert gc.get_threshold()[0] == RUN_THRESHOLD
    second.__exit__(None, None, None)
    assert gc.get_threshold() == (700, 10, 10)


def test_a_failed_run_restores_them_too(thresholds):
    with pytest.raises(RuntimeError):
        with fewer_collections():
            raise RuntimeError("boom")
    assert gc.get_threshold() == (700, 10, 10)


def test_a_higher_threshold_or_collection_turned_off_is_left_alone(thresholds):
    gc.set_threshold(RUN_THRESHOLD * 2, 5, 5)
    with fewer_collections():
        assert gc.get_threshold() == (RUN_THRESHOLD * 2, 5, 5)
    gc.set_threshold(0, 10, 10)  # what gc.disable-style tuning by an embedding program looks like
    with fewer_collections():
        assert gc.get_threshold() == (0, 10, 10)
    assert gc.get_threshold() == (0, 10, 10)


class _ThresholdSeen(ExtractiveSummarizer):
    """The extractive summarizer, noting the collector's threshold whenever a day is summarised."""

    seen: list[int]

    async def daily(self, pd):
        self.seen.append(gc.get_threshold()[0])
        return await super().daily(pd)


def test_a_replay_runs_with_the_raised_threshold(thresholds, settings):
    store = InMemoryStageStore()
    import_files(store, [SAMPLE], settings)
    summarizer = _ThresholdSeen(settings.summary)
    summarizer.seen = []
    ctx = make_context(store, settings, now=dt.datetime(2026, 11, 5, 12, tzinfo=UTC), summarizer=summarizer)
    assert asyncio.run(execute(ctx, "replay", dt.date(2026, 11, 1), dt.date(2026, 11, 4))).status == "ok"
    assert summarizer.seen and set(summarizer.seen) == {RUN_THRESHOLD}
    assert gc.get_threshold() == (700, 10, 10)
