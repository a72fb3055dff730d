"""3. Pipeline overhead: a cold nightly replay with the instant summarizer — the pipeline's own
time and memory, split by stage (see bench/nightly.py for how)."""

from __future__ import annotations

from .. import cpu
from ..env import Env
from ..nightly import SAMPLE_S
from . import nightly_runs
from .nightly_runs import PEAK_TARGET_MB, WALL_TARGET_S

TITLE = "Pipeline overhead"


def run(env: Env) -> dict:
    runs = nightly_runs.results(env)
    pg_note = nightly_runs.pg_note(env)
    res = {"messages": env.meta["counts"]["messages"], "days": len(env.days), "databases": {}}
    for db, r in runs.items():
        cold = r["cold"]
        res["databases"][db] = {
            "wall_s": cold["wall_s"], "peak_rss_mb": cold["peak_rss_mb"], "rss_before_mb": cold["rss_before_mb"],
            "peak_is_run_only": cold["peak_is_run_only"], "phases": cold["phases"], "calls": cold["summarizer_calls"],
            "us_per_call": round(1e6 * cold["wall_s"] / max(cold["summarizer_calls"], 1)),
            "unchanged_wall_s": r["unchanged"]["wall_s"], "steady_wall_s": r["steady"]["wall_s"],
            "steady_phases": r["steady"]["phases"], "steady_peak_rss_mb": r["steady"]["peak_rss_mb"],
            "met": _met(cold), "cpu": cold.get("cpu"),
        }
        if "cold_cheap" in r:
            cheap = r["cold_cheap"]
            res["databases"][db]["cheap"] = {"wall_s": cheap["wall_s"], "peak_rss_mb": cheap["peak_rss_mb"],
                                             "phases": cheap["phases"], "cpu": cheap.get("cpu")}
        if "cold_spread" in r:
            spread = r["cold_spread"]
            # the memory of all its processes together (pages a fork shares counted once, sampled),
            # else the run's peak and the largest other's added (shared pages twice: a bound)
            together = spread.get("tree_peak_pss_mb")
            res["databases"][db]["spread"] = {
                "wall_s": spread["wall_s"], "processes": spread["processes"], "phases": spread["phases"],
                "peak_rss_mb": together if together is not None
                else round(spread["peak_rss_mb"] + spread.get("spread_peak_rss_mb", 0.0), 1),
                "peak_is_pss": together is not None, "run_peak_rss_mb": spread["peak_rss_mb"],
                "other_peak_rss_mb": spread.get("spread_peak_rss_mb"), "cpu": spread.get("cpu")}
        if r.get("profile"):
            res.setdefault("profiles", {})[f"{db} cold replay of {nightly_runs.profile_label(env)}"] = r["profile"]
    res["pg_note"] = pg_note
    return res


def _met(d: dict) -> bool:
    return d["wall_s"] < WALL_TARGET_S and d["peak_rss_mb"] < PEAK_TARGET_MB


def targets(res: dict) -> list[tuple[str, str, bool | None]]:
    out = []
    for db, d in res["databases"].items():
        target = f"< {WALL_TARGET_S:.0f} s and < {PEAK_TARGET_MB / 1024:.0f} GB"
        out.append((f"{db}: {target}", f"{d['wall_s']:.1f} s, {d['peak_rss_mb']:,.0f} MB", d["met"]))
        if "cheap" in d:
            c = d["cheap"]
            out.append((f"{db}, writes batched: {target}", f"{c['wall_s']:.1f} s, {c['peak_rss_mb']:,.0f} MB", _met(c)))
        if "spread" in d:
            c = d["spread"]
            out.append((f"{db}, writes batched, {c['processes']} processes: {target}",
                        f"{c['wall_s']:.1f} s, {c['peak_rss_mb']:,.0f} MB", _met(c)))
    return out


def _phases(p: dict) -> str:
    return " · ".join(f"{k} {v:.2f}" for k, v in p.items()) or "n/a"


