"""5. Bot read: `pipeline.read.get_context` (with a Store passed in) against a raw primary-key
SELECT of the same row through the same driver, in the same run, on a memory_context table of
many rows (bulk-inserted directly)."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import random
import sqlite3
import time

import psycopg

from pipeline.db.queries import query
from pipeline.read import get_context
from pipeline.store import Store

from .. import profiling
from ..env import Env, conninfo, log

TITLE = "Bot read"
P99_TARGET_MS = 2.0
RATIO_TARGET = 0.8
WARMUP = 1_000
PROFILE_CALLS = 2_000
COLUMNS = ("scope", "user_id", "context", "as_of_day", "made_at", "input_hash", "inputs", "degraded",
           "degraded_reason", "attempts")


def _rows(n: int, seed: int):
    """About n contexts (distinct keys) over n/40 scopes (70% guild, 15% channel, 15% dm), texts of 200-1,200 chars."""
    rng = random.Random(f"{seed}:contexts")
    pool = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz      .,") for _ in range(5000))
    n_scopes = max(1, n // 40)
    scopes = []
    for i in range(n_scopes):
        kind = rng.choices(("guild", "channel", "dm"), (70, 15, 15))[0]
        scopes.append(f"{kind}:{1150000000000000000 + i * 7919}")
    seen = set()
    for i in range(n):
        scope = scopes[i % n_scopes]
        user = 1160000000000000000 + rng.randrange(10**12)
        if (scope, user) in seen:
            continue
        seen.add((scope, user))
        start = rng.randrange(len(pool) - 1200)
        yield (scope, user, pool[start:start + rng.randint(200, 1200)], hashlib.sha256(f"{i}".encode()).hexdigest())


def _fill_sqlite(path: str, n: int, seed: int) -> list[tuple[str, int]]:
    made = dt.datetime(2026, 11, 8, 3, tzinfo=dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    keys = []

    def rows():
        for s, u, text, h in _rows(n, seed):
            keys.append((s, u))
            yield (s, u, text, "2026-11-07", made, h, "{}", 0, None, 1)

    conn = sqlite3.connect(path)
    with conn:
        conn.executemany(f"INSERT INTO memory_context ({', '.join(COLUMNS)}) VALUES (?,?,?,?,?,?,?,?,?,?)", rows())
    conn.close()
    return keys


def _fill_pg(url: str, n: int, seed: int) -> list[tuple[str, int]]:
    made = dt.datetime(2026, 11, 8, 3, tzinfo=dt.timezone.utc)
    keys = []
    with psycopg.connect(conninfo(url)) as conn:
        with conn.cursor() as cur, cur.copy(f"COPY memory_context ({', '.join(COLUMNS)}) FROM STDIN") as copy:
            for s, u, text, h in _rows(n, seed):
                keys.append((s, u))
                copy.write_row((s, u, text, dt.date(2026, 11, 7), made, h, "{}", False, None, 1))
        conn.execute("ANALYZE memory_context")
    return keys


def _pct(values: list[int], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))] / 1e6  # ns -> ms


@contextlib.contextmanager
def _one_cpu(server_pids: list[int]):
    """This process and the database's server processes (`server_pids`) on one CPU while the
    reads are timed, each put back after; yields that CPU, or None when they could not all be
    pinned (no sched_setaffinity, or not permitted): then nothing is pinned.

    Why: a round trip to a PostgreSQL server process on the other CPU of this 2-CPU machine took
    ~0.075 ms, on the same CPU ~0.033 ms, and where the scheduler put each connection's server
    process was chance — the same measurement, unpinned, gave a p50 ratio of 0.49 in one run and
    1.47 in the next (all three on one CPU: 0.93-0.94 in both). One CPU for all is the stricter
    regime for the ratio: the smallest round trip leaves our per-call work the largest share."""
    pin, get = getattr(os, "sched_setaffinity", None), getattr(os, "sched_getaffinity", None)
    before: dict[int, set[int]] = {}
    cpu = None
    try:
        if pin is not None and get is not None:
            cpu = min(get(0))
            try:
                for pid in (0, *server_pids):
                    before[pid] = get(pid)
                    pin(pid, {cpu})
            except OSError:  # another user's process we may not move, or one that ended
                cpu = None
                _unpin(before)
                before = {}
        yield cpu
    finally:
        _unpin(before)


def _unpin(before: dict[int, set[int]]) -> None:
    for pid, cpus in before.items():
        with contextlib.suppress(OSError):
            os.sched_setaffinity(pid, cpus)


def _server_pids(raw) -> list[int]:
    """The PostgreSQL server processes of the database `raw` is connected to (its own, the
    Store's read connection, any pool connection): the ones the timed reads talk to."""
    return [pid for (pid,) in raw.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'")]


def _measure(store: Store, raw, sample: list[tuple[str, int]]) -> dict:
    sql = query("get_context").rstrip(";")
    if raw.__class__.__module__.startswith("sqlite3"):
        sql = sql.replace(":scope", "?").replace(":user_id", "?")
    else:
        sql = sql.replace(":scope", "%s").replace(":user_id", "%s")
    cur = raw.cursor()

    def raw_read(scope, user):
        cur.execute(sql, (scope, user))
        return cur.fetchone()

    for scope, user in sample[:WARMUP]:
        get_context(scope, user, store=store)
        raw_read(scope, user)
    ours, theirs = [], []
    clock = time.perf_counter_ns
    servers = [] if raw.__class__.__module__.startswith("sqlite3") else _server_pids(raw)
    with _one_cpu(servers) as cpu:
        for i, (scope, user) in enumerate(sample):
            # alternate which goes first, so neither always reads the row the other just cached
            for which in ((0, 1) if i % 2 else (1, 0)):
                t0 = clock()
                if which == 0:
                    row = get_context(scope, user, store=store)
                    ours.append(clock() - t0)
                    assert row is not None
                else:
                    row = raw_read(scope, user)
                    theirs.append(clock() - t0)
                    assert row is not None
    out = {"pinned": cpu is not None, "get_context": {"p50_ms": _pct(ours, 0.5), "p99_ms": _pct(ours, 0.99)},
           "raw": {"p50_ms": _pct(theirs, 0.5), "p99_ms": _pct(theirs, 0.99)}}
    out["ratio_p50"] = round(out["raw"]["p50_ms"] / out["get_context"]["p50_ms"], 3)
    out["ratio_p99"] = round(out["raw"]["p99_ms"] / out["get_context"]["p99_ms"], 3)
    out["met"] = out["get_context"]["p99_ms"] < P99_TARGET_MS and min(out["ratio_p50"], out["ratio_p99"]) >= RATIO_TARGET
    return out


def run(env: Env) -> dict:
    n, lookups = env.plan["read_rows"], env.plan["read_lookups"]
    res: dict = {"rows": n, "lookups": lookups, "databases": {}, "profiles": {}}
    for db in env.databases():
        with env.database(db, "read") as url:
            store = Store.open(url, check_schema=False)
            store.upgrade()
            t0 = time.perf_counter()
            if db == "sqlite":
                path = url.removeprefix("sqlite:///")
                keys = _fill_sqlite(path, n, env.seed)
                raw = sqlite3.connect(path)
            else:
                keys = _fill_pg(url, n, env.seed)
                raw = psycopg.connect(conninfo(url), autocommit=True)
            log(f"read {db}: {len(keys):,} context rows in {time.perf_counter() - t0:.1f} s; measuring")
            rng = random.Random(f"{env.seed}:lookups")
            sample = [keys[rng.randrange(len(keys))] for _ in range(lookups + WARMUP)]
            r = _measure(store, raw, sample)
            r["rows"] = len(keys)
            res["databases"][db] = r
            log(f"read {db}: get_context p50 {r['get_context']['p50_ms']:.3f} ms, raw {r['raw']['p50_ms']:.3f} ms")
            if not r["met"]:
                with profiling.profiled(store.engine) as prof:
                    for scope, user in sample[:PROFILE_CALLS]:
                        get_context(scope, user, store=store)
                res["profiles"][f"{db}: {PROFILE_CALLS:,} get_context calls"] = prof
            raw.close()
            store.close()
    return res


def targets(res: dict) -> list[tuple[str, str, bool | None]]:
    return [(f"{db}: p99 < {P99_TARGET_MS:g} ms and ≥ {RATIO_TARGET}× raw",
             f"p99 {r['get_context']['p99_ms']:.3f} ms; {r['ratio_p50']:.2f}× (p50), {r['ratio_p99']:.2f}× (p99)",
             r["met"]) for db, r in res["databases"].items()]


def render(res: dict) -> list[str]:
    out = [f"{res['rows']:,} rows in `memory_context` (bulk-inserted: SQLite `executemany`, PostgreSQL `COPY`), "
           f"{res['lookups']:,} lookups of random existing keys after {WARMUP:,} warm-up reads, each key read both "
           f"ways, alternating which goes first. Raw = the README's statement (`sql/queries.sql` `get_context`) on one "
           f"open DBAPI connection of the same driver (`sqlite3`; `psycopg`, autocommit), `execute` + `fetchone`. "
           f"Ratio = raw time / get_context time (1.0 = no overhead; target ≥ {RATIO_TARGET}). While the reads are "
           f"timed, the bench and (PostgreSQL) the server processes of both connections run on one CPU: a round trip "
           f"to a server process on the other CPU cost about twice as much here (~0.075 vs ~0.033 ms), and where "
           f"the scheduler put each connection's server decided the ratio (0.49 in one unpinned run, 1.47 in the "
           f"next); a row marked \"not pinned\" could not be.", "",
           "| database | get_context p50 / p99 (ms) | raw p50 / p99 (ms) | ratio p50 | ratio p99 | |",
           "|---|---|---|---|---|---|"]
    for db, r in res["databases"].items():
        g, w = r["get_context"], r["raw"]
        name = db if r.get("pinned") else f"{db} (not pinned)"
        out.append(f"| {name} | {g['p50_ms']:.3f} / {g['p99_ms']:.3f} | {w['p50_ms']:.3f} / {w['p99_ms']:.3f} | "
                   f"{r['ratio_p50']:.2f} | {r['ratio_p99']:.2f} | {'met' if r['met'] else '**missed**'} |")
    return out
