"""4. Quota use: the LLM summarizer, through the runner's daily stage, against the fake Gemini
server with a seeded random latency and a requests-per-window limit: how much of the limit the
run uses, and whether it ever goes over.

Variants (env.PLANS): "real scale" is the default configuration as it runs — the 10 requests
per 60 s of gemini-2.5-flash, latency 1-3 s (large run only: it takes minutes). "time-scaled"
divides every time by 15 (window 4 s, latency 0.07-0.2 s): the same run, faster. "window shrunk,
latency not" keeps 1-3 s against a 4 s window, a harsher ratio than any real quota has. The
limit is set both in the fake server (429 beyond it) and in our limiter.

It runs in a child process (`python -m bench.quota_job '<job>'`), started before the other
sections and collected in its turn: it spends its time waiting on latency and windows, using a
few per cent of one core, so it does not disturb the sections measured meanwhile.
"""

from __future__ import annotations

import asyncio
import collections
import datetime as dt
import json
import random
import subprocess
import sys
import time
from pathlib import Path

from ..env import ROOT, Env, log

TITLE = "Quota use"
TARGET = 0.9
MODEL = "gemini-2.5-flash"


def _job(env: Env) -> dict:
    return {"corpus": str(env.corpus_path), "work": str(env.work), "timezones": env.meta["timezones"],
            "seed": env.seed, "variants": env.plan["quota"]}


def start(env: Env) -> None:
    if "quota" not in env.cache:
        log("quota: starting its child process (runs alongside the other sections)")
        env.cache["quota"] = subprocess.Popen([sys.executable, "-m", "bench.quota_job", json.dumps(_job(env))],
                                              cwd=ROOT, stdout=subprocess.PIPE, text=True)


def run(env: Env) -> dict:
    start(env)
    proc = env.cache.pop("quota")
    out, _ = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"quota job failed (exit {proc.returncode})")
    return json.loads(out.strip().splitlines()[-1])


def targets(res: dict) -> list[tuple[str, str, bool | None]]:
    v = res["variants"][0]
    return [(f"≥ {TARGET} of the limit, never over ({v['name']})", f"{v['share']:.2f}; busiest window "
             f"{v['max_in_window']}/{v['limit']}, {v['rejected']} × 429", v["met"])]


