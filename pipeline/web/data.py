"""What the status page and /metrics show, computed from the database (pipeline/store/ops.py) and
the settings. Pure shaping here: days, age buckets, reason classes, quota shares. Nothing holds
state between requests, so every process (leader or standby) shows the same numbers."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from ..calendar import local_day
from ..config import Settings
from ..store.ops import OpsReads

UTC = dt.timezone.utc
CHART_DAYS = 30

# Context age in days (the scope's today minus its as_of_day), as bounded buckets: (label, lo, hi)
AGE_BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("0", 0, 0), ("1", 1, 1), ("2-7", 2, 7), ("8-30", 8, 30), ("31+", 31, None))
SCOPE_KINDS = ("guild", "channel", "dm")

# A stored degraded_reason is free text (an error message); labels and the page show its class.
# First match wins; the words are those pipeline/llm writes (gemini.py, limiter.py, errors.py).
REASON_CLASSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("built_from_degraded", ("built from degraded",)),
    ("quota_exhausted", ("daily request quota",)),
    ("rate_limited", ("rate limited", "(429")),
    ("timeout", ("timed out", "timeout")),
    ("server_error", ("server error", "connection failed")),
    ("rejected", ("rejected with",)),
    ("bad_output", ("does not match", "truncated", "blocked", "empty answer", "no candidates")),
)
REASONS = tuple(name for name, _ in REASON_CLASSES) + ("other", "unknown")


def reason_class(reason: str | None) -> str:
    """The class of a stored degraded_reason: never its text (it may quote a server's message)."""
    if not reason:
        return "unknown"
    low = reason.lower()
    for name, words in REASON_CLASSES:
        if any(w in low for w in words):
            return name
    return "other"


def age_bucket(days: int) -> str:
    for label, lo, hi in AGE_BUCKETS:
        if days >= lo and (hi is None or days <= hi):
            return label
    return AGE_BUCKETS[0][0]  # as_of_day after today (a zone ahead of ours): current


@dataclass
class DayUsage:
    day: dt.date
    requests: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0


def daily_usage(ops: OpsReads, now: dt.datetime, days: int = CHART_DAYS) -> list[DayUsage]:
    """LLM requests, retries, tokens and estimated cost per UTC day (the day a run started), for
    the `days` days ending today, oldest first; a day without runs is a zero, not a gap."""
    today = now.astimezone(UTC).date()
    first = today - dt.timedelta(days=days - 1)
    out = {first + dt.timedelta(days=i): DayUsage(first + dt.timedelta(days=i)) for i in range(days)}
    since = dt.datetime.combine(first, dt.time(0), tzinfo=UTC)
    for r in ops.runs_since(since):
        u = out.get(r["started_at"].astimezone(UTC).date())
        if u is None:  # started after `now` (a clock behind the database's writers)
            continue
        u.requests += r["llm_calls"]
        u.retries += r["retries"]
        u.prompt_tokens += r["prompt_tokens"]
        u.output_tokens += r["output_tokens"]
        u.cost += r["estimated_cost"]
    return list(out.values())


def models_in_use(settings: Settings) -> list[str]:
    if settings.summarizer != "gemini":
        return []
    return sorted(set(settings.gemini.models.values()) | {settings.gemini.model_for("daily")})


def quota(settings: Settings, requests_today: int) -> list[dict[str, Any]]:
    """Requests today (UTC, as the limiter counts them) against each configured daily limit.
    pipeline_runs counts requests per run, not per model: they are attributed to a model only
    when one model serves every operation; else `requests` is None (the total is shown apart).
    A model not in use gets None too: today's runs may have used it before a config change."""
    in_use = models_in_use(settings)
    out = []
    for model, limits in sorted(settings.gemini.limits.items()):
        if limits.rpd is None:
            continue
        used = requests_today if in_use == [model] else None
        out.append({"model": model, "rpd": limits.rpd, "in_use": model in in_use, "requests": used,
                    "share": None if used is None else used / limits.rpd})
    return out


def degraded_counts(ops: OpsReads) -> list[dict[str, Any]]:
    """(table, reason class, rows), largest first."""
    totals: dict[tuple[str, str], int] = {}
    for r in ops.degraded_reasons():
        key = (r["table"], reason_class(r["reason"]))
        totals[key] = totals.get(key, 0) + r["rows"]
    return [{"table": t, "reason": c, "rows": n}
            for (t, c), n in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))]


def degraded_keys(ops: OpsReads) -> dict[str, list[dict[str, Any]]]:
    """The newest degraded rows' keys per table, each with its reason class (not its text) where
    the table stores one (a daily summary's is its partition-day's)."""
    out = {}
    for table, rows in ops.degraded_keys().items():
        out[table] = [{("reason" if k == "degraded_reason" else k): reason_class(v) if k == "degraded_reason" else v
                       for k, v in r.items()} for r in rows]
    return out


@dataclass
class Freshness:
    """Contexts by age bucket: per scope kind (for metrics) and per guild (for the page)."""

    by_kind: dict[str, dict[str, int]] = field(default_factory=dict)
    max_age: dict[str, int] = field(default_factory=dict)
    by_guild: dict[str, dict[str, int]] = field(default_factory=dict)  # "guild:<id>" or "DMs"
    total: int = 0


def freshness(ops: OpsReads, settings: Settings, now: dt.datetime) -> Freshness:
    """Age of every context: today in its scope's timezone (a guild's, a restricted channel's
    guild's, the default zone for DMs) minus its as_of_day. 0 = made for today's day 1."""
    rows = ops.context_days()
    channel_ids = {int(r["scope"].partition(":")[2]) for r in rows if r["scope"].startswith("channel:")}
    guild_of = ops.channel_guilds(channel_ids) if channel_ids else {}
    out = Freshness(by_kind={k: {label: 0 for label, _, _ in AGE_BUCKETS} for k in SCOPE_KINDS})
    today_in: dict[int | None, dt.date] = {}
    for r in rows:
        kind, _, ident = r["scope"].partition(":")
        guild = int(ident) if kind == "guild" else guild_of.get(int(ident)) if kind == "channel" else None
        if guild not in today_in:
            today_in[guild] = local_day(now, settings.timezones.for_guild(guild))
        age = max(0, (today_in[guild] - r["as_of_day"]).days)
        bucket = age_bucket(age)
        n = r["contexts"]
        if kind in out.by_kind:
            out.by_kind[kind][bucket] += n
            out.max_age[kind] = max(out.max_age.get(kind, 0), age)
        where = "DMs" if kind == "dm" else f"guild:{guild}" if guild is not None else r["scope"]
        per = out.by_guild.setdefault(where, {label: 0 for label, _, _ in AGE_BUCKETS})
        per[bucket] += n
        out.total += n
    return out


def requests_today(days: list[DayUsage], now: dt.datetime) -> int:
    today = now.astimezone(UTC).date()
    return sum(d.requests for d in days if d.day == today)
