"""1. Ingest: import_files of the corpus JSONL into a fresh SQLite file and a fresh PostgreSQL
database, and, beside it, a raw COPY of the same rows into a bare table (the limit). Also beside
it, the same raw insert into a freshly migrated chat_history (its key and indexes): what an
importer pays that keeps them up to date row by row (PostgreSQL's does; SQLite's builds them at the
end of a large import). And on PostgreSQL, the same raw COPY into chat_history with its key and
indexes dropped, then built again: what the raw COPY itself takes to leave the table as the
pipeline needs it, checking no row."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import time
from pathlib import Path

import psycopg

from pipeline.db.queries import query
from pipeline.ingest import import_files, reader
from pipeline.store import Store

from .. import cpu, profiling
from ..env import Env, conninfo, log, pg_database
from ..expected import partition_of

TITLE = "Ingest"
SQLITE_TARGET = 100_000   # msgs/s
PG_TARGET = 0.7           # x raw COPY
BARE = ("CREATE TABLE bare_chat (message_id bigint, guild_id bigint, channel_id bigint, visibility text, "
        "partition text, user_id bigint, text text, ts timestamptz, reply_to bigint, edited_ts timestamptz, "
        "ingested_at timestamptz)")
RAW_COLUMNS = "message_id, guild_id, channel_id, visibility, partition, user_id, text, ts, reply_to, edited_ts, ingested_at"


def _fresh(url: str) -> Store:
    store = Store.open(url, check_schema=False)
    store.upgrade()
    return store


def _pipeline_import(url: str, path: Path, settings, *, one_process: bool = False,
                     used: list | None = None) -> float:
    """import_files of the corpus; one_process: without the reader process (pipeline/ingest/reader.py),
    what the importer does below READER_AFTER_BYTES. `used`: receives where its CPU went (bench/cpu.py)."""
    store = _fresh(url)
    threshold = reader.READER_AFTER_BYTES
    try:
        if one_process:
            reader.READER_AFTER_BYTES = float("inf")
        with cpu.measured() as measured:
            t0 = time.perf_counter()
            import_files(store, [path], settings, fmt="jsonl")
            t = time.perf_counter() - t0
        if used is not None:
            used.append(measured)
        return t
    finally:
        reader.READER_AFTER_BYTES = threshold
        store.close()


def _row(r: dict, now: str) -> tuple:
    return (r["message_id"], r["guild_id"], r["channel_id"], r["visibility"], partition_of(r), r["user_id"],
            r["text"], r["ts"], r.get("reply_to"), r.get("edited_ts"), now)


def _raw_copy(url: str, path: Path, *, from_file: bool, table: str = "bare_chat", used: list | None = None) -> float:
    """COPY (text format) into a table with no index, key or constraint, one transaction.
    from_file: the timing includes reading and parsing the JSONL (the same input the importer
    gets); otherwise the rows are parsed beforehand and only the COPY is timed. table
    "chat_history": into the migrated table instead (its key and indexes)."""
    now = dt.datetime.now(dt.timezone.utc).isoformat()
    rows = None if from_file else [_row(json.loads(line), now) for line in path.open(encoding="utf-8")]
    if table != "bare_chat":
        _fresh(url).close()
    with psycopg.connect(conninfo(url)) as conn:
        if table == "bare_chat":
            conn.execute(BARE)
        conn.commit()
        with cpu.measured() as measured:
            t0 = time.perf_counter()
            if rows is None:
                _copy_file(conn, table, path, now)
            else:
                with conn.cursor() as cur, cur.copy(f"COPY {table} ({RAW_COLUMNS}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
            conn.commit()
            t = time.perf_counter() - t0
        if used is not None:
            used.append(measured)
        return t


def _copy_file(conn, table: str, path: Path, now: str) -> None:
    """The raw COPY's work: read the JSONL, json.loads each line, COPY (text) the rows into `table`."""
    with conn.cursor() as cur, cur.copy(f"COPY {table} ({RAW_COLUMNS}) FROM STDIN") as copy:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                copy.write_row(_row(json.loads(line), now))


