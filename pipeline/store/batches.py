"""Gemini Batch mode's rows (llm_batch_requests, llm_batch_jobs; pipeline/llm/batch.py).

A request is found by its key (a hash of everything the model sees): pending (recorded by any
process, not yet sent), submitted (in a job), answered or failed. A job row says which run
submitted it, so `serve` can start that run again once its answers are in. The request rows hold
chat text and summaries: the used ones are deleted when a run ends with nothing deferred (until
then a forced run may ask for them again), and user erase / clear / forget drop every one
(`drop_batch_requests`: they are recomputed).
"""

from __future__ import annotations

import datetime as dt
from typing import Iterable, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..calendar import daily_item_key, historical_item_key, merge_item_key
from ..db.tables import llm_batch_jobs, llm_batch_requests
from .base import chunks, insert_for

R = llm_batch_requests.c
J = llm_batch_jobs.c
FINISHED_REQUEST_STATES = ("answered", "failed")


class BatchStorage(Protocol):
    def batch_request(self, key: str) -> dict | None: ...
    def record_batch_request(self, key: str, model: str, request: dict, now: dt.datetime, *,
                             item_key: str | None = None) -> None: ...
    def pending_batch_requests(self) -> list[dict]: ...
    def record_batch_job(self, job: dict, keys: list[str], now: dt.datetime) -> int: ...
    def batch_jobs(self, states: Iterable[str] | None = None) -> list[dict]: ...
    def batch_job_keys(self, name: str) -> list[str]: ...
    def store_batch_answers(self, name: str, answers: list[dict], now: dt.datetime) -> int: ...
    def fail_batch_job(self, name: str, state: str, error: str, now: dt.datetime) -> int: ...
    def keep_interactive_answer(self, key: str, answer: str, prompt_tokens: int, output_tokens: int,
                                now: dt.datetime) -> int: ...
    def check_batch_job(self, name: str, now: dt.datetime) -> None: ...
    def mark_batch_rerun(self, names: Iterable[str], now: dt.datetime) -> None: ...
    def use_batch_requests(self, keys: Iterable[str], now: dt.datetime) -> int: ...
    def delete_used_batch_requests(self) -> int: ...
    def drop_batch_requests(self, *, partition_days: Iterable[tuple[str, dt.date]] | None = None,
                            conn: Connection | None = None) -> int: ...
    def prune_batches(self, before: dt.datetime) -> int: ...


