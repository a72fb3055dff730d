"""Batch jobs on the Gemini API (google-genai `client.aio.batches`): submit the pending requests,
collect finished jobs, give up late ones. pipeline/llm/batch.py says how their answers are used.

Wire (google-genai 3.3, Gemini Developer API): create is `POST /v1beta/models/{model}:batchGenerateContent`
with `{"batch": {"displayName", "inputConfig": {"requests": {"requests": [{"request": {model,
contents, systemInstruction, generationConfig}, "metadata": {"key": …}}]}}}}`; get is
`GET /v1beta/batches/{id}` (`metadata.state` BATCH_STATE_*, and once succeeded
`metadata.output.inlinedResponses.inlinedResponses`, in request order, each a response or an
error, with its metadata); cancel is `POST /v1beta/batches/{id}:cancel`. The client would put its
own api_version (v1 by default, what generateContent uses) in those paths; the Batch API is
v1beta, so every batch call says so (`BATCH_API_VERSION`).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging

import httpx2
from google.genai import errors as genai_errors
from google.genai import types

from ..safety import redact
from .batch import SCHEMAS, BatchBook, batch_wanted
from .errors import LLMError
from .gemini import read_response

log = logging.getLogger(__name__)
BATCH_API_VERSION = "v1beta"
MAX_JOB_BYTES = 18_000_000  # inline requests per job stay under the API's ~20 MB request size
_HTTP = types.HttpOptions(api_version=BATCH_API_VERSION)
# what a batch call may meet on the wire (the server's error, a timeout, a lost connection)
_API_FAILURES = (genai_errors.APIError, httpx2.HTTPError, asyncio.TimeoutError)
_FAILED = {"JOB_STATE_FAILED": "failed", "JOB_STATE_CANCELLED": "cancelled", "JOB_STATE_EXPIRED": "expired"}


def _size(row: dict) -> int:
    request = row["request"]
    return len(request["prompt"].encode()) + len((request["system"] or "").encode()) + 4096  # schema, envelope


def split_jobs(pending: list[dict], max_bytes: int = MAX_JOB_BYTES) -> list[tuple[str, list[dict]]]:
    """Pending requests (by model) as jobs: one model each, each under `max_bytes`."""
    jobs: list[tuple[str, list[dict]]] = []
    size = 0
    for row in pending:
        if not jobs or jobs[-1][0] != row["model"] or size + _size(row) > max_bytes:
            jobs.append((row["model"], []))
            size = 0
        jobs[-1][1].append(row)
        size += _size(row)
    return jobs


def _api_error(what: str, exc: Exception) -> LLMError:
    # never the API exception's own text: it is the whole error JSON (see gemini.py)
    if isinstance(exc, genai_errors.APIError):
        return LLMError(f"{what}: {exc.code} {exc.status}: {exc.message}")
    return LLMError(f"{what}: {exc.__class__.__name__}")


SUBMIT_LOCK = "mempipe:batch-submit"
SUBMIT_WAIT_S = 120.0  # another process's submit: a few create calls


async def submit(store, client, settings, run: dict, now: dt.datetime) -> list[dict]:
    """Every pending request (recorded by any process) as batch jobs; the jobs as stored. One
    process submits at a time (a lock on the database): two runs reading the same pending rows
    would each create a job for them, and the second would be billed for nothing."""
    lock = store.lock(SUBMIT_LOCK, file_suffix="batch")
    waited = 0.0
    while not lock.try_acquire():
        if waited >= SUBMIT_WAIT_S:  # still submitting: it sends what this run recorded, or the next run does
            log.warning("batch: another process has been submitting for %.0f s; this run leaves it the pending "
                        "requests", waited)
            return []
        await asyncio.sleep(0.2)
        waited += 0.2
    try:
        return await _submit_pending(store, client, run, now)
    finally:
        lock.release()


async def _submit_pending(store, client, run: dict, now: dt.datetime) -> list[dict]:
    jobs = []
    for model, rows in split_jobs(store.pending_batch_requests()):  # read under the lock
        inlined = []
        for row in rows:
            r = row["request"]
            contents, config = client.request(model, r["prompt"], system=r["system"],
                                              json_schema=SCHEMAS.get(r["schema"]) if r["schema"] else None,
                                              max_output_tokens=r["max_output_tokens"])
            inlined.append(types.InlinedRequest(model=model, contents=contents, config=config,
                                                metadata={"key": row["request_key"]}))
        try:
            created = await client.batches.create(model=model, src=inlined, config=types.CreateBatchJobConfig(
                display_name=f"mempipe {run['run_kind']} {now:%Y-%m-%d %H:%M}", http_options=_HTTP))
        except _API_FAILURES as exc:
            raise _api_error(f"{model}: submitting a batch job of {len(rows)} requests", exc) from None
        job = {"name": created.name, "model": model, "state": "running", "requests": len(rows),
               "submitted_at": now, **run}
        store.record_batch_job(job, [row["request_key"] for row in rows], now)
        log.info("batch job %s: %d %s requests submitted", created.name, len(rows), model)
        jobs.append(job)
    return jobs


def _answers(job: dict, keys: list[str], responses: list) -> list[dict]:
    """Each inline response with its request: by the metadata key it echoes, else by position."""
    out = []
    for i, item in enumerate(responses or []):
        key = (item.metadata or {}).get("key") or (keys[i] if len(responses) == len(keys) else None)
        if key is None:
            continue
        answer, error, prompt_tokens, output_tokens = None, None, 0, 0
        if item.error is not None or item.response is None:
            why = getattr(item.error, "message", None) or "no response"
            error = redact(f"{job['model']}: batch answer failed: {why}")
        else:
            try:
                got = read_response(job["model"], item.response)
                answer, prompt_tokens, output_tokens = got.text, got.prompt_tokens, got.output_tokens
            except LLMError as exc:
                error = str(exc)
        out.append({"request_key": key, "answer": answer, "answer_error": error,
                    "prompt_tokens": prompt_tokens, "output_tokens": output_tokens})
    return out


async def collect(store, client, settings, now: dt.datetime) -> list[dict]:
    """Ask the server about every running job: succeeded → its answers stored with their
    requests; failed / cancelled / expired, or older than gemini.batch_timeout_h (cancelled) →
    its requests failed (the next run sends them interactively). Returns the jobs that ended here
    (succeeded or not: either way a run has work to do with them)."""
    timeout = dt.timedelta(hours=settings.gemini.batch_timeout_h)
    ended = []
    for job in store.batch_jobs(states=["running"]):
        try:
            remote = await client.batches.get(name=job["name"], config=types.GetBatchJobConfig(http_options=_HTTP))
        except _API_FAILURES as exc:
            if isinstance(exc, genai_errors.ClientError) and exc.code == 404:
                store.fail_batch_job(job["name"], "failed", "the server does not know this job", now)
                continue
            log.warning("%s", _api_error(f"batch job {job['name']}: asking for its state", exc))
            continue
        state = remote.state.name if remote.state is not None else ""
        if state == "JOB_STATE_SUCCEEDED":
            responses = remote.dest.inlined_responses if remote.dest is not None else []
            n = store.store_batch_answers(job["name"], _answers(job, store.batch_job_keys(job["name"]), responses), now)
            log.info("batch job %s succeeded: %d answers", job["name"], n)
            ended.append(job)
        elif state in _FAILED:
            error = redact(f"batch job {state.removeprefix('JOB_STATE_').lower()}"
                           + (f": {remote.error.message}" if remote.error is not None and remote.error.message else ""))
            store.fail_batch_job(job["name"], _FAILED[state], error, now)
            ended.append(job)
        elif now - job["submitted_at"] > timeout:
            try:
                await client.batches.cancel(name=job["name"], config=types.CancelBatchJobConfig(http_options=_HTTP))
            except _API_FAILURES as exc:  # given up all the same: its answers would come too late
                log.warning("%s", _api_error(f"batch job {job['name']}: cancelling", exc))
            store.fail_batch_job(job["name"], "timed_out", f"unfinished after {settings.gemini.batch_timeout_h:g} h", now)
            ended.append(job)
        else:
            store.check_batch_job(job["name"], now)
    # answers nobody used for a long while (their items changed, or no run came): recomputed
    store.prune_batches(now - 2 * timeout - dt.timedelta(days=1))
    return ended


# ---------------------------------------------------------------- a run's two hooks (runner.py)

async def start_batch(ctx, kind: str) -> bool:
    """Before a run's first stage: collect finished jobs and attach a BatchBook to the
    summarizer. False (nothing done) when this run does not batch."""
    if not batch_wanted(ctx, kind):
        return False
    ended = await collect(ctx.store, ctx.summarizer.client, ctx.settings, ctx.now())
    if ended:  # this run uses their answers (or sends their requests interactively): serve's poll need not
        ctx.store.mark_batch_rerun([j["name"] for j in ended], ctx.now())
    ctx.summarizer.batch = BatchBook(ctx.store, ctx.settings, ctx.clock,
                                     thinking_budget=getattr(ctx.summarizer.client, "thinking_budget", None))
    return True


async def finish_batch(ctx, kind: str, date_from, date_to, guild_id) -> list[dict]:
    """After a batching run's stages: submit what is pending, as jobs that remember this run."""
    ctx.summarizer.batch = None
    if not ctx.stats.deferred:  # the night is done: the answers its rows were made with go (chat text)
        ctx.store.delete_used_batch_requests()
    run = {"run_kind": kind, "date_from": date_from, "date_to": date_to, "guild_id": guild_id}
    return await submit(ctx.store, ctx.summarizer.client, ctx.settings, run, ctx.now())