def _raw_copy_then_build(url: str, path: Path) -> dict:
    """The raw COPY (as _raw_copy, from the file) into a freshly migrated chat_history whose key and
    indexes (the ones an import defers: sql/queries.sql `pg_message_indexes`) are dropped first and
    built again after the last row, in one transaction: seconds for the COPY, the key, the
    indexes and in all."""
    now = dt.datetime.now(dt.timezone.utc).isoformat()
    _fresh(url).close()
    with psycopg.connect(conninfo(url)) as conn:
        key = conn.execute("SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
                           "WHERE conrelid = 'chat_history'::regclass AND contype = 'p'").fetchone()
        indexes = conn.execute(query("pg_message_indexes")).fetchall()
        conn.execute(f"ALTER TABLE chat_history DROP CONSTRAINT {key[0]}")  # names from the catalog
        for name, _sql in indexes:
            conn.execute(f"DROP INDEX {name}")
        conn.commit()
        t0 = time.perf_counter()
        _copy_file(conn, "chat_history", path, now)
        t1 = time.perf_counter()
        conn.execute(f"ALTER TABLE chat_history ADD CONSTRAINT {key[0]} {key[1]}")
        t2 = time.perf_counter()
        for _name, sql in indexes:
            conn.execute(sql)
        conn.commit()
        t3 = time.perf_counter()
    return {"seconds": t3 - t0, "copy_s": t1 - t0, "key_s": t2 - t1, "indexes_s": t3 - t2}


