"""GET /metrics: Prometheus text format from a custom Collector that reads the database at scrape
time. No in-process counters: a leader and a standby report the same numbers, and a restart
loses nothing. Counters are sums over pipeline_runs (runs are never deleted, so they only grow);
gauges are the state now. Labels are bounded: run kinds and statuses, table names, reason
classes, age buckets, scope kinds, job ids, configured models — never a user, guild or scope id.

Every read happens before the first family is yielded, so a database error fails the scrape as a
whole (the server answers 503) instead of exporting zeros.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from ..clock import Clock
from ..config import Settings
from ..scheduler.status import status
from ..store import Store
from ..store.ops import OpsReads, count_columns
from . import data

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
JOB_OUTCOMES = ("running", "ok", "failed", "cancelled")
LEADER_STATES = ("none", "leading", "stale", "stopped")
# pipeline_runs count columns with a metric of their own; every other count is an item outcome
_OWN_METRIC = {"partition_days", "prompt_tokens", "output_tokens", "llm_calls", "retries", "estimated_cost",
               "dropped_user_ids"}


def stage_columns() -> dict[str, str]:
    """stage -> the pipeline_runs column counting its items: partition_days for the daily stage,
    `<stage>_items` for the others (migration 0010)."""
    return {"daily": "partition_days",
            **{c.removesuffix("_items"): c for c in count_columns() if c.endswith("_items")}}


def item_columns() -> list[str]:
    """The item outcomes, which add up to the items (summarized + passed_<reason> + errors +
    deferred (gemini.batch), as `mempipe runs` adds them: pipeline/cli/report.py); a pass-through
    reason a later migration adds shows up by itself."""
    return [c for c in count_columns() if c in ("summarized", "errors", "deferred") or c.startswith("passed_")]


def work_columns() -> list[str]:
    """The other count columns (summarizer_calls, cache_hits, fallbacks, …): counts of work, not a
    partition of the items. A dry run's estimates (planned_*) are neither."""
    stages, items = set(stage_columns().values()), set(item_columns())
    return [c for c in count_columns() if c not in _OWN_METRIC and c not in stages and c not in items
            and not c.startswith(("facts_", "planned_"))]


@dataclass
class Snapshot:
    totals: list[dict[str, Any]]
    days: list[data.DayUsage]
    degraded: list[dict[str, Any]]
    fresh: data.Freshness
    scheduler: dict[str, Any]


def snapshot(store: Store, settings: Settings, now: dt.datetime) -> Snapshot:
    ops = OpsReads(store)
    return Snapshot(totals=ops.run_totals(), days=data.daily_usage(ops, now, days=1),
                    degraded=data.degraded_counts(ops), fresh=data.freshness(ops, settings, now),
                    scheduler=status(store, settings, now=now))


