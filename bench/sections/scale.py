"""9. Scaling out: the corpus's cold night on PostgreSQL with the LLM summarizer, handed to 1, 2
and 4 `mempipe worker` processes (`[workers] enabled = true`; the quota shared in the database),
against the fake Gemini server with a seeded, time-scaled latency and a requests-per-window limit;
and the same night in Batch mode (`gemini.batch = true`, in one process: rounds of `mempipe replay`).

What is fixed before measuring (env.PLANS["<size>"]["scale"]):
- latency: uniform in [lo, hi] seconds, seeded by arrival order (quota.py's), the same sequence for
  every worker count; real 1-3 s divided by the plan's time scale;
- the window `gemini.rate_window_s` = the server's `rate_window`: real 60 s divided by the same scale;
- the limit: `limit_factor` x one worker's capacity, where one worker's capacity is
  `gemini.concurrency` requests in flight over the mean latency (C x window / mean latency per
  window). At 1.5 one worker can fill at most 2/3 of it and two can fill it: the point is that one
  process cannot spend the quota. It is set both in the server (429 beyond it) and in
  `gemini.limits` (tpm and rpd out of reach: the request count is what is measured).

Each run: a fresh database copied from one template (schema, job queue, the imported corpus),
N worker processes (`python -m pipeline.cli worker`, workers.concurrency and gemini.concurrency at
their defaults), started and ready before the clock starts; the run is `mempipe replay` of the
corpus's days in a child process (the coordinator: it plans, defers, waits); the workers are
stopped with SIGTERM after it.

The minimum: the model requests of a single in-process run (`mempipe replay` without workers) of
the same night against the same server without latency or limit, made once and compared with
every worker count (bench/expected.py computes the minimum for bench/instant.py's answer lengths,
not the canned answers' lengths, so it is not used here; the calls section checks that a single
process's night makes exactly that minimum). Its rows are compared too: every worker count must
write the same daily, historical and context texts.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from .. import expected
from ..env import ROOT, Env, log, pg_database

TITLE = "Scaling out"
from .scale_report import TARGET, render, targets

__all__ = ["TITLE", "run", "render", "targets"]  # the section's interface (bench/sections/__init__.py)
MODEL = "gemini-2.5-flash"
OUT_OF_REACH = 1_000_000_000  # tpm and rpd: never the bound here


def _op(prompt: str) -> str:
    """The stage a request belongs to, read from its prompt as tests/fakes/responders.py does."""
    if "<messages>" in prompt or "<partials>" in prompt:
        return "daily"  # a day in one request, a fold, or a map-reduced day's parts and reduce
    if "<person " in prompt:
        return "historical"
    if "<past_week>" in prompt:
        return "merge"
    return "other"


def _limit(plan: dict, concurrency: int) -> int:
    lo, hi = plan["latency"]
    return round(plan["limit_factor"] * concurrency * plan["window_s"] / ((lo + hi) / 2))


# ------------------------------------------------------------------------------ files and processes


def _corpus(env: Env, plan: dict) -> Path:
    cut = plan.get("slice")
    if not cut:
        return env.corpus_path
    out = env.work / f"corpus-scale-slice{cut[0]}-{cut[1]}.jsonl"
    if not out.exists():
        with env.corpus_path.open(encoding="utf-8") as src, out.open("w", encoding="utf-8") as dst:
            for line in src:
                if expected.in_slice(json.loads(line), *cut):
                    dst.write(line)
    return out


def _config(path: Path, env: Env, url: str, *, window: float, limit: int, workers: bool, batch: bool = False) -> Path:
    guilds = "".join(f'"{g}" = "{tz}"\n' for g, tz in sorted(env.timezones.items()))
    path.write_text(
        'summarizer = "gemini"\n'
        f'[gemini]\nbase_url = "{url}"\nrate_window_s = {window!r}\n'
        + ("batch = true\n" if batch else "")
        + f'[gemini.limits."{MODEL}"]\nrpm = {limit}\ntpm = {OUT_OF_REACH}\nrpd = {OUT_OF_REACH}\n'
        '[timezones]\ndefault = "UTC"\n[timezones.guilds]\n' + guilds
        + f"[workers]\nenabled = {'true' if workers else 'false'}\n", encoding="utf-8")
    return path


def _child_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMPIPE_")}
    return env | {"GEMINI_API_KEY": "bench-key", "PYTHONPATH": str(ROOT)}


def _mempipe(url: str, config: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "pipeline.cli", "--db", url, "--config", str(config), *args]


@contextlib.contextmanager
def _workers(n: int, url: str, config: Path, logs: Path):
    """n worker processes, each ready (listening on the queue) before this yields; SIGTERM after."""
    procs, files = [], []
    try:
        for i in range(n):
            fh = (logs / f"worker{i}.log").open("w", encoding="utf-8")
            files.append(fh)
            procs.append(subprocess.Popen(_mempipe(url, config, "-v", "worker"), cwd=ROOT, env=_child_env(),
                                          stdout=fh, stderr=subprocess.STDOUT, text=True))
        deadline = time.monotonic() + 120
        for i, p in enumerate(procs):
            while "jobs of queue" not in (logs / f"worker{i}.log").read_text(encoding="utf-8"):
                if p.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"worker {i} did not start: {(logs / f'worker{i}.log').read_text()[-2000:]}")
                time.sleep(0.05)
        yield procs
    finally:
        codes = []
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                codes.append(p.wait(timeout=60))
            except subprocess.TimeoutExpired:
                p.kill()
                codes.append(p.wait())
        for fh in files:
            fh.close()
        if any(codes):
            log(f"scale: worker exit codes {codes} (logs in {logs})")


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a live process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _machine_jiffies() -> tuple[int, int]:
    """(busy, total) CPU time of the whole machine so far (/proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values)


