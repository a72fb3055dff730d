"""Loading the search corpus: plain bulk INSERTs (`executemany`, one transaction per table, on a
raw driver connection) into memory_facts, daily_summaries and historical_summaries, so that
migration 0007's triggers build memory_items and its full-text index exactly as a nightly run's
writes do. Timed per table; the first `head` users' rows are timed apart so the same rows can be
loaded into a database whose index triggers were dropped (the index's cost, side by side)."""

from __future__ import annotations

import contextlib
import sqlite3
import time

import psycopg

from .env import conninfo
from .search_corpus import SearchCorpus

TABLES = {
    "memory_facts": ("id", "user_id", "partition", "level", "category", "text", "fact_key", "confidence", "event_day",
                     "first_seen", "last_seen", "sources", "origin", "status", "superseded_on", "input_hash",
                     "created_at", "updated_at"),
    "daily_summaries": ("partition", "day", "user_id", "summary", "input_hash", "degraded", "created_at"),
    "historical_summaries": ("partition", "user_id", "day", "summary", "input_hash", "source_days", "degraded",
                             "created_at", "attempts", "degraded_reason"),
}
SETUP = {
    "channels": ("channel_id", "guild_id", "visibility", "partition", "is_group", "name", "one_to_one"),
    "chat_history": ("message_id", "guild_id", "channel_id", "visibility", "partition", "user_id", "text", "ts",
                     "reply_to", "edited_ts", "ingested_at"),
}


def _rows(corpus: SearchCorpus, table: str, users):
    return {"memory_facts": corpus.fact_rows, "daily_summaries": corpus.daily_rows,
            "historical_summaries": corpus.historical_rows}[table](users)


class Loader:
    """A raw DBAPI connection (sqlite3, or psycopg) to the database at url."""

    def __init__(self, db: str, url: str):
        self.db = db
        if db == "sqlite":
            self.conn = sqlite3.connect(url.removeprefix("sqlite:///"))
            self.mark = "?"
        else:
            self.conn = psycopg.connect(conninfo(url))
            self.mark = "%s"

    def insert(self, table: str, columns: tuple[str, ...], rows) -> tuple[int, float]:
        """(rows, seconds): one executemany, committed."""
        rows = list(rows)  # generated before the clock starts
        sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join([self.mark] * len(columns))})"
        t0 = time.perf_counter()
        with self._tx() as cur:
            cur.executemany(sql, rows)
        return len(rows), time.perf_counter() - t0

    @contextlib.contextmanager
    def _tx(self):
        """One committed transaction (psycopg's `with conn` would close the connection)."""
        if self.db == "sqlite":
            with self.conn:
                yield self.conn.cursor()
        else:
            with self.conn.transaction():
                yield self.conn.cursor()

    def scalar(self, sql: str, *args):
        cur = self.conn.cursor()
        cur.execute(sql.replace("?", self.mark), args)
        row = cur.fetchone()
        return row[0] if row else None

    def all(self, sql: str, *args) -> list[tuple]:
        cur = self.conn.cursor()
        cur.execute(sql.replace("?", self.mark), args)
        return cur.fetchall()

    def drop_index_triggers(self) -> list[str]:
        """Drop the triggers that copy the three tables into memory_items (the baseline)."""
        tables = tuple(TABLES)
        if self.db == "sqlite":
            names = [r[0] for r in self.all("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name IN "
                                            "(?, ?, ?)", *tables)]
            stmts = [f"DROP TRIGGER {n}" for n in names]
        else:
            rows = self.all("SELECT DISTINCT trigger_name, event_object_table FROM information_schema.triggers "
                            "WHERE event_object_table IN (?, ?, ?)", *tables)
            names = [n for n, _t in rows]
            stmts = [f"DROP TRIGGER {n} ON {t}" for n, t in rows]
        with self._tx() as cur:
            for s in stmts:
                cur.execute(s)
        return sorted(names)

    def analyze(self) -> None:
        """PostgreSQL: what autovacuum does after a bulk load (SQLite: nothing; mempipe never runs
        ANALYZE there)."""
        if self.db == "postgresql":
            self.conn.commit()
            self.conn.autocommit = True
            self.conn.execute("ANALYZE")
            self.conn.autocommit = False

    def close(self) -> None:
        self.conn.close()


def load(loader: Loader, corpus: SearchCorpus, head: int, *, setup: bool = True) -> dict:
    """Insert the corpus (channels and one chat_history row per (user, partition) first, untimed
    as index work); returns per table rows and seconds for the head users and the rest."""
    if setup:
        loader.insert("channels", SETUP["channels"], corpus.channel_rows())
        loader.insert("chat_history", SETUP["chat_history"], corpus.history_rows())
    out: dict = {}
    for table, columns in TABLES.items():
        entry = {}
        for part in ("head", "rest"):
            users = corpus.users_slice(part, head)
            if users:
                n, s = loader.insert(table, columns, _rows(corpus, table, users))
                entry[part] = {"rows": n, "s": round(s, 3)}
        out[table] = entry
    return out


def items(loader: Loader) -> dict[str, int]:
    return {k: n for k, n in loader.all("SELECT kind, COUNT(*) FROM memory_items GROUP BY kind ORDER BY kind")}