def _ts(value: dt.datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def families(snap: Snapshot, settings: Settings, now: dt.datetime, leading: bool) -> Iterator[Metric]:
    up = GaugeMetricFamily("mempipe_up", "1: the database was read for this scrape "
                           "(a failed read fails the scrape: HTTP 503)")
    up.add_metric([], 1)
    yield up

    runs = CounterMetricFamily("mempipe_runs", "Runs recorded in pipeline_runs, by kind, status and dry run",
                               labels=["kind", "status", "dry_run"])
    for t in snap.totals:
        runs.add_metric([t["kind"], t["status"], "true" if t["dry_run"] else "false"], t["runs"])
    yield runs

    real = [t for t in snap.totals if not t["dry_run"]]  # a dry run sends and writes nothing

    def by_kind(name: str, help_text: str, column: str) -> CounterMetricFamily:
        fam = CounterMetricFamily(name, help_text, labels=["kind"])
        sums: dict[str, float] = {}
        for t in real:
            sums[t["kind"]] = sums.get(t["kind"], 0) + t[column]
        for kind, v in sorted(sums.items()):
            fam.add_metric([kind], v)
        return fam

    def by_kind_and(name: str, help_text: str, label: str, columns: dict[str, str]) -> CounterMetricFamily:
        fam = CounterMetricFamily(name, help_text, labels=["kind", label])
        sums: dict[tuple[str, str], float] = {}
        for t in real:
            for value, column in columns.items():
                sums[(t["kind"], value)] = sums.get((t["kind"], value), 0) + t[column]
        for key, v in sorted(sums.items()):
            fam.add_metric(list(key), v)
        return fam

    yield by_kind_and("mempipe_run_items", "Items of runs by outcome; the outcomes add up to the items "
                      "(summarized, passed_<reason>, errors, deferred, as in `mempipe runs --json`)",
                      "outcome", {c: c for c in item_columns()})
    yield by_kind_and("mempipe_run_work", "Other counts of runs (summarizer_calls, cache_hits, fallbacks, ...: "
                      "not a partition of the items)", "what", {c: c for c in work_columns()})
    yield by_kind_and("mempipe_run_stage_items", "Items runs brought up to date, by stage (daily: partition-days, "
                      "historical, context)", "stage", stage_columns())
    yield by_kind("mempipe_run_dropped_user_ids", "User ids a summarizer returned that did not speak that day",
                  "dropped_user_ids")
    yield by_kind_and("mempipe_facts", "Facts proposed by runs, by outcome (added, updated, unchanged, "
                      "rejected_<reason>)", "outcome",
                      {c.removeprefix("facts_"): c for c in count_columns() if c.startswith("facts_")})
    yield by_kind("mempipe_llm_requests", "Requests sent to a model (retries included)", "llm_calls")
    yield by_kind("mempipe_llm_retries", "Requests that were retries of a failed one", "retries")
    yield by_kind_and("mempipe_llm_tokens", "Tokens by kind (prompt, output)", "type",
                      {"prompt": "prompt_tokens", "output": "output_tokens"})
    yield by_kind("mempipe_llm_estimated_cost_usd", "Estimated cost in USD from [gemini.prices]", "estimated_cost")

    today = data.requests_today(snap.days, now)
    g = GaugeMetricFamily("mempipe_llm_requests_today",
                          "Requests sent since 00:00 UTC, all models (runs started today)")
    g.add_metric([], today)
    yield g
    limit = GaugeMetricFamily("mempipe_quota_requests_per_day",
                              "Configured daily request limit (gemini.limits.<model>.rpd)", labels=["model"])
    used = GaugeMetricFamily("mempipe_quota_used_ratio", "Requests today / rpd; only where runs' requests can be "
                             "attributed to the model (one model serves every operation)", labels=["model"])
    for q in data.quota(settings, today):
        limit.add_metric([q["model"]], q["rpd"])
        if q["share"] is not None:
            used.add_metric([q["model"]], q["share"])
    yield limit
    yield used

    deg = GaugeMetricFamily("mempipe_degraded_rows", "Rows made by a fallback, by table and reason class",
                            labels=["table", "reason"])
    for d in snap.degraded:
        deg.add_metric([d["table"], d["reason"]], d["rows"])
    yield deg

    ctx = GaugeMetricFamily("mempipe_contexts", "Contexts by scope kind and age in days (the scope's today minus "
                            "as_of_day; 0 = current)", labels=["scope_kind", "age_days"])
    oldest = GaugeMetricFamily("mempipe_context_age_days_max", "Age in days of the oldest context, by scope kind",
                               labels=["scope_kind"])
    for kind, buckets in snap.fresh.by_kind.items():
        for bucket, n in buckets.items():
            ctx.add_metric([kind, bucket], n)
        if kind in snap.fresh.max_age:
            oldest.add_metric([kind], snap.fresh.max_age[kind])
    yield ctx
    yield oldest

    yield from _scheduler(snap.scheduler, leading)


def _scheduler(report: dict[str, Any], leading: bool) -> Iterator[Metric]:
    lead = report["leader"]
    state = GaugeMetricFamily("mempipe_leader_state", "1 for the recorded leader's state (none, leading, stale, "
                              "stopped)", labels=["state"])
    for s in LEADER_STATES:
        state.add_metric([s], 1 if (lead["state"] if lead else "none") == s else 0)
    yield state
    if lead is not None:
        age = GaugeMetricFamily("mempipe_leader_heartbeat_age_seconds", "Seconds since the leader's last heartbeat")
        age.add_metric([], lead["heartbeat_age_s"])
        yield age
    me = GaugeMetricFamily("mempipe_process_leader", "1 when the process answering this scrape leads (the one "
                           "per-process value here)")
    me.add_metric([], 1 if leading else 0)
    yield me

    outcome = GaugeMetricFamily("mempipe_job_last_outcome", "1 for how each scheduler job's last run ended",
                                labels=["job", "outcome"])
    duration = GaugeMetricFamily("mempipe_job_last_duration_seconds", "Duration of each job's last run", labels=["job"])
    started = GaugeMetricFamily("mempipe_job_last_start_timestamp_seconds", "When each job last started (Unix time)",
                                labels=["job"])
    ok_at = GaugeMetricFamily("mempipe_job_last_success_timestamp_seconds", "Start of each job's last ok run "
                              "(Unix time)", labels=["job"])
    due = GaugeMetricFamily("mempipe_job_next_run_timestamp_seconds", "When each configured job is due next "
                            "(Unix time)", labels=["job"])
    for j in report["jobs"]:
        job = j["job"]
        if j["last_outcome"] is not None:
            for o in JOB_OUTCOMES:
                outcome.add_metric([job, o], 1 if j["last_outcome"] == o else 0)
        for fam, value in ((duration, j["last_duration_s"]), (started, _ts(j["last_started_at"])),
                           (ok_at, _ts(j["last_ok_at"])), (due, _ts(j["next_run_at"]))):
            if value is not None:
                fam.add_metric([job], value)
    yield from (outcome, duration, started, ok_at, due)


class MempipeCollector:
    """A prometheus_client collector: `collect()` reads the database, then yields the families."""

    def __init__(self, store: Store, settings: Settings, clock: Clock, leading: Callable[[], bool]):
        self.store, self.settings, self.clock, self.leading = store, settings, clock, leading

    def collect(self) -> Iterator[Metric]:
        now = self.clock()
        snap = snapshot(self.store, self.settings, now)  # raises before anything is yielded
        return families(snap, self.settings, now, self.leading())


def registry_for(store: Store, settings: Settings, clock: Clock, leading: Callable[[], bool]) -> CollectorRegistry:
    """A registry of our collector only (not the global one: its process metrics would differ
    between the leader and a standby, and tests would see each other's)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(MempipeCollector(store, settings, clock, leading))
    return registry


def render(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
