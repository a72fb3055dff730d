"""A reader process for a large JSONL import: it decodes and validates the lines and builds the
batches (pipeline/ingest/batches.py) while the importer's process writes the previous ones.

Why a process: a large import is CPU-bound in Python on both sides — per line, decoding,
validating and building the row; per batch, binding and writing it — and a thread would hold the
same interpreter lock. Two processes overlap them (bench/sections/ingest.py measures it).

The importer starts `python -m pipeline.ingest.reader`, sends it what to read (`Spec`, msgpack on
its stdin) and reads back length-prefixed msgpack frames on its stdout, each a `Batch`,
`Deletions`, `Finished` or `Failed` (the InputError of a bad row, in its place). Only the
importer's process touches the database, in its one transaction, so nothing changes about what an
import writes, counts or refuses: the same builder runs in either process. A reader that dies
without `Finished` or `Failed` (killed, out of memory) fails the import with what it printed:
never taken for the end of the input.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import queue
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

import msgspec

from ..errors import InputError, MempipeError
from .batches import Batch, Deletions, Failed, Finished, Item

# From this much JSONL on (all files of one import), a reader process pays. It starts in ~0.1 s
# (Python, msgspec and the builder: pipeline/ingest/feed.py says why no database code). import_files
# of the bench corpus's first lines, SQLite in /dev/shm / PostgreSQL, three (two) alternating runs,
# in process vs reader: 10,000 lines (3 MiB) 0.17-0.18 vs 0.23-0.24 s on SQLite, 0.18 vs 0.22-0.23 s
# on PostgreSQL; 30,000 lines (9 MiB) 0.43-0.44 vs 0.38-0.41 s, and 0.40-0.47 vs 0.43 s; 100,000
# lines 1.34-1.41 vs 0.95-1.07 s on SQLite. (It was 32 MiB while the reader loaded SQLAlchemy and the
# settings, 0.5 s more.)
READER_AFTER_BYTES = 10 * 2 ** 20
_HEADER = struct.Struct("<Q")  # a frame's length
_QUEUED_FRAMES = 4  # frames read ahead of the importer (each one batch)
_MAX_FRAME = 2 ** 31  # a batch is far smaller (batch_size rows of at most max_chars): a longer one is a damaged stream


class Spec(msgspec.Struct, array_like=True):
    """What the reader reads and how it builds batches (BatchBuilder's settings)."""

    paths: list[str]
    max_chars: int
    now: dt.datetime
    batch_size: int
    text_times: bool


def wanted(plan: list[tuple[str, str]]) -> bool:
    """Whether an import of `plan` ((path, kind) pairs) should read in a reader process: JSONL only,
    READER_AFTER_BYTES or more, and a Python to start it with."""
    if not sys.executable or any(kind != "jsonl" for _path, kind in plan):
        return False
    try:
        return sum(os.path.getsize(path) for path, _kind in plan) >= READER_AFTER_BYTES
    except OSError:  # a file that cannot be read: the importer's own error says so
        return False


def read(spec: Spec, apply: Callable[[Batch | Deletions | Finished], Any], report,
         before_finish: Callable[[], Any] = lambda: None) -> None:
    """Run a reader process over `spec` and hand its items to `apply` (the Writer) in order; the
    counts it kept go into `report` when it finishes. InputError for a bad row, after the rows
    before it are applied (as in one process); MempipeError when the reader fails."""
    with _reader(spec) as items:
        for item in items:
            if type(item) is Failed:
                raise InputError(item.source, item.where, item.what)
            if type(item) is Finished:
                report.read, report.cut, report.deletions = item.read, item.cut, item.deletions
                for reason, n in item.skipped_by.items():
                    report.skipped_by[reason] = report.skipped_by.get(reason, 0) + n
                before_finish()
            apply(item)


@contextlib.contextmanager
def _reader(spec: Spec) -> Iterator[Iterator[Item]]:
    root = str(Path(__file__).resolve().parents[2])  # where `pipeline` is, whether installed or not
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH")))))
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen([sys.executable, "-m", "pipeline.ingest.reader"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=errors, env=env)
        frames: queue.Queue = queue.Queue(maxsize=_QUEUED_FRAMES)
        ended: list[bool] = []  # set when the last frame (Finished or Failed) was read
        pump = threading.Thread(target=_pump, args=(proc.stdout, frames), name="mempipe-reader", daemon=True)
        try:
            try:
                write_all(proc.stdin.fileno(), msgspec.msgpack.encode(spec))
                proc.stdin.close()
            except BrokenPipeError:  # it died at once: reported below, with what it printed
                pass
            pump.start()
            yield _items(frames, proc, errors, ended)
        finally:
            if ended:  # it has sent everything and is exiting on its own
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=5)
            if proc.poll() is None:  # still reading: the import failed or was stopped here
                proc.kill()
            while pump.is_alive():  # let the pump see the end of the pipe (it may wait for room)
                with contextlib.suppress(queue.Empty):
                    frames.get(timeout=0.05)
            proc.wait()
            proc.stdout.close()


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` to the pipe `fd`, as many os.write calls as it takes. Not a buffered
    file's write: CPython's BufferedWriter, writing a large frame to a pipe whose process is stopped
    and continued meanwhile (SIGSTOP/SIGCONT: Ctrl-Z then fg, a debugger, a sampling profiler),
    can put bytes on the pipe twice or not at all; every frame after it is then garbage
    (tests/integration/test_ingest_reader.py stops and continues a reader mid-import)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _pump(stdout, frames: queue.Queue) -> None:
    """Read frames off the reader's stdout into `frames`, then None at the end of the pipe. A length
    no frame has, or an error here, goes into `frames` in place of the end (_items fails the import
    with it: never taken for the end, never left waiting)."""
    end: object = None
    try:
        while len(head := stdout.read(_HEADER.size)) == _HEADER.size:
            (size,) = _HEADER.unpack(head)
            if size > _MAX_FRAME:
                end = ValueError(f"a frame length of {size:,} bytes")
                break
            payload = stdout.read(size)
            if len(payload) < size:
                break
            frames.put(payload)
    except Exception as exc:  # noqa: BLE001 (ValueError: pipe closed under it: the import is over, no one reads)
        end = exc
    finally:
        frames.put(end)


def _items(frames: queue.Queue, proc: subprocess.Popen, errors, ended: list[bool]) -> Iterator[Item]:
    decode = msgspec.msgpack.Decoder(Item).decode
    while (payload := frames.get()) is not None:
        try:
            if isinstance(payload, Exception):
                raise payload
            item = decode(payload)
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError) as exc:
            proc.kill()
            raise MempipeError(f"the import's reader process sent a damaged frame ({exc}); nothing was written") from exc
        except Exception as exc:  # reading its pipe failed: said as it is
            proc.kill()
            raise MempipeError(f"reading the import's reader process failed ({exc}); nothing was written") from exc
        if type(item) in (Finished, Failed):
            ended.append(True)
        yield item
        if ended:
            return
    code = proc.wait()
    errors.seek(0)
    said = errors.read().decode("utf-8", "replace").strip().splitlines()[-5:]
    raise MempipeError(f"the import's reader process ended before the end of the input (exit code {code})"
                       + (": " + " | ".join(said) if said else "") + "; nothing was written")


def main() -> int:
    """The reader process: reads Spec on stdin, writes frames on stdout."""
    from ..gc_thresholds import fewer_collections
    from .batches import BatchBuilder
    from .feed import IngestReport, feed
    from .jsonl import read_jsonl
    from .model import JsonlRow, Validator

    spec = msgspec.msgpack.decode(sys.stdin.buffer.read(), type=Spec)
    out = sys.stdout.fileno()
    sys.stdout = sys.stderr  # the pipe carries frames only
    encode = msgspec.msgpack.Encoder().encode

    def emit(item: Item) -> None:
        payload = encode(item)
        write_all(out, _HEADER.pack(len(payload)) + payload)

    report = IngestReport()
    validator = Validator()
    batches = BatchBuilder(emit, report, max_chars=spec.max_chars, now=spec.now, batch_size=spec.batch_size,
                           text_times=spec.text_times)
    try:
        with fewer_collections():
            for source in spec.paths:
                feed(batches, validator, report, read_jsonl(source, JsonlRow), source)
            batches.finish()
    except InputError as exc:
        emit(Failed(exc.source, exc.where, exc.what))
    except BrokenPipeError:  # the importer stopped reading (it failed, or was stopped)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
