"""Retention: what is kept, for how long. Deletes in bounded batches (store.delete_older_than).

- chat_history: `retention_days`.
- daily summaries and their partition_days: `retention_days` too (a replay within retention
  can then still skip unchanged days).
- historical summaries: only the current window is read (day 1's history); older ones are kept
  for the seven days a replay may still ask for, then deleted.
- contexts not refreshed for `retention_days` (the user went quiet, their inputs aged out).
- worker jobs (PostgreSQL with workers) that failed or were cancelled: one day.
- batch mode's requests (prompts and answers: chat text) untouched for twice
  gemini.batch_timeout_h + a day, whether batch mode is on or not (collect prunes them too).
- in-chat requests once handled and older than `retention_days` (their message is gone by then;
  a pending one waits to be applied).
- facts and forgotten facts are never deleted by retention: they are the user's own record.
"""

from __future__ import annotations

import datetime as dt

from .calendar import HISTORY_DAYS


def apply_retention(store, settings, *, now: dt.datetime, batch_size: int = 5000) -> dict[str, int]:
    keep = dt.timedelta(days=settings.retention_days)
    # Local days differ by at most a day from UTC: keep one extra day so no guild loses a day early.
    oldest_day = (now - keep).date() - dt.timedelta(days=1)
    history_cutoff = now.date() - dt.timedelta(days=HISTORY_DAYS + 2)
    return {
        "chat_history": store.delete_older_than("chat_history", "ts", now - keep, batch_size),
        "daily_summaries": store.delete_older_than("daily_summaries", "day", oldest_day, batch_size),
        "partition_days": store.delete_older_than("partition_days", "day", oldest_day, batch_size),
        "historical_summaries": store.delete_older_than("historical_summaries", "day", history_cutoff, batch_size),
        "memory_context": store.delete_older_than("memory_context", "as_of_day", oldest_day, batch_size),
        # a profile is touched with its context every run: an old one has no context any more
        "memory_profiles": store.delete_older_than("memory_profiles", "as_of_day", oldest_day, batch_size),
        # worker jobs that failed or were cancelled (pipeline/workers/): kept a day for `mempipe
        # runs` debugging, then gone with the ids in their arguments
        "procrastinate_jobs": store.queue_drop_ended(settings.workers.queue, before=now - dt.timedelta(days=1)),
        "llm_batch_requests": store.prune_batches(
            now - 2 * dt.timedelta(hours=settings.gemini.batch_timeout_h) - dt.timedelta(days=1)),
        "chat_requests": store.prune_chat_requests(now - keep, batch_size),
    }
