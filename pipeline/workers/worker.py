"""A worker process (`mempipe worker`): procrastinate's worker on the configured queue, running
mempipe's tasks (tasks.py) with one mempipe App and one summarizer for all its jobs.

It records a heartbeat every `workers.heartbeat_s`; a worker silent for `workers.stalled_s` is
dead to the runs waiting for its jobs, which put them back in the queue for another worker (a
job runs again from the start: what it wrote is fresh by its input hash, so only the item in
flight when it died is computed again). A stop (`stop` set: SIGTERM, SIGINT) takes no new job
and lets the running ones finish, heartbeating until they did (`_keep_beating`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket

import sqlalchemy as sa

from ..app import App
from ..clock import Clock, system_clock
from ..config import Settings
from ..errors import StoreError
from ..stages.context import RunContext
from .queue import check_schema, opened, queue_app, require_postgresql
from .tasks import RUNTIME

log = logging.getLogger(__name__)


class WorkerRuntime:
    """What one worker process's jobs share: the App (store, pool), one summarizer (its client,
    its per-model limiter) and the slots bounding their items in flight, like one run's."""

    def __init__(self, app: App, summarizer=None):
        self.app = app
        self.summarizer = summarizer or app.make_summarizer(app.settings)
        self._slots: asyncio.Semaphore | None = None
        self._run: int | None = None

    def context(self, run: dict, *, force: bool) -> RunContext:
        """A job's RunContext: the in-process item's view, for the run `run` ({"id", "kind"})."""
        if self._run is None or run["id"] > self._run:  # its first job of a newer run: the budget refills
            # One summarizer serves every job, so the retry budget is the worker's, not a run's: jobs
            # of two runs at once share it (a job of an older run never refills it).
            self._run = run["id"]
            if hasattr(self.summarizer, "retry_budget"):
                self.summarizer.retry_budget = self.app.settings.gemini.run_retry_budget
        ctx = self.app.run_context(force=force, summarizer=self.summarizer)
        ctx.run_kind, ctx.run_id = run["kind"], run["id"]
        ctx.mark_controls()  # the job reads its own inputs from here on
        if self._slots is None:
            self._slots = ctx.slot()
        ctx._gate = self._slots  # every job's items share the worker's slots (RunContext.slot)
        return ctx

    async def aclose(self) -> None:
        close = getattr(self.summarizer, "aclose", None)
        if close is not None:
            try:
                await close()
            except Exception:
                log.exception("closing the summarizer failed")


async def _keep_beating(queue, worker, interval: float) -> None:
    """The heartbeat while a stopping worker finishes its running jobs: procrastinate's worker
    cancels its own heartbeat before it waits for them (`Worker._shutdown`), and a job running
    longer than `workers.stalled_s` would be seen stalled and run again by another worker while
    this one still runs it. Ends when the worker unregistered (its id is None)."""
    from procrastinate import exceptions

    while True:
        await asyncio.sleep(interval)
        if worker.worker_id is None:
            return
        try:
            await queue.job_manager.update_heartbeat(worker.worker_id)
        except exceptions.ConnectorException as exc:
            log.warning("worker %s: could not record its heartbeat while stopping: %s", worker.worker_name,
                        exc.__cause__ or exc)


def with_shared_quota(settings: Settings) -> Settings:
    """A worker's settings: the quota always counted in the database (gemini.shared_quota), whatever
    its config says — its config need not have `[workers] enabled = true` (that is the runs'
    switch), and workers counting alone would send the limit each."""
    if settings.gemini.shared_quota:
        return settings
    return settings.model_copy(update={"gemini": settings.gemini.model_copy(update={"shared_quota": True})})


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


async def work(settings: Settings, *, concurrency: int, stop: asyncio.Event, clock: Clock = system_clock,
               summarizer=None) -> None:
    """Run jobs of `settings.workers.queue` until `stop` is set. Raises ConfigError on SQLite,
    SchemaError when the queue's tables are missing, StoreError when the worker loses its database."""
    from procrastinate.worker import Worker

    require_postgresql(sa.engine.make_url(settings.database_url).get_backend_name(), "`mempipe worker`")
    settings = with_shared_quota(settings)
    w = settings.workers
    app = App.open(settings, clock=clock)
    runtime = WorkerRuntime(app, summarizer)
    try:
        async with opened(queue_app(app.store.engine.url, max_connections=concurrency + 3, tasks=True)) as queue:
            await check_schema(queue)
            worker = Worker(
                app=queue, queues=[w.queue], name=worker_name(), concurrency=concurrency,
                delete_jobs="successful",  # a job gone from the queue succeeded (dispatch.py reads it so)
                additional_context={RUNTIME: runtime}, install_signal_handlers=False,
                update_heartbeat_interval=w.heartbeat_s, stalled_worker_timeout=w.stalled_s,
                # no notification announces a job put back after a worker died, or freed by its
                # lock: look for work at least as often as the heartbeat
                fetch_job_polling_interval=min(5.0, w.heartbeat_s))
            log.info("worker %s: jobs of queue %r, %d at once, on %s", worker.worker_name, w.queue, concurrency,
                     app.store.safe_url)
            running = asyncio.ensure_future(worker.run())
            stopping = asyncio.ensure_future(stop.wait())
            try:
                await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stopping.cancel()
                if not running.done():
                    worker.stop()  # no new job; the running ones finish
                    beating = asyncio.ensure_future(_keep_beating(queue, worker, w.heartbeat_s))
                    try:
                        await running
                    finally:
                        beating.cancel()
                        await asyncio.gather(beating, return_exceptions=True)
            running.result()
            if not stop.is_set():
                raise StoreError(f"the worker stopped on its own: its connection to {app.store.safe_url} failed "
                                 f"(see the log above)")
    finally:
        await runtime.aclose()
        app.close()
