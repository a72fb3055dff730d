"""Test helpers: run shortcuts (RecordingSummarizer lives in pipeline/testing.py, shipped)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import re
import uuid

import psycopg
import sqlalchemy as sa

from pipeline.clock import fixed_clock
from pipeline.runner import execute
from pipeline.app import App
from pipeline.stages.context import RunContext
from pipeline.summarize import ExtractiveSummarizer
from pipeline.testing import RecordingSummarizer
from tests.conftest import PG_ADMIN_URL

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


def tokens_in_tables(engine, pattern: re.Pattern) -> dict[str, set[str]]:
    """What `pattern` finds in every column of every row of every table (reflected, so a table
    added later is scanned too): table name -> the matches."""
    meta = sa.MetaData()
    meta.reflect(engine)
    found: dict[str, set[str]] = {}
    with engine.connect() as conn:
        for table in meta.sorted_tables:
            for row in conn.execute(sa.select(table)):
                for value in row:
                    if isinstance(value, (dict, list)):
                        value = json.dumps(value)
                    if isinstance(value, str) and (hits := pattern.findall(value)):
                        found.setdefault(table.name, set()).update(hits)
    return found


def gemini_config(path, url: str, *, concurrency: int | None = None, short_targets: bool = False, extra: str = ""):
    """A config file for the Gemini summarizer on the loopback fake at `url` (tests/fakes), with a
    limit the tests never reach. short_targets: every text of the sample is longer than its
    target, so each item needs the model (no pass-through)."""
    text = (f'summarizer = "gemini"\n[gemini]\nbase_url = "{url}"\n'
            + (f"concurrency = {concurrency}\n" if concurrency is not None else "") + extra
            + '[gemini.limits."gemini-2.5-flash"]\nrpm = 100000\n'
            + ("[summary]\ndaily_chars = 40\nhistorical_chars = 40\ncontext_chars = 80\n" if short_targets else ""))
    path.write_text(text, encoding="utf-8")
    return path


def stop_process(proc, timeout: float = 30) -> int:
    """SIGTERM a child process and wait for its exit code (killed, and the timeout raised, when it
    does not stop in time)."""
    import signal
    import subprocess

    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise


@contextlib.contextmanager
def another_database():
    """A second throwaway PostgreSQL database (where a reference run goes)."""
    admin = sa.engine.make_url(PG_ADMIN_URL)
    name = f"mempipe_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin.set(drivername="postgresql").render_as_string(hide_password=False),
                         autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
        try:
            yield admin.set(database=name).render_as_string(hide_password=False)
        finally:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
