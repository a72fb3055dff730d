"""Every item a run looks at is counted once by what became of it (sql/migrations/0010_run_counts.sql):
partition-days + past weeks + contexts = summarized + passed through (by reason) + failed — for
cold, warm, refresh, forced, older-range and dry runs; and a dry run whose daily stage changes
nothing predicts what the run then does. In memory (pipeline/testing.py), the real stages."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from pipeline.ingest import ingest_messages, import_files
from pipeline.runner import execute
from pipeline.stages.facts import forget
from pipeline.summarize import ExtractiveSummarizer
from pipeline.testing import InMemoryStageStore, RecordingSummarizer
from tests.conftest import SAMPLE
from tests.helpers import make_context

UTC = dt.timezone.utc
D = dt.date.fromisoformat
G1, ANA = 1150000000000000001, 1160000000000000001
PASSED = ("passed_fits", "passed_week_rendered", "passed_recent_rendered", "passed_no_recent", "passed_reused",
          "passed_unchanged", "passed_fold_waits")
OUTCOMES = ("historical_items", "context_items", "partition_days", "summarized", *PASSED, "errors")


@pytest.fixture
def memory(settings):
    store = InMemoryStageStore()
    import_files(store, [SAMPLE], settings)
    return store


def _run(store, settings, kind, first, last, *, now=None, summarizer=None, **kw):
    summarizer = summarizer or RecordingSummarizer(ExtractiveSummarizer(settings.summary))
    ctx = make_context(store, settings, now=now or dt.datetime(2026, 11, 5, 12, tzinfo=UTC),
                       summarizer=summarizer, **kw)
    result = asyncio.run(execute(ctx, kind, first and D(first), D(last)))
    return ctx, result


def _adds_up(ctx) -> dict:
    c = ctx.stats.columns()
    assert c["partition_days"] + c["historical_items"] + c["context_items"] == \
        c["summarized"] + sum(c[p] for p in PASSED) + c["errors"], c
    return c


def test_every_kind_of_run_adds_up(memory, settings):
    cold, _ = _run(memory, settings, "replay", "2026-11-01", "2026-11-04")
    c = _adds_up(cold)
    assert c["summarized"] == len(cold.summarizer.calls) and c["passed_unchanged"] == 0
    warm, _ = _run(memory, settings, "replay", "2026-11-01", "2026-11-04")
    c = _adds_up(warm)
    assert c["summarized"] == 0 and c["passed_unchanged"] == c["partition_days"] + c["historical_items"] + \
        c["context_items"] > 0
    forced, _ = _run(memory, settings, "replay", "2026-11-01", "2026-11-04", force=True)
    assert _adds_up(forced)["passed_unchanged"] == 0
    older, _ = _run(memory, settings, "replay", "2026-11-01", "2026-11-02")  # contexts as of 11-04 are newer
    _adds_up(older)
    assert older.stats.contexts_stale > 0  # left alone, and not among the items

    # the hourly refresh: a message appended to today is folded in
    ingest_messages(memory, [{"message_id": "1190000000000099001", "guild_id": str(G1),
                              "channel_id": "1170000000000000010", "visibility": "public", "user_id": str(ANA),
                              "user_name": "Ana", "text": "One more shulker shell and the box is full.",
                              "ts": "2026-11-04T21:00:00+00:00"}], settings)
    refresh, _ = _run(memory, settings, "refresh", None, "2026-11-04", now=dt.datetime(2026, 11, 4, 22, tzinfo=UTC))
    assert refresh.stats.daily_folded == 1
    _adds_up(refresh)

    # a forgotten fact: contexts whose recent part is unchanged get their profile re-rendered
    ctx = make_context(memory, settings, now=dt.datetime(2026, 11, 4, 23, tzinfo=UTC))
    asyncio.run(forget(ctx, f"guild:{G1}", ANA, "shulker shells"))
    after, _ = _run(memory, settings, "run", None, "2026-11-04", now=dt.datetime(2026, 11, 4, 23, tzinfo=UTC))
    _adds_up(after)


class _NewMergePrompt(ExtractiveSummarizer):
    """The extractive summarizer after a change that concerns the merge only (as a new merge
    prompt or model would): the dailies and past weeks stay fresh, merged contexts do not."""

    def fingerprint(self, operation: str) -> str:
        return super().fingerprint(operation) + ("-new" if operation == "merge" else "")


def test_a_dry_run_that_changes_only_contexts_predicts_the_run(memory, settings):
    # some contexts need a merge (condense = "model": the default cuts them to fit, no call)
    settings.summary = settings.summary.model_copy(update={"context_chars": 120, "condense": "model"})
    _run(memory, settings, "replay", "2026-11-01", "2026-11-04")
    changed = _NewMergePrompt(settings.summary)
    dry, result = _run(memory, settings, "replay", "2026-11-01", "2026-11-04", dry_run=True,
                       summarizer=RecordingSummarizer(changed))
    assert "estimated" not in result.plan and dry.summarizer.calls == []
    predicted = _adds_up(dry)
    real, _ = _run(memory, settings, "replay", "2026-11-01", "2026-11-04", summarizer=RecordingSummarizer(changed))
    done = _adds_up(real)
    assert {k: predicted[k] for k in OUTCOMES} == {k: done[k] for k in OUTCOMES}
    assert done["summarized"] == len(real.summarizer.calls) > 0 and {c[0] for c in real.summarizer.calls} == {"merge"}


def test_a_dry_run_stops_after_the_first_stage_that_would_change(memory, settings):
    _run(memory, settings, "replay", "2026-11-01", "2026-11-04")
    # the next day 1, no message on 11-05: every partition-day is unchanged, every past week is
    # made anew as of 11-05, and the contexts would read those
    now = dt.datetime(2026, 11, 6, 6, tzinfo=UTC)
    dry, result = _run(memory, settings, "run", None, "2026-11-05", now=now, dry_run=True)
    assert result.plan["estimated"] == "historical"
    predicted = _adds_up(dry)
    assert predicted["context_items"] == 0
    real, _ = _run(memory, settings, "run", None, "2026-11-05", now=now)
    done = real.stats
    assert (predicted["historical_items"], predicted["passed_week_rendered"], predicted["passed_reused"]) == \
        (done.historical_items, done.historical_rendered, done.historical_reused)
    assert predicted["summarized"] == done.historical_computed


def test_a_dry_run_whose_days_change_stops_after_the_daily_stage(memory, settings):
    dry, result = _run(memory, settings, "replay", "2026-11-01", "2026-11-04", dry_run=True)
    c = _adds_up(dry)
    assert result.plan["estimated"] == "daily" and c["historical_items"] == c["context_items"] == 0
    assert c["summarized"] == c["partition_days"] == 14 and dry.summarizer.calls == []