def render(res: dict) -> list[str]:
    out = [f"Cold nightly run = `replay` of all {res['days']} days of the {res['messages']:,}-message corpus "
           f"(after an untimed import) with the instant summarizer, in a child process. Targets: < {WALL_TARGET_S:.0f} s "
           f"and < {PEAK_TARGET_MB / 1024:.0f} GB.", "",
           "| database | wall (s) | peak RSS (MB) | stages (s): plan · daily · historical · merge · finish | "
           "µs per summarizer call | CPU-s: run + rest of the machine | unchanged replay (s) | steady nightly (s) | |",
           "|---|---|---|---|---|---|---|---|---|"]
    for db, d in res["databases"].items():
        out.append(f"| {db} | {d['wall_s']:.2f} | {d['peak_rss_mb']:,.0f} | {_phases(d['phases'])} | "
                   f"{d['us_per_call']:,} | {_cpu(d, db)} | {d['unchanged_wall_s']:.2f} | {d['steady_wall_s']:.2f} | "
                   f"{'met' if d['met'] else '**missed**'} |")
        if "cheap" in d:
            c = d["cheap"]
            out.append(f"| {db}, writes batched | {c['wall_s']:.2f} | {c['peak_rss_mb']:,.0f} | {_phases(c['phases'])} | "
                       f"{round(1e6 * c['wall_s'] / max(d['calls'], 1)):,} | {_cpu(c, db)} | | | |")
        if "spread" in d:
            c = d["spread"]
            out.append(f"| {db}, writes batched, {c['processes']} processes | {c['wall_s']:.2f} | "
                       f"{c['peak_rss_mb']:,.0f} | {_phases(c['phases'])} | "
                       f"{round(1e6 * c['wall_s'] / max(d['calls'], 1)):,} | {_cpu(c, db)} | | | |")
    any_db = next(iter(res["databases"].values()), None)
    if any_db:
        out += ["", f"Peak RSS is the process's high-water mark during the run (reset after the import"
                f"{'' if any_db['peak_is_run_only'] else ' — not available here: whole-process maximum'}); "
                f"it includes the interpreter and libraries (≈{any_db['rss_before_mb']:,.0f} MB resident before the run). "
                "Stage split: the runner's stage entry points wrapped at run time (each stage from its first call "
                "to the next stage's first call). The instant summarizer stands in for a model, so the pipeline "
                "writes each finished item at once, as it does after a model call (a group commit: the items "
                "finished in the same turns of the event loop, at most gemini.concurrency, share one "
                "transaction; pipeline/stages/writes.py); the \"writes batched\" row "
                "declares it `cheap`, as the extractive summarizer is, which lets the pipeline batch writes "
                "(on both databases: runs with a cheap summarizer take turns, so no claim needs an item written "
                "at once). On PostgreSQL the per-item run also claims each item (an advisory lock) and reads it "
                "again under the claim, as runs that share a model's work do. The \"N processes\" row is the "
                "batched run with its stages shared out to one process per CPU (`processes`; "
                "pipeline/stages/processes.py); its memory is the highest sum of the proportional set sizes "
                f"(PSS) of the run's processes, sampled every {SAMPLE_S} s (a page the fork shares counts once; "
                "where /proc has no PSS: the run's peak RSS plus the largest other's, shared pages twice)."]
    bound = _bound(res)
    if bound:
        out += ["", bound]
    if res.get("pg_note"):
        out += ["", res["pg_note"]]
    return out


def _cpu(d: dict, db: str) -> str:
    used = d.get("cpu")
    if not used:
        return "n/a"  # a result from before the bench measured CPU
    return cpu.split(used, ("run", "", "server" if db.startswith("postgresql") else "rest"))


def _bound(res: dict) -> str:
    """What bounds the runs that share their stages out: CPU-seconds, when every CPU was busy."""
    lines = []
    for db, d in res["databases"].items():
        used = d.get("spread", {}).get("cpu")
        if not used or _met(d["spread"]):
            continue
        n = used["cpus"]
        if cpu.total_s(used) < 0.9 * n * used["wall_s"]:  # CPUs idle a tenth of the time or more: not CPU-bound
            lines.append(f"{db}: {cpu.total_s(used):,.0f} CPU-s in {used['wall_s']:,.0f} s, only {cpu.busy(used)} "
                         f"busy: the run also waited")
            continue
        lines.append(f"{db}: {cpu.total_s(used):,.0f} CPU-s in {used['wall_s']:,.0f} s ({cpu.busy(used)} busy), "
                     f"so at least {cpu.total_s(used) / n:,.0f} s on {n} CPUs however the work is shared; "
                     f"{WALL_TARGET_S:.0f} s allows at most {WALL_TARGET_S * n:,.0f} CPU-s "
                     f"({WALL_TARGET_S * n / cpu.total_s(used):.0%} of what this run used)")
    if not lines:
        return ""
    return ("What bounds the misses (CPU where every CPU was busy). CPU-s = the run's processes (user + system time, its stage "
            "processes included) + the rest of the machine over the same time (/proc/stat: the database server "
            "on PostgreSQL; bench/cpu.py). " + "; ".join(lines) + ".")
