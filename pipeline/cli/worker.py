"""`mempipe worker`: a worker process for runs that hand their items out (`[workers]`)."""

from __future__ import annotations

import asyncio
import logging

import click

from ..logs import configure_logging
from .main import State, cli, stop_on_signals


@cli.command("worker")
@click.option("--concurrency", type=click.IntRange(min=1), default=None, metavar="N",
              help="Jobs this process runs at once (default: workers.concurrency, 4; "
                   "MEMPIPE_WORKERS__CONCURRENCY sets it as every setting). Model requests in "
                   "flight stay within gemini.concurrency, as in one run.")
@click.pass_obj
def worker_cmd(state: State, concurrency):
    """Run jobs of `mempipe run`, `replay` and `serve`'s refresh and rollover: partition-days,
    past weeks and contexts, handed out through the job queue on PostgreSQL when the config has
    `[workers] enabled = true`. Start as many as the model quota can feed, on any machine that
    reaches the database; each works until stopped.

    A run defers each stage's items, waits until workers finished them and only then defers the
    next stage. A worker that dies (killed, its machine gone) is noticed by the waiting run after
    workers.stalled_s without a heartbeat: its jobs go back to the queue for another worker, and
    what it wrote is not computed again. SIGTERM or SIGINT: no new job, the running ones finish,
    exit 0 (a second signal exits at once, 1). Needs PostgreSQL and the job queue's tables
    (`mempipe db upgrade` creates them). One log line per job.

    \b
    Example: mempipe --db postgresql+psycopg://mempipe@db/mempipe worker --concurrency 8
    """
    from ..workers.worker import work

    level = logging.DEBUG if state.verbose > 1 else logging.INFO if state.verbose else logging.WARNING
    configure_logging(state.log_format, level, timestamps=True)
    logging.getLogger("pipeline").setLevel(min(level, logging.INFO))  # what it does: start, jobs, stop
    log = logging.getLogger("pipeline.workers")
    settings = state.settings
    n = concurrency or settings.workers.concurrency

    async def main():
        stop = asyncio.Event()
        with stop_on_signals(stop, log, "finishing the running jobs, taking no new one"):
            await work(settings, concurrency=n, stop=stop, clock=state.clock)
        log.info("worker stopped")

    asyncio.run(main())