def _raw_sqlite(url: str, path: Path, *, table: str = "bare_chat") -> float:
    """executemany into a table with no key or index, one transaction, the engine's pragmas
    (WAL, synchronous NORMAL); timing includes reading and parsing the JSONL. table
    "chat_history": into the migrated table instead (its key and indexes)."""
    import sqlite3

    now = dt.datetime.now(dt.timezone.utc).isoformat()
    if table != "bare_chat":
        _fresh(url).close()
    conn = sqlite3.connect(url.removeprefix("sqlite:///"))
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    if table == "bare_chat":
        conn.execute(BARE.replace("bigint", "integer").replace("timestamptz", "text"))
    t0 = time.perf_counter()
    with conn, path.open(encoding="utf-8") as fh:
        conn.executemany(f"INSERT INTO {table} ({RAW_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                         (_row(json.loads(line), now) for line in fh))
    t = time.perf_counter() - t0
    conn.close()
    return t


def _prefix(env: Env) -> Path:
    """The corpus, or its first PROFILE_LINES lines, for a profiling pass."""
    lines = env.plan["profile_lines"]
    if env.meta["counts"]["messages"] <= lines:
        return env.corpus_path
    out = env.work / "corpus-prefix.jsonl"
    with env.corpus_path.open(encoding="utf-8") as src, out.open("w", encoding="utf-8") as dst:
        dst.writelines(itertools.islice(src, lines))
    return out


def run(env: Env) -> dict:
    n = env.meta["counts"]["messages"]
    path, settings = env.corpus_path, env.settings()
    reps = env.plan["ingest_reps"]
    res: dict = {"messages": n, "repetitions": reps, "sqlite": {}, "postgresql": None}
    # the one-process import is measured beside it only when the import reads in a reader process
    compare = reader.wanted([(str(path), "jsonl")])

    times, raw_times, keyed_times, alone_times, cpus = [], [], [], [], []
    for i in range(reps):
        with env.database("sqlite", "ingest-raw") as url:
            raw_times.append(_raw_sqlite(url, path))
        with env.database("sqlite", "ingest-raw-keyed") as url:
            keyed_times.append(_raw_sqlite(url, path, table="chat_history"))
        with env.database("sqlite", "ingest") as url:
            times.append(_pipeline_import(url, path, settings, used=cpus))
        if compare:
            with env.database("sqlite", "ingest-one-process") as url:
                alone_times.append(_pipeline_import(url, path, settings, one_process=True))
        log(f"ingest sqlite #{i + 1}: {n / times[-1]:,.0f} msgs/s"
            + (f" (in one process {n / alone_times[-1]:,.0f})" if compare else "") + ", "
            f"raw insert {n / raw_times[-1]:,.0f} (into chat_history {n / keyed_times[-1]:,.0f})")
    best = min(times)
    res["sqlite"] = {"seconds": [round(t, 3) for t in times], "msgs_per_s": round(n / best),
                     "raw_seconds": [round(t, 3) for t in raw_times], "raw_msgs_per_s": round(n / min(raw_times)),
                     "ratio": round(min(raw_times) / best, 3),
                     "raw_table_seconds": [round(t, 3) for t in keyed_times],
                     **({"one_process_seconds": [round(t, 3) for t in alone_times],
                         "one_process_msgs_per_s": round(n / min(alone_times))} if compare else {}),
                     "raw_table_msgs_per_s": round(n / min(keyed_times)),
                     "cpu": cpus[times.index(best)]}  # the fastest import's
    res["sqlite"]["met"] = res["sqlite"]["msgs_per_s"] >= SQLITE_TARGET

    if env.pg_reason is None:
        pipe, raw, raw_db, keyed, alone, pipe_cpu, raw_cpu, built = [], [], [], [], [], [], [], []
        for i in range(reps):  # interleaved, each into its own fresh database
            with pg_database() as url:
                raw.append(_raw_copy(url, path, from_file=True, used=raw_cpu))
            with pg_database() as url:
                keyed.append(_raw_copy(url, path, from_file=True, table="chat_history"))
            with pg_database() as url:
                pipe.append(_pipeline_import(url, path, settings, used=pipe_cpu))
            if compare:
                with pg_database() as url:
                    alone.append(_pipeline_import(url, path, settings, one_process=True))
            with pg_database() as url:
                raw_db.append(_raw_copy(url, path, from_file=False))
            with pg_database() as url:
                built.append(_raw_copy_then_build(url, path))
            log(f"ingest postgresql #{i + 1}: pipeline {n / pipe[-1]:,.0f} msgs/s"
                + (f" (in one process {n / alone[-1]:,.0f})" if compare else "") + f", raw COPY {n / raw[-1]:,.0f} "
                f"(into chat_history {n / keyed[-1]:,.0f}, COPY only {n / raw_db[-1]:,.0f}, "
                f"then key and indexes built {n / built[-1]['seconds']:,.0f})")
        ratio = min(raw) / min(pipe)
        res["postgresql"] = {
            "pipeline_seconds": [round(t, 3) for t in pipe], "raw_copy_seconds": [round(t, 3) for t in raw],
            "copy_only_seconds": [round(t, 3) for t in raw_db],
            "msgs_per_s": round(n / min(pipe)), "raw_copy_msgs_per_s": round(n / min(raw)),
            "copy_only_msgs_per_s": round(n / min(raw_db)),
            "raw_table_seconds": [round(t, 3) for t in keyed], "raw_table_msgs_per_s": round(n / min(keyed)),
            **({"one_process_seconds": [round(t, 3) for t in alone], "one_process_msgs_per_s": round(n / min(alone))}
               if compare else {}),
            "built_after": {k: round(v, 3) for k, v in min(built, key=lambda b: b["seconds"]).items()},
            "built_after_seconds": [round(b["seconds"], 3) for b in built],
            "ratio": round(ratio, 3), "ratio_copy_only": round(min(raw_db) / min(pipe), 3), "met": ratio >= PG_TARGET,
            "cpu": pipe_cpu[pipe.index(min(pipe))], "raw_copy_cpu": raw_cpu[raw.index(min(raw))],  # the fastest's
        }

    res["profiles"] = {}
    missed = [k for k in ("sqlite", "postgresql") if res[k] and not res[k]["met"]]
    if missed:
        sample = _prefix(env)
        lines = min(n, env.plan["profile_lines"])
        for kind in missed:
            log(f"ingest {kind}: target missed, profiling an import of {lines:,} messages")
            with env.database(kind, "ingest-profile") as url:
                store = _fresh(url)
                with profiling.profiled(store.engine) as prof:
                    import_files(store, [sample], settings, fmt="jsonl")
                store.close()
            res["profiles"][f"{kind} import of {lines:,} messages"] = prof
    return res


def targets(res: dict) -> list[tuple[str, str, bool | None]]:
    out = [(f"SQLite ≥ {SQLITE_TARGET:,} msgs/s", f"{res['sqlite']['msgs_per_s']:,} msgs/s", res["sqlite"]["met"])]
    pg = res["postgresql"]
    out.append((f"PostgreSQL ≥ {PG_TARGET}× raw COPY", f"{pg['ratio']:.2f}× ({pg['msgs_per_s']:,} msgs/s)" if pg else
                "skipped", pg["met"] if pg else None))
    return out


def render(res: dict) -> list[str]:
    n = res["messages"]
    out = [f"{n:,} messages (the corpus JSONL), `import_files` into a freshly migrated database each time, "
           f"best of {res['repetitions']}.", ""]
    out += ["| database | msgs/s | target | |", "|---|---|---|---|"]
    s = res["sqlite"]
    out.append(f"| SQLite | {s['msgs_per_s']:,} | ≥ {SQLITE_TARGET:,} msgs/s | {'met' if s['met'] else '**missed**'}; "
               f"{s['ratio']:.2f}× a raw insert ({s['raw_msgs_per_s']:,} msgs/s) |")
    pg = res["postgresql"]
    raw_note = ("Raw insert (SQLite) = read the same JSONL, `json.loads` each line, one `executemany` into a table with "
                "no key or index, one transaction, the engine's pragmas (WAL, synchronous NORMAL). ")
    if pg:
        out.append(f"| PostgreSQL | {pg['msgs_per_s']:,} | ≥ {PG_TARGET}× raw COPY | "
                   f"**{pg['ratio']:.2f}×** raw COPY ({pg['raw_copy_msgs_per_s']:,} msgs/s): "
                   f"{'met' if pg['met'] else '**missed**'} |")
        out += ["", raw_note + f"Raw COPY = read the same JSONL, `json.loads` each line, `COPY … FROM STDIN` (text) into a table "
                f"with no key, index or constraint, one transaction; it is the least work that gets this file into "
                f"PostgreSQL. COPY alone of pre-parsed rows: {pg['copy_only_msgs_per_s']:,} msgs/s "
                f"(the pipeline reaches {pg['ratio_copy_only']:.2f}× of that)."]
    else:
        out += ["", raw_note + "PostgreSQL: skipped (server not reachable)."]
    alone = [f"{name} {r['one_process_msgs_per_s']:,} msgs/s (the reader process makes it "
             f"{r['msgs_per_s'] / r['one_process_msgs_per_s']:.2f}× that)"
             for name, r in (("SQLite", s), ("PostgreSQL", pg)) if r and "one_process_msgs_per_s" in r]
    if alone:
        out += ["", f"The same import in one process (no reader process, as below {reader.READER_AFTER_BYTES // 2 ** 20} "
                f"MiB of JSONL; pipeline/ingest/reader.py): {'; '.join(alone)}."]
    out += _cpu_lines(s, pg)
    keyed = [f"{name} {r['raw_table_msgs_per_s']:,} msgs/s ({r['raw_table_msgs_per_s'] / base:.2f}× the bare table; "
             f"the import {r['msgs_per_s'] / r['raw_table_msgs_per_s']:.2f}× that)"
             for name, r, base in (("SQLite", s, s["raw_msgs_per_s"]), ("PostgreSQL", pg, pg and pg["raw_copy_msgs_per_s"]))
             if r and "raw_table_msgs_per_s" in r]
    if keyed:
        out += ["", "The same raw insert / raw COPY into a freshly migrated `chat_history` (its primary key and three "
                f"indexes) instead of the bare table: {'; '.join(keyed)}: what an importer pays that keeps the indexes up to date "
                "row by row. The importer builds the secondary ones once at the end of an import at least as large "
                "as the table (pipeline/store/ingest.py `defer_message_indexes`, both databases), so it can pass "
                "that; the primary key it keeps up to date row by row (it finds the messages stored already)."]
    out += _built_after_line(pg, n)
    return out


def _built_after_line(pg: dict | None, n: int) -> list[str]:
    """What the PostgreSQL target leaves an import once chat_history's key and indexes are built
    (results from before the bench measured it have none)."""
    if not pg or "built_after" not in pg:
        return []
    b, bare = pg["built_after"], min(pg["raw_copy_seconds"])
    allowed = bare / PG_TARGET
    build = b["key_s"] + b["indexes_s"]
    return ["", f"The raw COPY into `chat_history` with its key and indexes dropped first and built again after the "
            f"last row (one transaction): {b['copy_s']:,.2f} s to copy, {b['key_s']:,.2f} s to build the key, "
            f"{b['indexes_s']:,.2f} s its indexes: {b['seconds']:,.2f} s in all, "
            f"**{bare / b['seconds']:.2f}×** the bare table (best of {len(pg['built_after_seconds'])}): what the raw "
            f"COPY itself takes to leave the table as the pipeline needs it, checking no row. "
            f"{PG_TARGET}× the raw COPY is the import in {allowed:,.2f} s; the builds alone take {build:,.2f} s of it, "
            f"after the last row, leaving {allowed - build:,.2f} s to read, check and copy {n:,} rows, "
            f"where the raw COPY's unchecked copy took {b['copy_s']:,.2f} s."]


def _cpu_lines(s: dict, pg: dict | None) -> list[str]:
    """Where the fastest imports' CPU went, and what that bounds (results from before the bench
    measured CPU have none)."""
    parts = []
    if s.get("cpu"):
        parts.append(f"SQLite: {cpu.split(s['cpu'], ('importer', 'reader process', 'rest'))}")
    if pg and pg.get("cpu"):
        used, raw = pg["cpu"], pg["raw_copy_cpu"]
        n = used["cpus"]
        allowed = raw["wall_s"] / PG_TARGET
        text = (f"PostgreSQL: {cpu.split(used, ('importer', 'reader process', 'server'))}; the raw COPY "
                f"{cpu.split(raw, ('client', '', 'server'))}")
        if not pg["met"]:
            text += (f". {PG_TARGET}× the raw COPY is the import in {allowed:,.1f} s, at most {allowed * n:,.1f} CPU-s "
                     f"on {n} CPUs: the import used {cpu.total_s(used):,.1f}, so it takes at least "
                     f"{cpu.total_s(used) / n:,.1f} s however its processes overlap")
        parts.append(text)
    if not parts:
        return []
    return ["", "CPU of the fastest import (user + system time of the importer and its reader process; the rest "
            "of the machine over the same time from /proc/stat, on PostgreSQL mostly the server; bench/cpu.py): "
            + "; ".join(parts) + "."]
