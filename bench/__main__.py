"""python -m bench [--size tiny|small|large] [--only SECTION ...] [--seed N] [--out bench/RESULTS.md] [--render]

Runs the sections, writes <out dir>/results/<size>.json (with --only, only those sections are
replaced) and rewrites <out> from every results/*.json there, then prints it. Progress goes to
stderr."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sqlite3
import subprocess
import sys
import time
import traceback
from pathlib import Path

from . import report
from .corpus import SIZES
from .env import ROOT, Env, clean_environment, log, pg_admin_conninfo
from .sections import SECTIONS


def revision() -> dict:
    """The commit measured, and whether the pipeline or its SQL differed from it."""
    def git(*args):
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return out.stdout.strip() if out.returncode == 0 else None

    dirty = git("status", "--porcelain", "--", "pipeline", "sql", "prompts", "config")
    return {"commit": git("rev-parse", "--short", "HEAD"), "pipeline_modified": bool(dirty) if dirty is not None else None}


def machine(env: Env) -> dict:
    pg = None
    if env.pg_reason is None:
        import psycopg

        with psycopg.connect(pg_admin_conninfo()) as conn:
            pg = "PostgreSQL " + conn.execute("SHOW server_version").fetchone()[0].split()[0]
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    if "python_loop_s" not in env.cache:
        env.cache["python_loop_s"] = python_loop_seconds()
    return {"cpus": os.cpu_count(), "cpu_model": cpu_model(), "memory_gb": round(mem),
            "python": platform.python_version(), "sqlite": sqlite3.sqlite_version, "postgresql": pg,
            "python_loop_s": env.cache["python_loop_s"]}


def python_loop_seconds(steps: int = 10_000_000, tries: int = 5) -> float:
    """Seconds for one CPU to run a fixed pure-Python loop (best of `tries`). Machines that report
    the same CPU name and count ran this loop in 0.13 s and in 1.66 s (2026-11), and the pipeline's
    absolute times with it: a report that compares times across runs says how fast each one was."""
    best = float("inf")
    for _ in range(tries):
        t0 = time.perf_counter()
        [0 for _i in range(steps)]
        best = min(best, time.perf_counter() - t0)
    return round(best, 3)


def cpu_model() -> str | None:
    """The CPU's name as the system gives it: two runs on machines with the same count of CPUs can
    differ by half in this work (the large run at 4be0530 against 0776f5c's), so RESULTS.md says which."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip() or None
    except OSError:
        pass
    return platform.processor() or None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[1])
    parser.add_argument("--size", choices=list(SIZES), default="small")
    parser.add_argument("--only", nargs="+", choices=list(SECTIONS), metavar="SECTION",
                        help=f"run only these sections ({', '.join(SECTIONS)})")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS.md",
                        help="the report; its results/ directory beside it holds <size>.json")
    parser.add_argument("--work", type=Path, default=None,
                        help="corpora and scratch databases (default bench/out, git-ignored)")
    parser.add_argument("--render", action="store_true",
                        help="only rewrite <out> from the results/*.json beside it (no measurement)")
    args = parser.parse_args(argv)
    if args.render:
        text = report.render(report.load(args.out.parent / "results"))
        args.out.write_text(text)
        print(text)
        return 0

    clean_environment()
    command = " ".join(["python -m bench", *argv]) if argv else "python -m bench"
    started = time.monotonic()
    env = Env(args.size, args.seed, command, args.work.resolve() if args.work else None)
    results_dir = args.out.parent / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{args.size}.json"
    previous = json.loads(path.read_text()) if path.exists() and args.only else {}
    sections = dict(previous.get("sections", {})) if previous.get("seed") == args.seed else {}

    chosen = args.only or list(SECTIONS)
    if len(chosen) > 1:
        for name in chosen:
            if hasattr(SECTIONS[name], "start"):
                SECTIONS[name].start(env)
    failed = []

    def save() -> None:
        data = {"size": args.size, "seed": args.seed, "command": command,
                "finished": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                "elapsed_s": round(time.monotonic() - started, 1), "machine": machine(env), "revision": revision(),
                "corpus": env.meta["counts"], "sections": {k: sections[k] for k in SECTIONS if k in sections}}
        path.write_text(json.dumps(data, indent=1, default=str) + "\n")

    for name in chosen:
        log(f"section {name}")
        t0 = time.monotonic()
        try:
            res = SECTIONS[name].run(env)
        except Exception as exc:  # record it and go on: one broken section must not lose the others
            traceback.print_exc()
            res = {"error": f"{exc.__class__.__name__}: {exc}"}
            failed.append(name)
        res["_rerun"] = env.rerun(name)
        res["_command"] = command
        res["_revision"] = revision()
        res["_seconds"] = round(time.monotonic() - t0, 1)
        res["_load_average"] = [round(x, 1) for x in os.getloadavg()]  # the machine is shared: say how busy
        sections[name] = res
        save()  # after every section: a long run keeps what it measured
        log(f"section {name} done in {res['_seconds']} s")

    text = report.render(report.load(results_dir))
    args.out.write_text(text)
    print(text)
    log(f"wrote {path} and {args.out}")
    if failed:
        log(f"sections that failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