def _replay(env: Env, url: str, config: Path, workers: list | None = None) -> dict:
    """`mempipe replay` of the corpus's days, timed; with the CPU its workers, the command and the
    machine as a whole used meanwhile (what bounds a night that does not fill the quota)."""
    import resource

    days = env.days
    cmd = _mempipe(url, config, "replay", "--from", days[0].isoformat(), "--to", days[-1].isoformat(), "--json")
    w0 = [_cpu_s(p.pid) for p in workers or []]
    m0, c0 = _machine_jiffies(), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, env=_child_env(), capture_output=True, text=True, timeout=6 * 3600)
    wall = time.monotonic() - t0
    m1, c1 = _machine_jiffies(), resource.getrusage(resource.RUSAGE_CHILDREN)
    w1 = [_cpu_s(p.pid) for p in workers or []]
    if done.returncode not in (0, 3):  # 3: finished degraded (some fallbacks), still a measurement
        raise RuntimeError(f"mempipe replay failed (exit {done.returncode}): {done.stderr[-3000:]}")
    cpu = {"workers_s": [round(b - a, 1) for a, b in zip(w0, w1)],
           "command_s": round(c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime, 1),
           "machine_busy": round((m1[0] - m0[0]) / max(m1[1] - m0[1], 1), 2), "cpus": os.cpu_count()}
    return {"exit": done.returncode, "command_s": round(wall, 2), "cpu": cpu} | _run_row(url)


# ------------------------------------------------------------------------------ what a night wrote


def _engine(url: str):
    import sqlalchemy as sa

    return sa.create_engine(url, poolclass=sa.pool.NullPool)


def _run_row(url: str) -> dict:
    import sqlalchemy as sa

    engine = _engine(url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text(
            "SELECT status, summarizer_calls, llm_calls, retries, fallbacks, errors, prompt_tokens, output_tokens, "
            "estimated_cost, partition_days, historical_items, context_items, "
            "EXTRACT(EPOCH FROM finished_at - started_at) AS wall_s FROM pipeline_runs ORDER BY id")).mappings().all()
    engine.dispose()
    runs = [dict(r) for r in rows]
    return {"runs": len(runs), "status": [r["status"] for r in runs],
            "wall_s": round(sum(float(r["wall_s"] or 0) for r in runs), 2),
            "estimated_cost": sum(float(r["estimated_cost"]) for r in runs),
            **{k: sum(int(r[k]) for r in runs) for k in ("summarizer_calls", "llm_calls", "retries", "fallbacks", "errors",
                                                          "prompt_tokens", "output_tokens", "partition_days",
                                                          "historical_items", "context_items")}}


_TABLES = {"daily": ("daily_summaries", "partition, day, user_id", "summary"),
           "historical": ("historical_summaries", "partition, day, user_id", "summary"),
           "context": ("memory_context", "scope, user_id", "context, recent")}