def render(res: dict) -> list[str]:
    first = res["variants"][0]
    out = [f"Daily requests (one per partition-day of 3–60 messages from the corpus) through `run_daily` under the "
           f"runner's concurrency slots (`gemini.concurrency` = {first['concurrency']}, the default), the real "
           f"google-genai client, and the fake server answering after a seeded random latency. The limit is set "
           f"both in the fake server (it answers 429 beyond it) and in our limiter (`gemini.limits`, "
           f"`gemini.rate_window_s`). The target applies to the first row.", "",
           "| variant | limit | latency (s) | requests | achieved / limit | busiest window | 429s | fallbacks | run (s) | |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for v in res["variants"]:
        lo, hi = v["latency"]
        out.append(f"| {v['name']} | {v['limit']} per {v['window_s']:g} s | {lo:.2g}–{hi:.2g} | {v['requests']} | "
                   f"**{v['share']:.2f}** (bound {v['bound']:.2f}) | {v['max_in_window']} / {v['limit']} | "
                   f"{v['rejected']} | {v['fallbacks']} | {v['wall_s']:.1f} | {'met' if v['met'] else '**missed**'} |")
    out += ["", "Achieved = the achieved rate over the allowed rate: request *i* may arrive once request *i − limit* "
            "has left the window, so the ideal gap between their arrivals is one window; achieved = window / mean "
            "gap over all such pairs (no window alignment, no start-up burst credit). Busiest window = the most arrivals in any window, whatever its "
            "start (`FakeGemini.max_requests_in_window`); never over means ≤ the limit and no 429. Bound: our limiter "
            "counts a request from when it is sent until one window after its answer arrives (so the server's count "
            "can never exceed ours), so each of the limit's places is busy for a window plus a latency: at most "
            "window / (window + mean latency) of the limit can be used. That is 0.97 at real scale; the "
            "\"window shrunk, latency not\" variant shows how it falls when the latency is a large part of the window."]
    return out


# ------------------------------------------------------------------------------ the child


def _pick(job: dict, wanted: int) -> tuple[Path, list[tuple[str, int | None, dt.date]]]:
    """The first `wanted` partition-days (in partition, day order) of 3-60 messages, and a JSONL
    of just their messages."""
    from ..expected import local_day_of, partition_of

    tzs = {int(g): tz for g, tz in job["timezones"].items()}
    zones: dict = {}
    counts: collections.Counter = collections.Counter()
    guild: dict[str, int | None] = {}
    corpus = Path(job["corpus"])
    for line in corpus.open(encoding="utf-8"):
        row = json.loads(line)
        p = partition_of(row)
        counts[(p, local_day_of(row, tzs, zones))] += 1
        guild[p] = int(row["guild_id"]) if row["guild_id"] else None
    chosen = sorted(k for k, n in counts.items() if 3 <= n <= 60)[:wanted]
    keep = set(chosen)
    out = Path(job["work"]) / "quota.jsonl"
    with out.open("w", encoding="utf-8") as fh:
        for line in corpus.open(encoding="utf-8"):
            row = json.loads(line)
            if (partition_of(row), local_day_of(row, tzs, zones)) in keep:
                fh.write(line)
    return out, [(p, guild[p], d) for p, d in chosen]


def measure(job: dict) -> dict:
    from pipeline.config import Timezones, load_settings
    from pipeline.ingest import import_files
    from pipeline.store import Store

    settings = load_settings()
    settings.timezones = Timezones(default="UTC", guilds={int(g): tz for g, tz in job["timezones"].items()})
    concurrency = settings.gemini.concurrency
    wanted = max(v["limit"] * (v["windows"] + 1) + concurrency for v in job["variants"])
    path, items = _pick(job, wanted)
    out = []
    for variant in job["variants"]:
        db = Path(job["work"]) / "quota.db"
        for p in db.parent.glob("quota.db*"):
            p.unlink()
        store = Store.open(f"sqlite:///{db}", check_schema=False)
        store.upgrade()
        import_files(store, [path], settings, fmt="jsonl")
        n = variant["limit"] * (variant["windows"] + 1) + concurrency
        out.append(_variant(store, settings.model_copy(deep=True), items[:n], variant, job["seed"]))
        store.close()
        print(f"[quota] {variant['name']}: {out[-1]['share']:.2f} of the limit", file=sys.stderr, flush=True)
    for p in db.parent.glob("quota.db*"):
        p.unlink()
    return {"variants": out}


def _variant(store, settings, items, variant: dict, seed: int) -> dict:
    from pipeline.clock import fixed_clock
    from pipeline.config import ModelLimits
    from pipeline.llm.gemini import GeminiClient
    from pipeline.stages.context import RunContext
    from pipeline.stages.daily import run_daily
    from pipeline.summarize.llm import LLMSummarizer
    from tests.fakes.gemini_server import FakeGemini, delay
    from tests.fakes.responders import canned_answer

    window, limit = variant["window_s"], variant["limit"]
    lo, hi = variant["latency"]
    rng = random.Random(f"{seed}:latency")
    latencies = [rng.uniform(lo, hi) for _ in range(4096)]
    server = FakeGemini(lambda req: delay(latencies[req.index % len(latencies)], canned_answer(req)),
                        rpm_limit=limit, rate_window=window)
    with server:
        g = settings.gemini
        settings.summarizer = "gemini"
        g.base_url, g.rate_window_s = server.url, window
        g.limits = {MODEL: ModelLimits(rpm=limit)}
        summarizer = LLMSummarizer(settings, GeminiClient("bench-key", base_url=server.url, timeout_s=g.timeout_s))
        ctx = RunContext(store=store, summarizer=summarizer, settings=settings,
                         clock=fixed_clock(dt.datetime(2026, 11, 8, 12, tzinfo=dt.timezone.utc)))

        async def one(partition, guild, day):
            async with ctx.slot():  # as pipeline.runner.bring_up_to_date does
                await run_daily(ctx, partition, guild, day)

        async def main():
            try:
                await asyncio.gather(*(one(*item) for item in items))
            finally:
                await summarizer.aclose()

        t0 = time.perf_counter()
        asyncio.run(main())
        wall = time.perf_counter() - t0
        calls = server.calls()
        max_in_window = server.max_requests_in_window(window)
    arrivals = sorted(r.time for r in calls if not (r.outcome or "").startswith("rate_limited"))
    rejected = len(calls) - len(arrivals)
    # Request i may arrive once request i-limit has left the window: the ideal gap between them
    # is one window. Achieved share = window / mean gap (steady state, no window alignment).
    gaps = [b - a for a, b in zip(arrivals, arrivals[limit:])]
    share = window / (sum(gaps) / len(gaps)) if gaps else 0.0
    return {"name": variant["name"], "window_s": window, "limit": limit, "latency": [lo, hi],
            "concurrency": settings.gemini.concurrency, "requests": len(calls), "rejected": rejected,
            "max_in_window": max_in_window, "share": round(share, 3),
            "bound": round(window / (window + (lo + hi) / 2), 3), "fallbacks": ctx.stats.fallbacks,
            "wall_s": round(wall, 1), "met": share >= TARGET and max_in_window <= limit and rejected == 0}