async def poll(run_context, store, settings, clock) -> dict:
    """serve's poll (every gemini.batch_poll_s): collect the finished jobs, then run again each run
    that submitted a job which ended — succeeded (its answers wait) or not (its requests go
    interactive) — and that no run has taken up since (rerun_at empty: also those a crash or a
    failed re-run left). Kind and dates as stored with the job; a rollover runs for every guild:
    the others' items are fresh. One re-run failing does not keep the others from running.
    Returns the jobs collected, the new run ids and how many re-runs failed."""
    from ..runner import execute  # the runner calls start_batch / finish_batch from this module

    ctx = run_context()
    try:
        ended = await collect(store, ctx.summarizer.client, settings, clock()) if hasattr(
            getattr(ctx.summarizer, "client", None), "batches") else []
    finally:
        close = getattr(ctx.summarizer, "aclose", None)
        if close is not None:
            await close()
    waiting = [j for j in store.batch_jobs() if j["finished_at"] is not None and j["rerun_at"] is None]
    runs: dict[tuple, list[str]] = {}
    for job in sorted(waiting, key=lambda j: (j["submitted_at"], j["name"])):
        runs.setdefault((job["run_kind"], job["date_from"], job["date_to"], job["guild_id"]), []).append(job["name"])
    run_ids, failed = [], 0
    for (kind, date_from, date_to, guild_id), names in runs.items():
        store.mark_batch_rerun(names, clock())
        try:
            result = await execute(run_context(), kind, date_from, date_to, guild_id)
        except Exception:  # execute recorded the run as failed; the other runs still go
            log.exception("batch poll: the re-run of %s %s..%s failed", kind, date_from, date_to)
            failed += 1
            continue
        run_ids.append(result.run_id)
    return {"batch_jobs_collected": len(ended), "run_ids": run_ids, "reruns_failed": failed}
