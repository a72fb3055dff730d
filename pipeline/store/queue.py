"""The job queue of `mempipe worker` (pipeline/workers/), PostgreSQL only: what a run waiting for
its jobs reads (their statuses), and the channel its workers report on.

The queue itself is procrastinate's (its tables, its API for deferring, retrying and cancelling
jobs). A run's channel is a PostgreSQL LISTEN channel, `mempipe_run_<run id>`: each job NOTIFYs
it once when it ends, with what the run cannot read from a row — the partition-days it folded
(the merge stage's `RunContext.folds`), its counts that pipeline_runs has no column for, or why
it failed. A notification is sent in its own transaction before the job is marked done, and
PostgreSQL delivers notifications in commit order, so `RunChannel.settle` (a marker sent after
the run saw its jobs done, then awaited) has every earlier report in hand.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import uuid

import sqlalchemy as sa

from ..db.engine import libpq_url
from ..db.queries import query
from ..errors import StoreError

log = logging.getLogger(__name__)
SETTLE_S = 30.0  # a marker takes milliseconds; this long means the channel is gone


def run_channel_name(run_id: int) -> str:
    return f"mempipe_run_{run_id}"


class QueueStore:
    def queue_job_statuses(self, ids) -> dict[int, str]:
        """job id -> status of the jobs still in the queue (a succeeded one is gone)."""
        ids = sorted(set(ids))
        if not ids:
            return {}
        with self.reading("reading the job queue") as conn:
            return {r.id: r.status for r in conn.execute(sa.text(query("queue_job_statuses")), {"ids": ids})}

    def queue_cancel(self, ids) -> int:
        """Cancel these jobs where not yet started; how many were."""
        ids = sorted(set(ids))
        if not ids:
            return 0
        with self.writing("cancelling jobs") as conn:
            return conn.execute(sa.text(query("queue_cancel")), {"ids": ids}).rowcount

    def queue_working_workers(self, queue: str, seconds: float) -> int:
        """Workers with a heartbeat within the last `seconds` running a job of `queue` (procrastinate
        does not record a worker's queues: one that runs none of its jobs may be on another)."""
        with self.reading("reading the job queue") as conn:
            return conn.execute(sa.text(query("queue_working_workers")),
                                {"queue": queue, "seconds": seconds}).scalar_one()

    def notify_run(self, run_id: int, payload: dict) -> None:
        """Report to the run (its RunChannel), committed at once."""
        with self.writing("reporting to the run") as conn:
            conn.execute(sa.text(query("queue_notify")),
                         {"channel": run_channel_name(run_id), "payload": json.dumps(payload, sort_keys=True)})

    def run_channel(self, run_id: int) -> "RunChannel":
        return RunChannel(self, run_id)

    def queue_drop_ended(self, queue: str, *, before: dt.datetime | None = None, conn=None) -> int:
        """Delete the queue's jobs that ended without succeeding (failed, cancelled, aborted; a
        worker deletes a job that succeeded): their arguments name partitions, days and user ids.
        An erase drops them all; retention those with no event since `before`. 0 where there is
        no job queue (SQLite, or `db upgrade` never made one)."""
        if self.dialect != "postgresql":
            return 0
        params = {"queue": queue, "before": before}

        def run(c) -> int:
            if c.execute(sa.text("SELECT to_regclass('procrastinate_jobs') IS NOT NULL")).scalar_one():
                return c.execute(sa.text(query("queue_drop_ended")), params).rowcount
            return 0
        with self.writing_in("deleting ended jobs", conn) as c:
            return run(c)


class RunChannel:
    """The run's end of its channel: `async with store.run_channel(run_id) as channel:` listens
    on a connection of its own (autocommit) and collects every report into `messages`."""

    def __init__(self, store: QueueStore, run_id: int):
        self.store, self.run_id = store, run_id
        self.name = run_channel_name(run_id)
        self.messages: list[dict] = []
        self._conn = None
        self._drain: asyncio.Task | None = None
        self._markers: dict[str, asyncio.Event] = {}

    async def __aenter__(self) -> "RunChannel":
        import psycopg
        from psycopg import sql

        try:
            self._conn = await psycopg.AsyncConnection.connect(libpq_url(self.store.engine.url), autocommit=True)
            await self._conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.name)))
        except psycopg.Error as exc:
            await self._close()
            raise StoreError(f"cannot listen for the workers' reports: {exc} "
                             f"(database: {self.store.safe_url})") from None
        self._drain = asyncio.ensure_future(self._read())
        return self

    async def __aexit__(self, *_exc) -> None:
        await self._close()

    async def _read(self) -> None:
        async for note in self._conn.notifies():
            message = json.loads(note.payload)
            if (marker := message.get("marker")) is not None:
                if marker in self._markers:
                    self._markers[marker].set()
                continue
            self.messages.append(message)

    async def settle(self) -> None:
        """Every report committed before now is in `messages` on return."""
        token = uuid.uuid4().hex
        arrived = self._markers[token] = asyncio.Event()
        try:
            await asyncio.to_thread(self.store.notify_run, self.run_id, {"marker": token})
            waiter = asyncio.ensure_future(arrived.wait())
            done, _ = await asyncio.wait({waiter, self._drain}, timeout=SETTLE_S, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            if not arrived.is_set():
                cause = self._drain.exception() if self._drain.done() and not self._drain.cancelled() else None
                raise StoreError(f"lost the workers' reports ({cause or 'no answer on the channel'}; "
                                 f"database: {self.store.safe_url})")
        finally:
            self._markers.pop(token, None)

    async def _close(self) -> None:
        if self._drain is not None:
            self._drain.cancel()
            await asyncio.gather(self._drain, return_exceptions=True)
            self._drain = None
        if self._conn is not None:
            try:
                await self._conn.close()
            except Exception:  # closing never hides the run's own outcome
                log.debug("closing the report channel failed", exc_info=True)
            self._conn = None
