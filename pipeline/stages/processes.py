"""A cheap run's stages spread over several processes (`processes`, default 1).

Why: with an in-process summarizer (the extractive one) a run is bound by one Python process's
CPU — rendering, validating facts, cleaning text — not by a model. Its items are independent
within a stage (a partition's days, a partition's historical rows, a user's contexts), so a
stage's units can be shared out to forked copies of the run. (Bench's instant summarizer, writes
batched, cold replay, 2 CPUs, SQLite in /dev/shm: 262,362 messages 84.5–88.3 s in one process,
48.0–56.4 s in two; 1,050,012 messages 394.7–418.7 s / 268.3 s; PostgreSQL 595.8 s / 400.7 s.)

How: before each stage's work the run writes what it buffered (a child inherits the buffer) and,
on SQLite, closes its connections (`_may_fork`), forks `n - 1` children, and every
process — the run's too — takes the next unit from one shared counter until none is left, so a
big partition never leaves the others waiting at the end. A child opens its own connections,
runs its units in a RunContext of its own (the run's settings, summarizer, clock, folds and
per-run caches, which it inherits), writes them, and sends back over a pipe a report per unit
(the run counts them as its own: progress, counts) and, at the end, its counters; then it exits
without running the parent's cleanup (`os._exit`). Each process writes its own units' rows; rows
of one stage never share a key across units, and fact writes read what they compare with inside
their write transaction (store/facts.py), so two processes decide like two runs would.

When: only a cheap summarizer (a model's limiter and HTTP client are per process: spreading a
model's work is `mempipe worker`'s job, pipeline/workers/), not a dry run, a database other
processes can open (a SQLite file or PostgreSQL), and a process with no other thread (a thread
holding a lock at the fork would leave it held in the child: `serve` runs its stages in one
process). Otherwise the stage runs in the run's process alone, as it always did.

A child that fails sends its error (the run fails with it, after the other processes finish the
unit they are on; what they wrote is kept, as with any failed run); a child that dies without a
word fails the run too. A failure or cancellation of the run's own process stops the children
after their current unit and waits for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import pickle
import signal
import struct
import threading
import traceback
from dataclasses import fields
from typing import Awaitable, Callable, Sequence

from ..errors import MempipeError
from .context import RunContext

log = logging.getLogger(__name__)
_HEADER = struct.Struct("!I")  # a frame: its length, then a pickle
POLL_S = 0.005  # how often the run looks at its children's pipes once its own units are done


class ProcessFailed(MempipeError):
    """A process running part of a stage failed (its error says why) or died."""


def processes_for(ctx: RunContext) -> int:
    """How many processes this run's stages may use (1: the run's own alone)."""
    n = ctx.settings.processes or (os.cpu_count() or 1)
    if n <= 1 or not ctx.cheap or ctx.dry_run or not hasattr(os, "fork"):
        return 1
    engine = getattr(ctx.store, "engine", None)
    if engine is None or not hasattr(type(ctx.store), "open"):
        return 1  # not a database other processes can open (an in-memory test double)
    if engine.dialect.name == "sqlite" and engine.url.database in (None, "", ":memory:"):
        return 1
    if threading.active_count() > 1:
        log.debug("this process runs other threads: the run's stages stay in it")
        return 1
    return n


def _may_fork(ctx: RunContext) -> bool:
    """SQLite: no open connection crosses a fork (closing or using one in a child can undo the
    parent's locks or its WAL; https://www.sqlite.org/howtocorrupt.html 2.6): the pool's are
    closed, and it opens new ones after. PostgreSQL: the run's connections stay open (its run
    lock holds one) — a child never touches them and leaves by os._exit, so none is closed
    or finalized there. False (the stage stays in this process) when a SQLite connection is in
    use, which would cross the fork open."""
    if ctx.store.dialect != "sqlite":
        return True
    if getattr(ctx.store.engine.pool, "checkedout", lambda: 0)():
        log.warning("a SQLite connection is in use: this stage runs in the run's process alone")
        return False
    ctx.store.close()
    return True


def _child_context(ctx: RunContext) -> RunContext:
    store = type(ctx.store).open(ctx.store.engine.url.render_as_string(hide_password=False), check_schema=False,
                                 pool_size=ctx.settings.pool_size, max_overflow=ctx.settings.pool_max_overflow)
    child = RunContext(store=store, summarizer=ctx.summarizer, settings=ctx.settings, clock=ctx.clock,
                       force=ctx.force, dry_run=ctx.dry_run, run_kind=ctx.run_kind, run_id=ctx.run_id,
                       folds=dict(ctx.folds), control_marker=ctx.control_marker, own_controls=set(ctx.own_controls))
    # read once per run: the run's copies (stages/context.py)
    child._forgetting, child._exclusions, child._erased = ctx._forgetting, ctx._exclusions, ctx._erased
    return child


def _send(fd: int, message: object) -> None:
    data = pickle.dumps(message)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _portable(exc: BaseException) -> BaseException:
    """The child's error as the run raises it: itself when it survives pickling, else a
    ProcessFailed with its text."""
    try:
        back = pickle.loads(pickle.dumps(exc))
        if type(back) is type(exc) and str(back) == str(exc):
            return exc
    except Exception:  # noqa: BLE001 — any failure to pickle: its text then
        pass
    return ProcessFailed(f"{type(exc).__name__}: {exc}")


class _Child:
    """The run's end of one child: its pid and the frames read from its pipe so far."""

    def __init__(self, pid: int, fd: int):
        self.pid, self.fd = pid, fd
        self.buffer = b""
        self.finished = False  # its last frame ("done" or "error") came, or its pipe closed
        self.error: BaseException | None = None
        os.set_blocking(fd, False)

    def read(self) -> list[tuple]:
        """The whole frames that arrived (non-blocking)."""
        if self.finished:
            return []
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:  # closed: it exited
                self.finished = True
                break
            self.buffer += chunk
        out = []
        while len(self.buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self.buffer)
            if len(self.buffer) < _HEADER.size + size:
                break
            out.append(pickle.loads(self.buffer[_HEADER.size:_HEADER.size + size]))
            self.buffer = self.buffer[_HEADER.size + size:]
        return out

    def reap(self) -> tuple[int, int]:
        """Wait for the process to end: its exit status and its peak RSS (KiB)."""
        os.close(self.fd)
        _pid, status, usage = os.wait4(self.pid, 0)
        return os.waitstatus_to_exitcode(status), usage.ru_maxrss