class BatchStore:
    # ------------------------------------------------------------------ requests

    def batch_request(self, key: str) -> dict | None:
        found = self.rows("reading a batch request", sa.select(llm_batch_requests).where(R.request_key == key))
        return found[0] if found else None

    def record_batch_request(self, key: str, model: str, request: dict, now: dt.datetime, *,
                             item_key: str | None = None) -> None:
        """A request a run wants answered by the next job (once: another process may record it too),
        marked with the item that asks (`drop_batch_requests(item_keys=…)`)."""
        with self.writing("recording a batch request") as conn:
            insert = insert_for(conn)
            conn.execute(insert(llm_batch_requests).values(
                request_key=key, model=model, request=request, state="pending", created_at=now, updated_at=now,
                item_key=item_key,
            ).on_conflict_do_nothing(index_elements=["request_key"]))

    def pending_batch_requests(self) -> list[dict]:
        """Every request not yet sent, by model then key (what the next submit sends)."""
        return self.rows("reading pending batch requests", sa.select(R.request_key, R.model, R.request)
                         .where(R.state == "pending").order_by(R.model, R.request_key))

    def record_batch_job(self, job: dict, keys: list[str], now: dt.datetime) -> int:
        """A job the server accepted (`job`: name, model, state, requests, submitted_at, run_kind,
        date_from, date_to, guild_id) and its requests, now submitted; returns how many."""
        with self.writing("recording a batch job") as conn:
            conn.execute(sa.insert(llm_batch_jobs).values(**job))
            moved = 0
            for chunk in chunks(keys):
                moved += conn.execute(sa.update(llm_batch_requests).where(
                    R.request_key.in_(chunk), R.state == "pending").values(
                    state="submitted", job_name=job["name"], updated_at=now)).rowcount
            return moved

    def batch_jobs(self, states: Iterable[str] | None = None) -> list[dict]:
        """Jobs, newest first (`states`: only these)."""
        q = sa.select(llm_batch_jobs).order_by(J.submitted_at.desc(), J.name)
        if states is not None:
            q = q.where(J.state.in_(sorted(states)))
        return self.rows("listing batch jobs", q)

    def batch_job_keys(self, name: str) -> list[str]:
        """The keys of a job's requests still waiting for it, in key order (the order it sent them)."""
        return [r["request_key"] for r in self.rows("reading a batch job's requests", sa.select(R.request_key).where(
            R.job_name == name, R.state == "submitted").order_by(R.request_key))]

    def store_batch_answers(self, name: str, answers: list[dict], now: dt.datetime) -> int:
        """A succeeded job: each answer (request_key, answer, answer_error, prompt_tokens,
        output_tokens) with its request (one a user control dropped meanwhile stays dropped); a
        request the job did not answer is failed. The job is then `succeeded`."""
        with self.writing("storing batch answers") as conn:
            stored = 0
            for a in answers:
                stored += conn.execute(sa.update(llm_batch_requests).where(
                    R.request_key == a["request_key"], R.job_name == name, R.state == "submitted").values(
                    state="answered", answer=a["answer"], answer_error=a["answer_error"], answered_by="batch",
                    prompt_tokens=a["prompt_tokens"], output_tokens=a["output_tokens"], updated_at=now)).rowcount
            conn.execute(sa.update(llm_batch_requests).where(R.job_name == name, R.state == "submitted").values(
                state="failed", answer_error="no answer in the job's results", updated_at=now))
            conn.execute(sa.update(llm_batch_jobs).where(J.name == name).values(
                state="succeeded", checked_at=now, finished_at=now))
            return stored

    def keep_interactive_answer(self, key: str, answer: str, prompt_tokens: int, output_tokens: int,
                                now: dt.datetime) -> int:
        """The interactive answer of a request whose job failed or whose batch answer was unusable,
        kept with it: the item's next round (if it waits for another answer) uses it, not the API."""
        with self.writing("keeping an interactive answer") as conn:
            return conn.execute(sa.update(llm_batch_requests).where(
                R.request_key == key, R.state.in_(FINISHED_REQUEST_STATES)).values(
                state="answered", answer=answer, answer_error=None, answered_by="interactive",
                prompt_tokens=prompt_tokens, output_tokens=output_tokens, updated_at=now)).rowcount

    def fail_batch_job(self, name: str, state: str, error: str, now: dt.datetime) -> int:
        """A job that failed, was cancelled, expired or was given up (`state`): its requests go
        interactive at the next run. Returns how many."""
        with self.writing("failing a batch job") as conn:
            conn.execute(sa.update(llm_batch_jobs).where(J.name == name).values(
                state=state, error=error, checked_at=now, finished_at=now))
            return conn.execute(sa.update(llm_batch_requests).where(R.job_name == name, R.state == "submitted").values(
                state="failed", answer_error=error, updated_at=now)).rowcount

    def check_batch_job(self, name: str, now: dt.datetime) -> None:
        """A job still running when asked."""
        with self.writing("recording a batch job's check") as conn:
            conn.execute(sa.update(llm_batch_jobs).where(J.name == name).values(checked_at=now))

    def mark_batch_rerun(self, names: Iterable[str], now: dt.datetime) -> None:
        with self.writing("recording a batch job's rerun") as conn:
            for chunk in chunks(names):
                conn.execute(sa.update(llm_batch_jobs).where(J.name.in_(chunk)).values(rerun_at=now))

    def use_batch_requests(self, keys: Iterable[str], now: dt.datetime) -> int:
        """Answered or failed requests an item's row was made with (deleted with the night's end)."""
        with self.writing("recording used batch requests") as conn:
            return sum(conn.execute(sa.update(llm_batch_requests).where(
                R.request_key.in_(chunk), R.state.in_(FINISHED_REQUEST_STATES)).values(used_at=now)).rowcount
                for chunk in chunks(keys))

    def delete_used_batch_requests(self) -> int:
        """Every used answer and failure: a run ended with nothing deferred (the night is done)."""
        with self.writing("deleting used batch requests") as conn:
            return conn.execute(sa.delete(llm_batch_requests).where(R.used_at.is_not(None))).rowcount

    def drop_batch_requests(self, *, partition_days: Iterable[tuple[str, dt.date]] | None = None,
                            conn: Connection | None = None) -> int:
        """Requests and answers not yet used, which quote chat text and summaries (privacy): every
        one (user erase, clear and forget), or — `partition_days`, a message deletion's — those
        that may quote those days: their daily requests, the past weeks of their partitions (a
        daily summary may quote a message whole), every merge (a scope reads many partitions; the
        last round of a night) and any request no item marked. The rest of a batch night stays.
        They are recomputed: a run records what it still needs."""
        with self.writing_in("dropping batch requests", conn) as cx:
            if partition_days is None:
                return cx.execute(sa.delete(llm_batch_requests)).rowcount
            days = sorted(set(partition_days))
            if not days:
                return 0
            partitions = sorted({p for p, _d in days})
            quoting = sa.or_(R.item_key.is_(None), R.item_key.like(merge_item_key("%", "%")),
                             *[R.item_key.like(historical_item_key(p, "%", "%")) for p in partitions])
            n = cx.execute(sa.delete(llm_batch_requests).where(quoting)).rowcount
            for part in chunks([daily_item_key(p, d) for p, d in days]):
                n += cx.execute(sa.delete(llm_batch_requests).where(R.item_key.in_(part))).rowcount
            return n

    def prune_batches(self, before: dt.datetime) -> int:
        """Requests untouched since `before` in any state (answers nobody used, failures, and
        pending or submitted ones a run left when batch mode was turned off: they hold chat text),
        and jobs finished before it. Called by collect and by retention."""
        with self.writing("pruning batch requests") as conn:
            n = conn.execute(sa.delete(llm_batch_requests).where(R.updated_at < before)).rowcount
            conn.execute(sa.delete(llm_batch_jobs).where(J.finished_at.is_not(None), J.finished_at < before))
            return n
