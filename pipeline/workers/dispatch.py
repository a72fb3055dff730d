"""The run's side (`workers.enabled`, PostgreSQL, not a dry run): `bring_up_to_date` hands each
stage to a Dispatcher, which defers the stage's items as jobs (jobs.py) on `workers.queue`, waits
for them, and only then returns — so dailies, historical rows and merges keep their order.

Waiting polls the statuses of the jobs it deferred (in a thread: the event loop, `serve`'s, is
never blocked) and:
- a job gone from the queue succeeded when it reported so on the run's channel (a job reports,
  then procrastinate deletes it); gone without its report it is lost — deleted after it failed
  (erase, retention: `queue_drop_ended`), or another run's job, whose report went to that run —
  and is deferred again (found fresh when it was done: no model call);
- a job that failed (its task raised) fails the run with the item's name and the worker's cause;
- a job cancelled or aborted (a worker stopped before finishing it) is deferred again;
- every `workers.heartbeat_s`, the jobs of workers silent for `workers.stalled_s` go back to the
  queue (procrastinate's retry), so another worker picks up the item of one that was killed;
- no live worker running a job of the queue and none of the run's jobs ending for
  `workers.no_worker_s`: the run fails (NoWorker), saying to start `mempipe worker` on the queue.
An item another run has waiting with the same inputs is not queued twice: this run waits for
that job (jobs.py, queueing lock). When the run fails or is cancelled, its jobs not yet started
are cancelled (a running one finishes; what it writes is kept).

At the end of each stage the run settles its channel (pipeline/store/queue.py) and takes in what
its jobs counted: pipeline_runs' counts from the row (`take_run_counts`; `finish_run` adds them
back with the run's own), the other counts and a daily job's folds from the reports. So the run's
row, report and log line show the same numbers as an in-process run's, and a refresh's merges
see the folds its dailies made.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from typing import Callable

from ..errors import ErasedDuringRun, MempipeError
from ..stages.context import RENAMED, RunContext, RunStats
from ..stages.merge import plan_merges
from .jobs import JobSpec, daily_jobs, historical_jobs, merge_groups, merge_jobs, zone_days
from .queue import opened, queue_app, require_postgresql

log = logging.getLogger(__name__)
POLL_S = 0.2        # how often a waiting run reads its jobs' statuses
DEFER_BATCH = 200   # jobs per INSERT
REDEFERS = 3        # a job cancelled or aborted this often fails the run
IDLE_S = 120.0      # no worker seen on the queue for this long: the run says so in its log (then every IDLE_S)
_COLUMNS = tuple(RunStats().columns())  # pipeline_runs' count columns
_STAT_OF = dict(RENAMED)  # a column stored under another name than its stat


def _succeeded(messages: list[dict]) -> set[str]:
    """The keys of the jobs that reported success on the run's channel."""
    return {m["key"] for m in messages if "key" in m and "error" not in m}


class WorkerJobFailed(MempipeError):
    """A job's task raised in a worker: the run fails, naming the item."""


class WorkerJobStopped(WorkerJobFailed, ErasedDuringRun):
    """A job stopped in a worker because a user was erased, or a memory forgotten or cleared,
    while it worked: the run fails as after any failed job, and is an ErasedDuringRun too (so
    `serve` runs it again soon, pipeline/scheduler/jobs.py)."""


class NoWorker(MempipeError):
    """No worker took the run's jobs for `workers.no_worker_s`: the run fails, saying what to start."""


def dispatcher_for(ctx: RunContext) -> "Dispatcher | None":
    """The run's Dispatcher when its stages go to workers, else None (in-process: the default,
    and every dry run, which writes nothing)."""
    if not ctx.settings.workers.enabled or ctx.dry_run:
        return None
    require_postgresql(ctx.store.dialect, "[workers] enabled = true")
    if ctx.run_id is None:
        raise MempipeError("a run handed to workers needs its pipeline_runs row (runner.execute)")
    return Dispatcher(ctx)