async def spread(ctx: RunContext, n: int, units: Sequence, run_unit: Callable[[RunContext, object], Awaitable[object]],
                 on_report: Callable[[object], None]) -> None:
    """`run_unit(context, unit)` for every unit, in this process and n - 1 forked ones, each
    taking the next unit in order (give the biggest first). `on_report` receives each unit's
    return value (a child's arrive pickled), in this process. The children's counters are added
    to ctx.stats and their folds to ctx.folds when they are done."""
    ctx.writer.flush()  # nothing buffered is written twice (a child inherits the buffer)
    n = min(n, len(units))
    if n > 1 and not _may_fork(ctx):
        n = 1
    if n <= 1:
        for unit in units:
            on_report(await run_unit(ctx, unit))
        return
    counter = multiprocessing.get_context("fork").Value("q", 0)

    def take() -> int:
        with counter.get_lock():
            i = counter.value
            counter.value = i + 1
        return i

    def stop() -> None:
        with counter.get_lock():
            counter.value = len(units)

    children: list[_Child] = []
    try:
        for _ in range(n - 1):
            read_fd, write_fd = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: never returns
                os.close(read_fd)
                _run_child(ctx, units, run_unit, take, write_fd)
            os.close(write_fd)
            children.append(_Child(pid, read_fd))
        while (i := take()) < len(units):
            on_report(await run_unit(ctx, units[i]))
            _take_in(ctx, children, on_report, stop)
        ctx.writer.flush()
        while not all(c.finished for c in children):
            await asyncio.sleep(POLL_S)
            _take_in(ctx, children, on_report, stop)
    finally:
        stop()  # on a failure or cancellation here: the children end after their current unit
        for child in children:
            if not child.finished:
                with contextlib.suppress(OSError):
                    os.set_blocking(child.fd, True)
                    _take_in(ctx, [child], on_report, stop, blocking=True)
            code, peak_kb = child.reap()
            ctx.spread_peak_kb = max(ctx.spread_peak_kb, peak_kb)
            if child.error is None and code != 0:
                child.error = ProcessFailed(f"a process running part of the stage (pid {child.pid}) ended with "
                                            f"status {code} before reporting its share (killed, or out of memory?); "
                                            "what it had written is kept, and a rerun makes the rest")
    failed = next((c.error for c in children if c.error is not None), None)
    if failed is not None:
        raise failed


def _take_in(ctx: RunContext, children: list[_Child], on_report, stop, *, blocking: bool = False) -> None:
    for child in children:
        while True:
            for frame in child.read():
                kind = frame[0]
                if kind == "unit":
                    on_report(frame[1])
                elif kind == "done":
                    for name, value in frame[1].items():
                        setattr(ctx.stats, name, getattr(ctx.stats, name) + value)
                    ctx.folds.update(frame[2])
                    child.finished = True
                elif kind == "error":
                    child.error, child.finished = frame[1], True
                    stop()  # the run fails: the others take no new unit
            if not blocking or child.finished:
                break


def _run_child(ctx: RunContext, units: Sequence, run_unit, take: Callable[[], int], fd: int) -> None:
    code = 0
    try:
        # the run's event loop (signal wakeups, its handlers) stays the parent's: here a SIGTERM
        # ends the process, a SIGINT raises KeyboardInterrupt (sent on as the child's error)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        child = _child_context(ctx)
        inherited = dict(child.folds)

        async def work() -> None:
            while (i := take()) < len(units):
                _send(fd, ("unit", await run_unit(child, units[i])))
            child.writer.flush()

        try:
            asyncio.run(work())
        finally:
            child.store.close()
        stats = {f.name: getattr(child.stats, f.name) for f in fields(child.stats)}
        folds = {k: v for k, v in child.folds.items() if inherited.get(k) != v}
        _send(fd, ("done", stats, folds))
    except BaseException as exc:  # noqa: BLE001 — every failure goes to the run, which raises it
        code = 1
        log.debug("process %s: %s", os.getpid(), "".join(traceback.format_exception(exc)))
        with contextlib.suppress(BaseException):
            _send(fd, ("error", _portable(exc)))
    finally:
        os._exit(code)
