"""What every section gets: the corpus, settings, fresh databases, a clock, a progress log."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from pipeline.config import Settings, Timezones, load_settings

from . import corpus

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN_URL = os.environ.get("MEMPIPE_BENCH_PG_URL",
                              os.environ.get("MEMPIPE_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"))
UTC = dt.timezone.utc
_T0 = time.monotonic()

# What each size runs: repetitions, database sizes, windows. The small size must stay CI-sized
# (well under a minute); the large size is run once and committed. Large ingest: best of 3 — one
# import of the same code gave 0.40x, 0.45x and 0.46x raw COPY in three runs of one day.
PLANS = {
    "tiny": {"ingest_reps": 1, "profile_lines": 5_000, "nightly_pg": False, "profile_slice": None, "nightly_profile": False,
             "quota": [{"name": "time-scaled", "window_s": 2.0, "limit": 10, "latency": [1 / 30, 3 / 30], "windows": 3}],
             "read_rows": 10_000, "read_lookups": 2_000,
             "cost_slice": [5, 1],
             "scale": {"time_scale": None, "window_s": 1.0, "latency": [0.1, 0.3], "limit_factor": 1.5, "workers": [2],
                       "slice": [5, 4]}},
    "small": {"ingest_reps": 2, "profile_lines": 10_000, "nightly_pg": True, "profile_slice": None, "nightly_profile": False,
              "quota": [{"name": "time-scaled", "window_s": 2.0, "limit": 10, "latency": [1 / 30, 3 / 30], "windows": 4},
                        {"name": "window shrunk, latency not", "window_s": 4.0, "limit": 10, "latency": [1.0, 3.0],
                         "windows": 2}],
              "read_rows": 100_000, "read_lookups": 5_000,
              "cost_slice": [10, 5],
              "scale": {"time_scale": 6, "window_s": 10.0, "latency": [1 / 6, 3 / 6], "limit_factor": 1.5,
                        "workers": [1, 2, 4]}},
    "large": {"ingest_reps": 3, "profile_lines": 100_000, "nightly_pg": True, "profile_slice": [20, 1], "nightly_profile": True,
              "quota": [{"name": "real scale", "window_s": 60.0, "limit": 10, "latency": [1.0, 3.0], "windows": 8},
                        {"name": "time-scaled", "window_s": 4.0, "limit": 10, "latency": [1 / 15, 3 / 15], "windows": 10},
                        {"name": "window shrunk, latency not", "window_s": 4.0, "limit": 10, "latency": [1.0, 3.0],
                         "windows": 10}],
              "read_rows": 1_000_000, "read_lookups": 50_000,
              "cost_slice": [20, 0],
              "scale": {"time_scale": 6, "window_s": 10.0, "latency": [1 / 6, 3 / 6], "limit_factor": 1.5,
                        "workers": [1, 2, 4], "slice": [20, 1]}},
}


def log(msg: str) -> None:
    print(f"[bench {time.monotonic() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def clean_environment() -> None:
    """Settings come from config/default.toml only: a developer's MEMPIPE_* variables (a
    different model, other length targets) would change what is measured."""
    for name in [n for n in os.environ if n.startswith("MEMPIPE_") and n != "MEMPIPE_BENCH_PG_URL"]:
        del os.environ[name]


def pg_admin_conninfo() -> str:
    import sqlalchemy as sa

    return sa.engine.make_url(PG_ADMIN_URL).set(drivername="postgresql").render_as_string(hide_password=False)


def pg_available() -> str | None:
    """None when the PostgreSQL server answers, else the reason."""
    import psycopg

    try:
        psycopg.connect(pg_admin_conninfo(), connect_timeout=3).close()
    except psycopg.OperationalError as exc:
        return str(exc).strip().splitlines()[0]
    return None


@contextlib.contextmanager
def pg_database(prefix: str = "mempipe_bench", template: str | None = None) -> Iterator[str]:
    """A throwaway PostgreSQL database, created here (a copy of the database `template`, which
    nobody may be connected to, when given) and dropped on the way out."""
    import psycopg
    import sqlalchemy as sa

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_admin_conninfo(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
        try:
            yield sa.engine.make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def conninfo(url: str) -> str:
    import sqlalchemy as sa

    return sa.engine.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@dataclass
class Env:
    size: str
    seed: int
    command: str                      # the command line that is running
    work_root: Path | None = None     # corpora and scratch databases (default bench/out)
    work: Path = field(init=False)
    spec: corpus.Spec = field(init=False)
    meta: dict = field(init=False)
    cache: dict = field(default_factory=dict)
    pg_reason: str | None = None      # why PostgreSQL parts are skipped (None: they run)

    def __post_init__(self) -> None:
        self.spec = corpus.SIZES[self.size]
        self.plan = PLANS[self.size]
        self.work = (self.work_root or ROOT / "bench" / "out") / f"{self.size}-{self.seed}"
        self.work.mkdir(parents=True, exist_ok=True)
        log(f"corpus {self.size} seed {self.seed}: generating (or reusing) {self.corpus_path}")
        self.meta = corpus.write(self.spec, self.seed, self.corpus_path)
        log(f"corpus: {self.meta['counts']}")
        self.pg_reason = pg_available()
        if self.pg_reason:
            log(f"PostgreSQL parts skipped: {self.pg_reason}")

    @property
    def corpus_path(self) -> Path:
        return self.work / "corpus.jsonl"

    @property
    def days(self) -> list[dt.date]:
        return [self.spec.first_day + dt.timedelta(days=i) for i in range(self.spec.days)]

    @property
    def timezones(self) -> dict[int, str]:
        return {int(g): tz for g, tz in self.meta["timezones"].items()}

    def settings(self) -> Settings:
        s = load_settings()
        s.timezones = Timezones(default="UTC", guilds=self.timezones)
        return s

    def sqlite_url(self, name: str) -> str:
        path = self.work / f"{name}.db"
        for p in self.work.glob(f"{name}.db*"):
            p.unlink()
        return f"sqlite:///{path}"

    def drop_sqlite(self, name: str) -> None:
        """Remove a scratch database made by sqlite_url(name) (and its WAL, lock files)."""
        for p in self.work.glob(f"{name}.db*"):
            p.unlink()

    def rerun(self, section: str) -> str:
        return f"python -m bench --size {self.size} --seed {self.seed} --only {section}"

    def databases(self) -> list[str]:
        return ["sqlite"] + ([] if self.pg_reason else ["postgresql"])

    @contextlib.contextmanager
    def database(self, kind: str, name: str) -> Iterator[str]:
        if kind == "sqlite":
            url = self.sqlite_url(name)
            yield url
            self.drop_sqlite(name)
        else:
            with pg_database() as url:
                yield url


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"
