"""Nightly runs with the instant summarizer, each in a child process of its own (so that its peak
memory is the run's, not the harness's): `python -m bench.nightly '<json job>'`.

Jobs:
- "replay": import the corpus, then replay its days as of the last (a cold nightly run: every
  partition-day, history and context computed), then the same replay again (unchanged data).
- "steady": import days 1..N-1, replay them as of day N-1; import day N; run as of day N (the
  nightly run of a live installation: one new day).

Stage split: the runner runs its stages one after another (all daily partition-days, then the
historical stage partition by partition, then all merges). The job wraps the runner's stage
entry points (`pipeline.runner.run_daily`, `run_historical`, `run_merges`, replaced in the
runner's namespace for the run, no file edited) and reports each stage's wall time from its first
call to the next stage's first call (so a stage includes the flush of its buffered writes);
"plan" is what comes before the first daily item (listing and reading partitions), "finish"
what follows the merges (the last writes, recording the run).

Peak memory: the kernel's high-water mark of resident memory (VmHWM), reset after the import
(/proc/self/clear_refs), read after the run; ru_maxrss where that is unavailable.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import datetime as dt
import json
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

from . import cpu

SAMPLE_S = 0.25  # how often run_child samples the memory of a job's processes

UTC = dt.timezone.utc


def _hwm_kb() -> int:
    try:
        return int(re.search(r"VmHWM:\s+(\d+)", Path("/proc/self/status").read_text()).group(1))
    except (OSError, AttributeError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _rss_kb() -> int | None:
    try:
        return int(re.search(r"VmRSS:\s+(\d+)", Path("/proc/self/status").read_text()).group(1))
    except (OSError, AttributeError):
        return None


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


class Phases:
    def __init__(self) -> None:
        self.spans: dict[str, list[float]] = {}

    def _wrap(self, name, fn):
        async def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                span = self.spans.setdefault(name, [t0, t0, 0])
                span[0], span[1], span[2] = min(span[0], t0), max(span[1], time.perf_counter()), span[2] + 1
        return timed

    @contextlib.contextmanager
    def installed(self):
        import pipeline.runner as runner

        stage_of = {"run_dailies": "daily", "spread_dailies": "daily", "run_historicals": "historical",
                    "run_merges": "merge", "spread_merges": "merge"}  # the runner's calls of each stage
        names = [n for n in stage_of if hasattr(runner, n)]
        saved = {n: getattr(runner, n) for n in names}
        for n in names:
            setattr(runner, n, self._wrap(stage_of[n], saved[n]))
        try:
            yield self
        finally:
            for n, fn in saved.items():
                setattr(runner, n, fn)

    def split(self, start: float, end: float) -> dict[str, float]:
        """Each stage from its first call to the next stage's first call (so the parts add up
        to the wall time); "finish" after the merges' end."""
        order = [n for n in ("daily", "historical", "merge") if n in self.spans]
        if not order:
            return {}
        marks = [start] + [self.spans[n][0] for n in order] + [self.spans[order[-1]][1], end]
        names = ["plan"] + order + ["finish"]
        return {n: round(b - a, 3) for n, a, b in zip(names, marks, marks[1:])}


def _settings(job):
    from pipeline.config import Timezones, load_settings

    s = load_settings()
    s.timezones = Timezones(default="UTC", guilds={int(g): tz for g, tz in job["timezones"].items()})
    s.processes = job.get("processes", 1)  # a cheap run's stages in several processes (pipeline/stages/processes.py)
    return s


def _open(url: str, settings):
    from pipeline.store import Store

    store = Store.open(url, check_schema=False, pool_size=settings.pool_size, max_overflow=settings.pool_max_overflow)
    store.upgrade()
    return store


async def _execute(store, settings, kind, first, last, clock_at, summarizer=None, cheap=False):
    from pipeline.clock import fixed_clock
    from pipeline.runner import execute
    from pipeline.stages.context import RunContext

    from .instant import InstantSummarizer

    summarizer = summarizer or InstantSummarizer(cheap=cheap)
    ctx = RunContext(store=store, summarizer=summarizer, settings=settings, clock=fixed_clock(clock_at))
    await execute(ctx, kind, first, last)
    run = store.runs(1)[0]
    return {"summarizer_calls": run["summarizer_calls"], "status": run["status"], "by_operation": summarizer.calls,
            "partition_days": run["partition_days"], "cache_hits": run["cache_hits"],
            "contexts_written": ctx.stats.contexts_written,
            "spread_peak_rss_mb": round(ctx.spread_peak_kb / 1024, 1),  # the stages' other processes, if any
            # the units a run's statements are counted per: partition-days, historical rows, contexts
            "items": ctx.stats.partition_days + ctx.stats.historical_computed + ctx.stats.historical_reused
            + ctx.stats.historical_rendered + ctx.stats.contexts_written}


def _timed(store, settings, kind, first, last, clock_at, cheap=False) -> dict:
    phases = Phases()
    peak_reset = _reset_peak()
    rss0 = _rss_kb()
    with phases.installed(), cpu.measured() as used:
        w0, t0 = time.time(), time.perf_counter()
        out = asyncio.run(_execute(store, settings, kind, first, last, clock_at, cheap=cheap))
        t1, w1 = time.perf_counter(), time.time()
    return out | {"wall_s": round(t1 - t0, 3), "window": [w0, w1], "phases": phases.split(t0, t1), "peak_rss_mb": round(_hwm_kb() / 1024, 1),
                  "rss_before_mb": round(rss0 / 1024, 1) if rss0 else None, "peak_is_run_only": peak_reset,
                  "cpu": used}


