"""A failed run records why, without the secrets an exception text may carry."""

from __future__ import annotations

import pytest

from pipeline.ingest import import_files
from pipeline.safety import register_secret
from pipeline.summarize import ExtractiveSummarizer
from pipeline.testing import RecordingSummarizer
from tests.conftest import SAMPLE
from tests.helpers import replay

KEY = "AIzaSyD-test-key-0123456789abcdefghijklm"


class LeakyFailure(RecordingSummarizer):
    async def daily(self, pd):
        raise RuntimeError(f"upstream said: bad request for key={KEY}")


def test_a_failed_run_stores_its_cause_redacted(store, settings):
    register_secret(KEY)
    import_files(store, [SAMPLE], settings)
    with pytest.raises(RuntimeError):
        replay(store, settings, "2026-11-01", "2026-11-01",
               summarizer=LeakyFailure(ExtractiveSummarizer(settings.summary)))
    run = store.runs(1)[0]
    assert run["status"] == "failed" and "upstream said" in run["error"]
    assert KEY not in run["error"] and "[redacted]" in run["error"]
