"""A large JSONL import reads in a reader process (pipeline/ingest/reader.py) while the importer
writes: it must store, count, report progress and refuse exactly as an import in one process, on
both databases, and a reader that dies must fail the import, never end it early."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

import pipeline.ingest.importer as importer_module
import pipeline.ingest.reader as reader_module
from pipeline.clock import fixed_clock
from pipeline.db.tables import channels, members
from pipeline.errors import InputError, MempipeError
from pipeline.ingest import import_files
from tests.integration.test_bulk_ingest import _edit_cases, generate_rows, normalized, write_jsonl

NOW = fixed_clock(dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.timezone.utc))
BATCH = 700  # small batches: copies, edits and conflicts fall in different batches


procs: list[subprocess.Popen] = []


@pytest.fixture
def reader_runs(monkeypatch) -> list[list[str]]:
    """Every import reads in a reader process; the commands started, as run (the processes: `procs`)."""
    procs.clear()
    started: list[list[str]] = []
    real = subprocess.Popen

    def popen(args, **kwargs):
        started.append(list(args))
        procs.append(real(args, **kwargs))
        return procs[-1]

    monkeypatch.setattr(reader_module.subprocess, "Popen", popen)
    monkeypatch.setattr(reader_module, "READER_AFTER_BYTES", 0)
    monkeypatch.setattr(importer_module, "BATCH_SIZE", BATCH)
    return started


def _awkward_files(tmp_path: Path) -> list[Path]:
    """Two files: messages over several batches; then edits (newer, older, equal) of messages of
    the first file, copies within the file, empty and over-long texts, a deletion in its place."""
    base = generate_rows(3 * BATCH + 123, seed=11)
    edits, _expect = _edit_cases(base)
    extra = [dict(base[5], text="   "), dict(base[6], message_id=str(int(base[-1]["message_id"]) + 1), text="x" * 9000),
             {"message_id": base[7]["message_id"], "channel_id": base[7]["channel_id"], "deleted": True},
             dict(base[7], text="written again after its deletion")]
    # the same message twice within the second file, far apart (another batch): a newer edit last
    twice = dict(edits[10], edited_ts="2031-01-01T00:00:00+00:00", text="newest copy")
    return [write_jsonl(tmp_path / "first.jsonl", base),
            write_jsonl(tmp_path / "second.jsonl", edits[: BATCH + 50] + extra + edits[BATCH + 50:] + [twice])]


def _tables(store) -> tuple:
    with store.engine.connect() as conn:
        got = tuple(sorted(tuple(r) for r in conn.execute(sa.select(t)).all()) for t in (members, channels))
    return (normalized(store),) + got


def test_an_import_read_in_a_reader_process_equals_one_read_in_process(store, sqlite_store, settings, tmp_path,
                                                                       reader_runs, monkeypatch):
    files = _awkward_files(tmp_path)
    steps: list[int] = []
    read_apart = import_files(store, files, settings, clock=NOW, progress=steps.append)
    assert len(reader_runs) == 1 and reader_runs[0][1:] == ["-m", "pipeline.ingest.reader"]
    assert procs[0].returncode == 0  # it ended on its own once it had sent everything, not killed

    monkeypatch.setattr(reader_module, "READER_AFTER_BYTES", 10 ** 15)  # the same import, in one process
    in_process = import_files(sqlite_store, files, settings, clock=NOW)
    assert len(reader_runs) == 1

    assert read_apart.as_dict() == in_process.as_dict()
    assert read_apart.edited > 0 and read_apart.unchanged > 0 and read_apart.cut == 1 and read_apart.deleted == 1
    assert read_apart.skipped_by == {"empty": 1}
    assert _tables(store) == _tables(sqlite_store)
    assert sum(steps) == read_apart.read and len(steps) > 4  # progress a batch at a time, all of it


def test_a_bad_line_read_by_the_reader_is_named_and_nothing_is_written(store, settings, tmp_path, reader_runs):
    rows = generate_rows(3 * BATCH, seed=5)
    bad = 2 * BATCH + 17  # two batches were written before the reader met it
    lines = rows[:bad] + [dict(rows[bad], ts="yesterday")] + rows[bad + 1:]
    with pytest.raises(InputError, match=rf"bad\.jsonl: line {bad + 1}: .*ts"):
        import_files(store, write_jsonl(tmp_path / "bad.jsonl", lines), settings)
    assert reader_runs and store.count_messages() == 0


def test_a_conflict_with_a_stored_message_is_named_by_its_line(store, settings, tmp_path, reader_runs):
    rows = generate_rows(2 * BATCH, seed=6)
    import_files(store, write_jsonl(tmp_path / "first.jsonl", rows[:BATCH]), settings)
    stolen = dict(rows[3], user_id=str(int(rows[3]["user_id"]) + 1000))  # another author for a stored message
    lines = rows[BATCH:] + [stolen] + generate_rows(BATCH, seed=7, first_id=10 ** 15)
    with pytest.raises(InputError, match=rf"second\.jsonl: line {BATCH + 1}: .*in the database with another author"):
        import_files(store, write_jsonl(tmp_path / "second.jsonl", lines), settings)
    assert store.count_messages() == BATCH and len(reader_runs) == 2


def _fake_python(tmp_path: Path, body: str) -> str:
    """An executable started in place of Python for the reader (its arguments are ignored)."""
    path = tmp_path / "fake-python"
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_a_reader_that_dies_fails_the_import_with_what_it_said(store, settings, tmp_path, reader_runs, monkeypatch):
    path = write_jsonl(tmp_path / "rows.jsonl", generate_rows(50, seed=8))
    monkeypatch.setattr(reader_module.sys, "executable", _fake_python(tmp_path, "cat >/dev/null; echo 'out of memory' >&2; exit 3"))
    with pytest.raises(MempipeError, match=r"exit code 3.*out of memory.*nothing was written"):
        import_files(store, path, settings)
    assert store.count_messages() == 0


def test_a_reader_cut_off_mid_import_is_never_the_end_of_the_input(store, settings, tmp_path, reader_runs, monkeypatch):
    path = write_jsonl(tmp_path / "rows.jsonl", generate_rows(4 * BATCH, seed=9))
    # the real reader, its output cut after the first ~1.5 batches, the wrapper exiting 0
    real = f"'{sys.executable}' -m pipeline.ingest.reader"
    monkeypatch.setattr(reader_module.sys, "executable", _fake_python(tmp_path, f"{real} | head -c 150000; exit 0"))
    with pytest.raises(MempipeError, match=r"ended before the end of the input \(exit code 0\)"):
        import_files(store, path, settings)
    assert store.count_messages() == 0


def test_the_reader_process_starts_without_the_database_code(store, settings, tmp_path, reader_runs, monkeypatch):
    """It is the slower side of a large import: the half second that SQLAlchemy and the settings
    took to load was time the importer waited for its first batch."""
    path = write_jsonl(tmp_path / "rows.jsonl", generate_rows(BATCH + 5, seed=12))
    loaded = tmp_path / "imports.txt"
    real = f"'{sys.executable}' -X importtime -m pipeline.ingest.reader 2>'{loaded}'"
    monkeypatch.setattr(reader_module.sys, "executable", _fake_python(tmp_path, real))
    assert import_files(store, path, settings).new == BATCH + 5
    modules = {line.rsplit("|", 1)[-1].strip() for line in loaded.read_text().splitlines() if "|" in line}
    assert "pipeline.ingest.batches" in modules  # (the real reader ran, and this is what it loaded)
    heavy = sorted(m for m in modules if m.split(".")[0] in ("sqlalchemy", "pydantic", "pydantic_settings", "psycopg")
                   or m in ("pipeline.store", "pipeline.config", "pipeline.db"))
    assert heavy == []


def test_a_reader_stopped_and_continued_mid_import_sends_every_frame_whole(sqlite_store, settings, tmp_path,
                                                                          reader_runs):
    """Ctrl-Z then fg, a debugger or a sampling profiler stop and continue the reader while it writes
    a frame larger than the pipe holds: a buffered file's write then sent some bytes twice or not
    at all (every frame after it garbage, the import failed); reader.write_all sends each whole."""
    rows = generate_rows(40 * BATCH, seed=13)
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    done = threading.Event()
    stops = 0

    def stop_and_continue() -> None:
        nonlocal stops
        while not procs and not done.is_set():
            time.sleep(0.001)
        while not done.is_set() and procs[0].poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(procs[0].pid, signal.SIGSTOP)
                time.sleep(0.002)
                os.kill(procs[0].pid, signal.SIGCONT)
                stops += 1
            time.sleep(0.003)

    pest = threading.Thread(target=stop_and_continue)
    pest.start()
    try:
        report = import_files(sqlite_store, path, settings, clock=NOW)
    finally:
        done.set()
        pest.join()
        if procs and procs[0].poll() is None:
            os.kill(procs[0].pid, signal.SIGCONT)
    assert stops > 20  # (it was stopped while it sent)
    assert report.new == len(rows) and sqlite_store.count_messages() == len(rows)


@pytest.mark.parametrize("frames", [
    pytest.param("struct.pack('<Q', 5) + b'\\xb0\\x8c\\xff\\xc8\\x01'", id="garbage-payload"),
    pytest.param("struct.pack('<Q', 2 ** 62) + b'x' * 100", id="impossible-length"),
])
def test_a_damaged_frame_fails_the_import_and_never_hangs_it(store, settings, tmp_path, reader_runs, monkeypatch, frames):
    path = write_jsonl(tmp_path / "rows.jsonl", generate_rows(50, seed=14))
    writer = f"import struct, sys; sys.stdout.buffer.write({frames})"
    monkeypatch.setattr(reader_module.sys, "executable",
                        _fake_python(tmp_path, f"cat >/dev/null; '{sys.executable}' -c \"{writer}\""))
    with pytest.raises(MempipeError, match=r"damaged frame") as raised:
        import_files(store, path, settings)
    assert "nothing was written" in str(raised.value) and store.count_messages() == 0