def _digests(url: str) -> dict:
    """Rows and an md5 of each derived table's texts (the columns tests/acceptance/test_workers.py compares)."""
    import sqlalchemy as sa

    engine = _engine(url)
    out = {}
    with engine.connect() as conn:
        for name, (table, key, text) in _TABLES.items():
            n, digest = conn.execute(sa.text(
                f"SELECT COUNT(*), md5(COALESCE(string_agg(concat_ws('|', {key}, {text}), E'\\n' ORDER BY {key}), '')) "
                f"FROM {table}")).one()
            out[name] = {"rows": n, "md5": digest}
    engine.dispose()
    return out


def _requests(server, window: float, limit: int) -> dict:
    """What the server saw: requests by stage, 429s, the busiest window, the achieved share of the
    limit over the daily stage (the busy period) and over the whole night (quota.py's definition)."""
    calls = server.calls()
    admitted = [r for r in calls if not (r.outcome or "").startswith("rate_limited")]
    by_op: dict[str, int] = {}
    for r in admitted:
        by_op[_op(r.prompt_text)] = by_op.get(_op(r.prompt_text), 0) + 1

    def share(times: list[float]) -> float | None:
        # request i may arrive once request i - limit has left the window: ideal gap = one window
        gaps = [b - a for a, b in zip(times, times[limit:])]
        return round(window / (sum(gaps) / len(gaps)), 3) if gaps else None

    everything = sorted(r.time for r in admitted)
    daily = sorted(r.time for r in admitted if _op(r.prompt_text) == "daily")
    return {"requests": len(calls), "admitted": len(admitted), "rejected": len(calls) - len(admitted),
            "by_operation": by_op, "max_in_window": server.max_requests_in_window(window),
            "share": share(daily), "share_night": share(everything),
            "busy_s": round(daily[-1] - daily[0], 2) if daily else 0.0,
            "night_s": round(everything[-1] - everything[0], 2) if everything else 0.0}


# ------------------------------------------------------------------------------ the section


ROUNDS = 12  # a batch night's rounds: daily chunks, reduce, historical, merge, re-asks; with room


def _batch_night(env: Env, name: str, work: Path, window: float, ref: dict) -> dict:
    """The same cold night with `gemini.batch = true`, in one process (batch mode is in-process
    only): each round is a `mempipe replay` that collects the finished jobs, goes as far as their
    answers take it and submits the rest; between rounds the fake server finishes every job (so
    the Batch API's hours of turnaround are not in the wall time: rounds are what is counted)."""
    from tests.fakes.gemini_server import FakeGemini
    from tests.fakes.responders import canned_answer

    rounds = []
    with FakeGemini(canned_answer) as server, pg_database("mempipe_bench_scale", template=name) as url:
        config = _config(work / "batch.toml", env, server.url, window=window, limit=OUT_OF_REACH, workers=False,
                         batch=True)
        inline = 0
        for i in range(ROUNDS):
            log(f"scale: batch night, round {i + 1}")
            before = _deferred(url)
            night = _replay(env, url, config)
            rounds.append({"command_s": night["command_s"], "deferred": _deferred(url)[len(before):]})
            if not rounds[-1]["deferred"] or not rounds[-1]["deferred"][-1]:
                break
            inline += server.finish_batches()
        total = _run_row(url)
        done = not rounds[-1]["deferred"] or not rounds[-1]["deferred"][-1]
        out = {"measured": True, "done": done, "rounds": len(rounds), "per_round": rounds,
               "jobs": len(server.calls("batchGenerateContent")), "inline": len(server.calls("inline")),
               "interactive": len(server.calls("generateContent")), "finished_inline": inline,
               "estimated_cost": total["estimated_cost"], "prompt_tokens": total["prompt_tokens"],
               "output_tokens": total["output_tokens"], "command_s": round(sum(r["command_s"] for r in rounds), 2),
               "rows": _digests(url)}
    out["rows_equal"] = out["rows"] == ref["rows"]
    out["requests"] = out["inline"] + out["interactive"]
    out["interactive_cost"] = ref["estimated_cost"]
    out["cost_ratio"] = round(out["estimated_cost"] / ref["estimated_cost"], 3) if ref["estimated_cost"] else None
    return out


def _deferred(url: str) -> list[int]:
    """Each run's deferred items, in order."""
    import sqlalchemy as sa

    engine = _engine(url)
    with engine.connect() as conn:
        got = [int(r[0]) for r in conn.execute(sa.text("SELECT deferred FROM pipeline_runs ORDER BY id"))]
    engine.dispose()
    return got


