"""Where the time goes, summarised for RESULTS.md: cProfile (Python functions) plus the SQL
statements seen by the engine (driver time per statement, through SQLAlchemy's cursor events).
Used on a separate pass when a target is missed, so the timed figures carry no profiler cost."""

from __future__ import annotations

import contextlib
import cProfile
import pstats
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Iterator

import sqlalchemy as sa

ROOT = str(Path(__file__).resolve().parent.parent)
_PACKAGES = (("pipeline/", "pipeline"), ("bench/", "bench"), ("sqlalchemy/", "sqlalchemy"), ("psycopg", "psycopg"),
             ("pydantic", "pydantic"), ("google/genai", "google-genai"), ("httpx", "httpx"), ("httpcore", "httpx"),
             ("anyio", "anyio"), ("asyncio", "asyncio"), ("json", "json"), ("jinja2", "jinja2"),
             ("tenacity", "tenacity"), ("zoneinfo", "zoneinfo"))


def _area(filename: str, func: str) -> str:
    if filename == "~":  # a C function: name it by what it is
        if "sqlite3" in func:
            return "sqlite3 (C)"
        if "psycopg" in func or "pq" in func:
            return "psycopg (C)"
        return "builtins (C)"
    for needle, name in _PACKAGES:
        if needle in filename:
            return name
    return "other"


def _where(filename: str, line: int, func: str) -> str:
    short = filename.replace(ROOT + "/", "")
    short = re.sub(r".*/site-packages/", "", short)
    return f"{short}:{line}({func})" if filename != "~" else func


def summarize(profile: cProfile.Profile, *, top: int = 10) -> dict:
    stats = pstats.Stats(profile)
    total = sum(v[2] for v in stats.stats.values()) or 1e-9  # self times add up to the whole
    areas: dict[str, float] = defaultdict(float)
    rows = []
    for (filename, line, func), (_cc, ncalls, tottime, cumtime, _callers) in stats.stats.items():
        areas[_area(filename, func)] += tottime
        rows.append((filename, line, func, ncalls, tottime, cumtime))
    self_top = sorted(rows, key=lambda r: -r[4])[:top]
    ours = [r for r in rows if "/pipeline/" in r[0]]
    cum_top = sorted(ours, key=lambda r: -r[5])[:top]
    return {
        "total_s": round(total, 3),
        "self_time_by_area": {k: round(v / total, 3) for k, v in sorted(areas.items(), key=lambda kv: -kv[1])[:8]},
        "self_time_top": [{"where": _where(f, ln, fn), "calls": n, "self_s": round(t, 3), "share": round(t / total, 3)}
                          for f, ln, fn, n, t, _c in self_top],
        "pipeline_cumulative_top": [{"where": _where(f, ln, fn), "calls": n, "cum_s": round(c, 3),
                                     "share": round(c / total, 3)} for f, ln, fn, n, _t, c in cum_top],
    }


class SqlTimer:
    """Driver time per SQL statement (normalised), via before/after_cursor_execute events; and
    the transactions and pool checkouts around them, which cost round trips of their own on
    PostgreSQL (psycopg sends BEGIN before a transaction's first statement, then COMMIT or
    ROLLBACK; the engine's pre-ping is a SELECT 1 per checkout)."""

    def __init__(self) -> None:
        self.by_statement: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
        self.events: dict[str, int] = {"begin": 0, "commit": 0, "rollback": 0, "checkout": 0}

    def _count(self, name: str):
        def count(conn, *_args, **_kwargs) -> None:
            # an autocommit connection (a claim's) sends no BEGIN / COMMIT for these events
            options = conn.get_execution_options() if hasattr(conn, "get_execution_options") else {}
            if options.get("isolation_level") != "AUTOCOMMIT":
                self.events[name] += 1
        return count

    def _before(self, conn, cursor, statement, parameters, context, executemany):
        conn.info.setdefault("bench_t0", []).append(time.perf_counter())

    def _after(self, conn, cursor, statement, parameters, context, executemany):
        t0 = conn.info["bench_t0"].pop()
        key = re.sub(r"\s+", " ", statement).strip()
        key = re.sub(r"\((?:\?|%\(\w+\)s|\$\d+)(?:, ?(?:\?|%\(\w+\)s|\$\d+))+\)", "(…)", key)[:160]
        entry = self.by_statement[key]
        entry[0] += 1
        entry[1] += time.perf_counter() - t0

    @contextlib.contextmanager
    def attached(self, engine: sa.engine.Engine) -> Iterator["SqlTimer"]:
        listeners = [(engine, "before_cursor_execute", self._before), (engine, "after_cursor_execute", self._after)]
        listeners += [(engine, name, self._count(name)) for name in ("begin", "commit", "rollback")]
        listeners.append((engine.pool, "checkout", self._count("checkout")))
        for target, name, fn in listeners:
            sa.event.listen(target, name, fn)
        try:
            yield self
        finally:
            for target, name, fn in listeners:
                sa.event.remove(target, name, fn)

    def summary(self, wall_s: float, top: int = 8) -> dict:
        items = sorted(self.by_statement.items(), key=lambda kv: -kv[1][1])
        total = sum(v[1] for v in self.by_statement.values())
        statements = sum(int(v[0]) for v in self.by_statement.values())
        return {
            "statements": statements,
            "transactions": self.events["begin"],
            "checkouts": self.events["checkout"],
            # on PostgreSQL each of these waits for the server once
            "round_trips": statements + sum(self.events.values()),
            "driver_s": round(total, 3),
            "driver_share_of_wall": round(total / wall_s, 3) if wall_s else None,
            "top": [{"sql": k, "count": int(v[0]), "total_s": round(v[1], 3),
                     "mean_us": round(1e6 * v[1] / v[0], 1)} for k, v in items[:top]],
        }


@contextlib.contextmanager
def profiled(engine: sa.engine.Engine | None = None) -> Iterator[dict]:
    """Profile the block; the summary lands in the yielded dict when it ends."""
    out: dict = {}
    prof = cProfile.Profile()
    timer = SqlTimer()
    with contextlib.ExitStack() as stack:
        if engine is not None:
            stack.enter_context(timer.attached(engine))
        t0 = time.perf_counter()
        prof.enable()
        try:
            yield out
        finally:
            prof.disable()
            wall = time.perf_counter() - t0
    out["wall_s"] = round(wall, 3)
    out["python"] = summarize(prof)
    if engine is not None:
        out["sql"] = timer.summary(wall)
