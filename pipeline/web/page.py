"""GET /: the operators' status page — leader and jobs, the last runs, degraded rows, quota use,
and charts (inline SVG) of LLM use per day and context freshness per guild.

Read-only, rendered by Jinja2 with autoescaping on (templates/status.html.j2): no value from the
database reaches the HTML but through the template's escaping. It shows ids, days, counts and
reason classes only — never a chat text, a summary, a fact or a display name.
"""

from __future__ import annotations

import datetime as dt
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from ..config import Settings
from ..errors import MempipeError
from ..scheduler.status import status
from ..store import Store
from ..store.ops import OpsReads
from . import charts, data
from .health import health

TEMPLATES = Path(__file__).resolve().parent / "templates"
RUNS_SHOWN = 20
GUILDS_SHOWN = 40  # freshness rows on the page; the stalest first


def _clip(text: str | None, limit: int = 300) -> str:
    return "" if not text else text if len(text) <= limit else text[:limit - 1] + "…"


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["ts"] = lambda v: v.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S") if v else "never"
    env.filters["clip"] = _clip
    env.filters["num"] = lambda v: f"{v:,}" if isinstance(v, int) else f"{v:,.2f}"
    return env


def _runs(store: Store) -> list[dict[str, Any]]:
    rows = store.runs(RUNS_SHOWN)
    for r in rows:
        r["duration_s"] = round((r["finished_at"] - r["started_at"]).total_seconds(), 1) if r["finished_at"] else None
        r["facts_rejected"] = sum(v for k, v in r.items() if k.startswith("facts_rejected_"))
        # items = summarized + passed + errors (+ deferred, gemini.batch: shown with the error), as
        # `mempipe runs` adds them up (pipeline/cli/report.py)
        r["items"] = r["partition_days"] + r["historical_items"] + r["context_items"]
        r["passed"] = sum(v for k, v in r.items() if k.startswith("passed_"))
    return rows


def _freshness_chart(fresh: data.Freshness) -> charts.Chart:
    labels = [label for label, _, _ in data.AGE_BUCKETS]

    def staleness(item):  # the share of contexts older than a day first, then the id
        name, buckets = item
        total = sum(buckets.values()) or 1
        return (-(total - buckets["0"] - buckets["1"]) / total, name)

    rows = sorted(fresh.by_guild.items(), key=staleness)[:GUILDS_SHOWN]
    return charts.share_bars("freshness", "Context freshness per guild (age in days)",
                             [(name, [b[label] for label in labels]) for name, b in rows],
                             [f"{label} d" for label in labels])


def page_context(store: Store, settings: Settings, now: dt.datetime, *, identity: str, leading: bool) -> dict[str, Any]:
    ops = OpsReads(store)
    code, healthz = health(store, settings, now, identity=identity, leading=leading)
    if not healthz["database"]["reachable"]:
        raise MempipeError(healthz["database"]["error"])
    days = data.daily_usage(ops, now)
    dates = [d.day for d in days]
    fresh = data.freshness(ops, settings, now)
    today = data.requests_today(days, now)
    return {
        "now": now, "database": store.safe_url, "identity": identity, "leading": leading,
        "health": healthz, "healthy": code == 200,
        "scheduler": status(store, settings, now=now),
        "runs": _runs(store),
        "degraded": data.degraded_counts(ops), "degraded_keys": data.degraded_keys(ops),
        "quota": data.quota(settings, today), "requests_today": today,
        "models_in_use": data.models_in_use(settings), "summarizer": settings.summarizer,
        "charts": [
            charts.day_bars("requests", "LLM requests per day (UTC)", dates,
                            [("first tries", [d.requests - d.retries for d in days]),
                             ("retries", [d.retries for d in days])]),
            charts.day_bars("tokens", "Tokens per day", dates,
                            [("prompt tokens", [d.prompt_tokens for d in days]),
                             ("output tokens", [d.output_tokens for d in days])]),
            charts.day_bars("cost", "Estimated cost per day (USD)", dates,
                            [("USD", [d.cost for d in days])], fmt=lambda v: f"{v:.4g}"),
            _freshness_chart(fresh),
        ],
        "contexts_total": fresh.total, "guilds_total": len(fresh.by_guild), "guilds_shown": GUILDS_SHOWN,
    }


def render_page(store: Store, settings: Settings, now: dt.datetime, *, identity: str, leading: bool) -> tuple[int, str]:
    """(HTTP status, HTML). The database unreachable: 503 and a page that says so."""
    try:
        ctx = page_context(store, settings, now, identity=identity, leading=leading)
    except MempipeError as exc:
        return 503, environment().get_template("error.html.j2").render(now=now, error=str(exc), identity=identity)
    return 200, environment().get_template("status.html.j2").render(**ctx)