def job_replay(job: dict) -> dict:
    from pipeline.ingest import import_files

    settings = _settings(job)
    first, last = dt.date.fromisoformat(job["first"]), dt.date.fromisoformat(job["last"])
    clock_at = dt.datetime.combine(last + dt.timedelta(days=1), dt.time(12), tzinfo=UTC)
    store = _open(job["url"], settings)
    t0 = time.perf_counter()
    import_files(store, [job["corpus"]], settings, fmt="jsonl")
    out = {"import_s": round(time.perf_counter() - t0, 3)}
    if job.get("profile"):
        from .profiling import profiled

        with profiled(store.engine) as prof:
            run = asyncio.run(_execute(store, settings, "replay", first, last, clock_at, cheap=job.get("cheap", False)))
        store.close()
        # items: partition-days, historical rows and contexts, the units the statements are per
        prof["items"] = run["items"]
        if "sql" in prof:
            prof["sql"]["round_trips_per_item"] = round(prof["sql"]["round_trips"] / max(prof["items"], 1), 2)
        return {"profile": prof}
    out["cold"] = _timed(store, settings, "replay", first, last, clock_at, cheap=job.get("cheap", False))
    print(f"[nightly {job['db']}] cold replay{' (cheap)' if job.get('cheap') else ''} {out['cold']['wall_s']} s",
          file=sys.stderr, flush=True)
    if job.get("cold_only"):
        store.close()
        return out
    t0 = time.perf_counter()
    out["unchanged"] = asyncio.run(_execute(store, settings, "replay", first, last, clock_at))
    out["unchanged"]["wall_s"] = round(time.perf_counter() - t0, 3)
    print(f"[nightly {job['db']}] unchanged replay {out['unchanged']['wall_s']} s", file=sys.stderr, flush=True)
    store.close()
    return out


def job_steady(job: dict) -> dict:
    from pipeline.ingest import import_files

    settings = _settings(job)
    first, last = dt.date.fromisoformat(job["first"]), dt.date.fromisoformat(job["last"])
    before = last - dt.timedelta(days=1)
    store = _open(job["url"], settings)
    import_files(store, [job["before"]], settings, fmt="jsonl")
    asyncio.run(_execute(store, settings, "replay", first, before,
                         dt.datetime.combine(last, dt.time(12), tzinfo=UTC)))
    import_files(store, [job["day"]], settings, fmt="jsonl")
    out = _timed(store, settings, "run", None, last, dt.datetime.combine(last + dt.timedelta(days=1), dt.time(12), tzinfo=UTC))
    print(f"[nightly {job['db']}] steady-state run {out['wall_s']} s", file=sys.stderr, flush=True)
    store.close()
    return out


def _tree_pss_kb(pid: int) -> int | None:
    """The proportional set size of a process and all its descendants (KiB): pages shared by
    several of them (a fork's) are divided among them, so the sum is the memory they hold
    together. None where /proc does not tell."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            total += int(re.search(r"^Pss:\s+(\d+)", Path(f"/proc/{p}/smaps_rollup").read_text(), re.M).group(1))
            for task in Path(f"/proc/{p}").joinpath("task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, AttributeError, ValueError):
            if p == pid:
                return None
    return total


def run_child(job: dict, cwd: Path) -> dict:
    """Run one job in a fresh interpreter; its last stdout line is the JSON answer. While it
    runs, the memory of its process tree is sampled (`_tree_pss_kb`, every SAMPLE_S): the
    highest sum inside the timed run's window is `tree_peak_pss_mb` of its answer's cold run."""
    proc = subprocess.Popen([sys.executable, "-m", "bench.nightly", json.dumps(job)], cwd=cwd,
                            stdout=subprocess.PIPE, text=True)
    samples: list[tuple[float, int]] = []
    reader = concurrent.futures.ThreadPoolExecutor(1)
    stdout = reader.submit(proc.stdout.read)  # read as it comes: a full pipe would stop the child
    while proc.poll() is None:
        if (kb := _tree_pss_kb(proc.pid)) is not None:
            samples.append((time.time(), kb))
        time.sleep(SAMPLE_S)
    text = stdout.result()
    reader.shutdown()
    if proc.returncode != 0:
        raise RuntimeError(f"nightly job {job['kind']} on {job['db']} failed (exit {proc.returncode})")
    out = json.loads(text.strip().splitlines()[-1])
    cold = out.get("cold")
    if cold and "window" in cold:
        t0, t1 = cold["window"]
        inside = [kb for t, kb in samples if t0 <= t <= t1]
        cold["tree_peak_pss_mb"] = round(max(inside) / 1024, 1) if inside else None
    return out


if __name__ == "__main__":
    spec = json.loads(sys.argv[1])
    result = {"replay": job_replay, "steady": job_steady}[spec["kind"]](spec)
    print(json.dumps(result, default=str))