def run(env: Env) -> dict:
    from pipeline.ingest import import_files
    from pipeline.store import Store
    from pipeline.workers.queue import ensure_schema
    from tests.fakes.gemini_server import FakeGemini, delay
    from tests.fakes.responders import canned_answer

    if env.pg_reason:
        return {"skipped": f"PostgreSQL not reachable ({env.pg_reason})"}
    plan = env.plan["scale"]
    settings = env.settings()
    concurrency = settings.gemini.concurrency
    window, (lo, hi) = plan["window_s"], plan["latency"]
    limit = _limit(plan, concurrency)
    mean = (lo + hi) / 2
    res: dict = {"window_s": window, "latency": [lo, hi], "limit": limit, "limit_factor": plan["limit_factor"],
                 "time_scale": plan["time_scale"], "concurrency": concurrency,
                 "worker_jobs": settings.workers.concurrency,
                 "one_worker_per_window": round(concurrency * window / mean, 1),
                 "bound": round(window / (window + mean), 3), "slice": plan.get("slice"), "nights": []}
    corpus = _corpus(env, plan)
    work = env.work / "scale"
    work.mkdir(exist_ok=True)
    rng = random.Random(f"{env.seed}:latency")
    latencies = [rng.uniform(lo, hi) for _ in range(4096)]

    with pg_database("mempipe_bench_scale") as template:
        log(f"scale: template database (schema, job queue, corpus {corpus.name})")
        s = env.settings()
        s.database_url = template
        store = Store.open(template, check_schema=False)
        store.upgrade()
        ensure_schema(s)
        t0 = time.monotonic()
        import_files(store, [corpus], s, fmt="jsonl")
        res["import_s"] = round(time.monotonic() - t0, 1)
        store.close()
        import sqlalchemy as sa

        name = sa.engine.make_url(template).database

        # the minimum: one in-process run, no workers, no latency, no limit reached
        with FakeGemini(canned_answer) as server, pg_database("mempipe_bench_scale", template=name) as url:
            config = _config(work / "reference.toml", env, server.url, window=window, limit=OUT_OF_REACH, workers=False)
            log("scale: the reference night (one process, in-process, no latency)")
            ref = _replay(env, url, config)
            ref |= {"server": _requests(server, window, OUT_OF_REACH), "rows": _digests(url)}
        res["reference"] = ref
        res["minimum"] = ref["server"]["admitted"]
        log(f"scale: minimum {res['minimum']} requests ({ref['server']['by_operation']}), {ref['wall_s']} s")

        responder = lambda req: delay(latencies[req.index % len(latencies)], canned_answer(req))  # noqa: E731
        with FakeGemini(responder, rpm_limit=limit, rate_window=window) as server:
            for n in plan["workers"]:
                with pg_database("mempipe_bench_scale", template=name) as url:
                    config = _config(work / "workers.toml", env, server.url, window=window, limit=limit, workers=True)
                    logs = work / f"logs-{n}"
                    logs.mkdir(exist_ok=True)
                    log(f"scale: {n} worker(s): starting")
                    with _workers(n, url, config, logs) as procs:
                        server.reset()
                        log(f"scale: {n} worker(s): the night")
                        night = _replay(env, url, config, procs)
                    night |= {"workers": n, "server": _requests(server, window, limit), "rows": _digests(url)}
                night["rows_equal"] = night["rows"] == ref["rows"]
                night["capacity"] = round(n * concurrency * window / mean / limit, 2)
                sv = night["server"]
                night["met"] = (sv["max_in_window"] <= limit and sv["rejected"] == 0 and sv["admitted"] == res["minimum"]
                                and night["rows_equal"] and (night["capacity"] < 1 or sv["share"] is None or sv["share"] >= TARGET))
                res["nights"].append(night)
                log(f"scale: {n} worker(s): {night['wall_s']} s, share {sv['share']}, busiest {sv['max_in_window']}/"
                    f"{limit}, {sv['rejected']} x 429, {sv['admitted']} requests (minimum {res['minimum']})")
        log("scale: the batch-mode night")
        res["batch"] = _batch_night(env, name, work, window, ref)
        b = res["batch"]
        log(f"scale: batch night: {b['rounds']} rounds, {b['jobs']} jobs, {b['requests']} requests "
            f"(minimum {res['minimum']}), cost {b['estimated_cost']:.4f} vs {b['interactive_cost']:.4f} interactive")
    return res