class Dispatcher:
    def __init__(self, ctx: RunContext):
        self.ctx = ctx
        self.workers = ctx.settings.workers
        self.run = {"id": ctx.run_id, "kind": ctx.run_kind}

    # ---------------------------------------------------------------- the stages

    async def dailies(self, plan, advance: Callable[[], None]) -> None:
        await self._stage(daily_jobs(plan.work, force=self.ctx.force, queued=plan.queued, day1=plan.day1,
                                           may_wait=plan.may_wait), advance)

    async def historicals(self, parts: list[dict], day1, advance: Callable[[], None]) -> None:
        await self._stage(historical_jobs(parts, day1, force=self.ctx.force), advance)

    async def merges(self, scopes: list[str], day1, in_run) -> None:
        """The run plans the merges (stages/merge.py `plan_merges`, the in-process planning) and
        hands them out in groups; a worker reads each group's inputs for its users only."""
        ctx = self.ctx
        plan = plan_merges(ctx, scopes, day1, in_run, plan_only=True)
        inputs = plan.inputs
        pairs = [(str(scope), user) for scope, user in plan.jobs]
        if ctx.folds:  # folds() reads each DM user's partitions: in one query
            inputs.preload_user_partitions({u for scope, u in plan.jobs if scope.kind == "dm"})
        scope_of = {str(scope): scope for scope, _u in plan.jobs}

        def folds(group: list[tuple[str, int]]) -> list[list]:
            """The run's folds in the partitions these merges read (a refresh's merges consult them)."""
            if not ctx.folds:
                return []
            read = {p for scope, user in group for p in inputs.source_partitions(scope_of[scope], user)}
            return [[p, d.isoformat(), h] for (p, d), h in sorted(ctx.folds.items()) if p in read]

        groups = merge_groups(pairs, inputs.guild_of)
        await self._stage(merge_jobs(groups, day1s=plan.day1s, zones=zone_days(ctx.settings.timezones, day1),
                                     force=ctx.force, kind=ctx.run_kind, folds=folds))

    # ---------------------------------------------------------------- one stage

    async def _stage(self, specs: list[JobSpec], advance: Callable[[], None] | None = None) -> None:
        """Defer `specs`, wait for every one, take in what they counted."""
        if not specs:
            return
        store = self.ctx.store
        queue = queue_app(store.engine.url)
        waiting: dict[int, tuple[JobSpec, bool]] = {}  # filled as jobs are deferred: a failure midway cancels them
        async with opened(queue), store.run_channel(self.ctx.run_id) as channel:
            t0 = time.monotonic()
            try:
                await self._defer(queue, specs, waiting)
                log.info("run %s: %d job(s) deferred to queue %r (%s)", self.ctx.run_id, len(specs),
                         self.workers.queue, specs[0].task)
                await self._wait(queue, waiting, channel, advance)
                await channel.settle()
            except BaseException:
                await self._cancel(waiting)
                try:
                    self._take(channel.messages)  # what finished before the failure counts
                except MempipeError as exc:
                    log.error("run %s: could not take in its workers' counts: %s", self.ctx.run_id, exc)
                raise
            self._take(channel.messages)
            log.info("run %s: %d %s job(s) done in %.1f s", self.ctx.run_id, len(specs), specs[0].task,
                     time.monotonic() - t0)

    async def _defer(self, queue, specs: list[JobSpec], out: dict[int, tuple[JobSpec, bool]]) -> None:
        """Into `out`, job id -> (spec, deferred by this run) for every spec, as they are deferred:
        new jobs in batches; an item some run already has waiting with the same inputs is that job."""
        from procrastinate import exceptions

        for i in range(0, len(specs), DEFER_BATCH):
            chunk = specs[i:i + DEFER_BATCH]
            try:
                jobs = await queue.job_manager.batch_defer_jobs_async([self._job(queue, s) for s in chunk])
            except exceptions.AlreadyEnqueued:  # the whole INSERT failed: one at a time
                for spec in chunk:
                    job_id, own = await self._defer_one(queue, spec)
                    out[job_id] = (spec, own)
                continue
            out.update({job.id: (spec, True) for job, spec in zip(jobs, chunk)})

    async def _defer_one(self, queue, spec: JobSpec) -> tuple[int, bool]:
        from procrastinate import exceptions

        for _ in range(5):
            try:
                return (await queue.job_manager.defer_job_async(self._job(queue, spec))).id, True
            except exceptions.AlreadyEnqueued:
                found = await queue.job_manager.list_jobs_async(queue=self.workers.queue,
                                                                queueing_lock=spec.queueing_lock)
                live = [j.id for j in found if j.status in ("todo", "doing")]
                if live:
                    log.info("%s: already queued by another run (job %s): waiting for it", spec.label, max(live))
                    return max(live), False
                # it started and finished in between: queue it again
        raise MempipeError(f"could not queue {spec.label}: its queueing lock stayed taken")

    def _job(self, queue, spec: JobSpec):
        return queue.configure_task(spec.task, lock=spec.key, queueing_lock=spec.queueing_lock,
                                    queue=self.workers.queue).make_new_job(**spec.kwargs(self.run))

    async def _wait(self, queue, waiting: dict[int, tuple[JobSpec, bool]], channel,
                    advance: Callable[[], None] | None) -> None:
        redeferred: dict[str, int] = {}
        next_check = time.monotonic() + self.workers.heartbeat_s
        seen = warned = time.monotonic()  # a worker last seen working on the queue, or a job of the run ending
        while waiting:
            statuses = await asyncio.to_thread(self.ctx.store.queue_job_statuses, list(waiting))
            gone = [spec.key for job_id, (spec, _own) in waiting.items() if job_id not in statuses]
            if gone and not set(gone) <= _succeeded(channel.messages):
                await channel.settle()  # a job reports before it is deleted: its report is in by now
            succeeded = _succeeded(channel.messages) if gone else set()
            for job_id, (spec, own) in list(waiting.items()):
                status = statuses.get(job_id) or ("succeeded" if spec.key in succeeded else "lost")
                if status in ("todo", "doing"):
                    continue
                del waiting[job_id]
                seen = time.monotonic()
                if status == "succeeded":
                    if advance is not None:
                        advance()
                elif status == "failed":
                    await channel.settle()
                    said = next((m for m in channel.messages if m.get("key") == spec.key and "error" in m), {})
                    cause = said.get("error", "its task raised; the worker's log has the cause")
                    failed = WorkerJobStopped if said.get("stopped") else WorkerJobFailed
                    raise failed(f"{spec.label} failed in a worker: {cause}")
                else:  # cancelled, aborted, lost: not done, not failed
                    redeferred[spec.key] = redeferred.get(spec.key, 0) + 1
                    if redeferred[spec.key] > REDEFERS:
                        raise WorkerJobFailed(f"{spec.label} was {status} {REDEFERS + 1} times in the queue")
                    if status != "lost":
                        log.warning("%s: job %s was %s; queueing it again", spec.label, job_id, status)
                    elif own:
                        log.warning("%s: job %s is gone from the queue without its report (an ended job deleted: "
                                    "erase, retention); queueing it again", spec.label, job_id)
                    else:
                        log.info("%s: job %s of another run is done (it reported to that run); queueing the item "
                                 "again for this run's count (found fresh: no model call)", spec.label, job_id)
                    new_id, own = await self._defer_one(queue, spec)
                    waiting[new_id] = (spec, own)
            if waiting and time.monotonic() >= next_check:
                next_check = time.monotonic() + self.workers.heartbeat_s
                await self._retry_stalled(queue)
                seen, warned = await self._check_workers(len(waiting), seen, warned)
            if waiting:
                await asyncio.sleep(POLL_S)

    async def _check_workers(self, n: int, seen: float, warned: float) -> tuple[float, float]:
        """A live worker running a job of the queue (any run's) counts as seen now. Unseen for
        IDLE_S the run says so in its log; for `workers.no_worker_s` it fails (NoWorker). A worker
        on another queue is not seen: it never takes these jobs."""
        now, q = time.monotonic(), self.workers.queue
        if await asyncio.to_thread(self.ctx.store.queue_working_workers, q, self.workers.stalled_s):
            return now, warned
        what = (f"start `mempipe worker` with [workers] queue = {q!r} on this database (or set [workers] "
                f"enabled = false)")
        if now - seen >= self.workers.no_worker_s:
            raise NoWorker(f"no worker took a job of queue {q!r} for {self.workers.no_worker_s:.0f} s "
                           f"({n} job(s) waiting): {what}")
        if now - seen >= IDLE_S and now - warned >= IDLE_S:
            log.warning("run %s: waiting for %d job(s) on queue %r, but no worker is running one: %s; the run "
                        "fails after workers.no_worker_s = %.0f s", self.ctx.run_id, n, q, what,
                        self.workers.no_worker_s)
            return seen, now
        return seen, warned

    async def _retry_stalled(self, queue) -> None:
        """Put the jobs of workers silent for `stalled_s` back in the queue."""
        from procrastinate import exceptions

        stalled = await queue.job_manager.get_stalled_jobs(queue=self.workers.queue,
                                                           seconds_since_heartbeat=self.workers.stalled_s)
        for job in stalled:
            try:
                await queue.job_manager.retry_job(job)
            except exceptions.UniqueViolation:
                await self._end_stalled(queue, job)
                continue
            except exceptions.ConnectorException as exc:  # another run put it back first, or the database
                log.warning("job %s (%s): could not put it back in the queue: %s", job.id, job.lock,
                            exc.__cause__ or exc)
                continue
            log.warning("job %s (%s): its worker %s is silent for %.0f s or more: back in the queue for another "
                        "worker", job.id, job.lock, job.worker_id, self.workers.stalled_s)

    async def _end_stalled(self, queue, job) -> None:
        """A stalled job whose twin (same queueing lock: the same item with the same inputs,
        deferred by another run while this one was `doing`) waits in `todo`: procrastinate's
        queueing-lock index allows one `todo` job, so it cannot go back; and the twin cannot start
        while it holds the item's lock. The twin does the item: the stalled job ends `aborted`,
        and every run waiting on it defers again, which finds the twin (`_defer_one`)."""
        from procrastinate import exceptions
        from procrastinate.jobs import Status

        try:
            await queue.job_manager.finish_job_by_id_async(job.id, status=Status.ABORTED, delete_job=False)
        except exceptions.ConnectorException as exc:  # another run ended it first, or the database
            log.warning("job %s (%s): could not end it: %s", job.id, job.lock, exc.__cause__ or exc)
            return
        log.warning("job %s (%s): its worker %s is silent for %.0f s or more and a twin job waits for the item: "
                    "aborted, the twin does it", job.id, job.lock, job.worker_id, self.workers.stalled_s)

    async def _cancel(self, waiting: dict[int, tuple[JobSpec, bool]]) -> None:
        """The run failed or is cancelled: its jobs not yet started are cancelled (best effort)."""
        own = [job_id for job_id, (_spec, mine) in waiting.items() if mine]
        try:
            n = await asyncio.to_thread(self.ctx.store.queue_cancel, own)
        except MempipeError as exc:
            log.error("run %s: could not cancel its jobs: %s", self.ctx.run_id, exc)
        else:
            log.info("run %s: %d job(s) not yet started cancelled", self.ctx.run_id, n)

    def _take(self, messages: list[dict]) -> None:
        """The stage's counts into the run's own (see the module's docstring)."""
        stats = self.ctx.stats
        for column, value in self.ctx.store.take_run_counts(self.ctx.run_id, _COLUMNS).items():
            name = _STAT_OF.get(column, column)
            setattr(stats, name, getattr(stats, name) + value)
        for message in messages:
            for name, value in message.get("reported", {}).items():
                setattr(stats, name, getattr(stats, name) + value)
            for partition, day, folded_from in message.get("folds", ()):
                self.ctx.folds[(partition, dt.date.fromisoformat(day))] = folded_from
        messages.clear()
