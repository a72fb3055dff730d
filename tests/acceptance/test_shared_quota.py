"""Issue 16's quota test: three OS processes on one PostgreSQL database and one API key, each
replaying its own guild against the loopback fake Gemini server with an rpm limit and a small
window (gemini.rate_window_s = the server's rate_window). With gemini.shared_quota they count one
quota in the database: the server's busiest window never holds more than the limit (no 429),
and they use at least 0.9 of it while they have work. The same with three `mempipe worker`
processes taking one run's items (workers count the quota in the database whatever
shared_quota says). Without it, each process counts alone and together they send more than the
limit (the server refuses the excess)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa

from tests.conftest import ROOT
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.responders import canned_answer
from tests.helpers import stop_process

WINDOW_S = 2.0
RPM = 8            # requests per window, for the three processes together
GUILDS = (1150000000000000101, 1150000000000000102, 1150000000000000103)
DAYS = 7
USERS = 6          # per guild, each writing on every day


def _corpus(path, days: int = DAYS) -> None:
    """Every guild: DAYS days of USERS members each writing two sentences longer than the
    summary targets and condense = "model", so that every partition-day, past week and context
    needs the model."""
    lines = []
    for g, guild in enumerate(GUILDS):
        for d in range(days):
            day = dt.date(2026, 11, 1) + dt.timedelta(days=d)
            for u in range(USERS):
                user = 1160000000000000100 + 10 * g + u
                for m in range(2):
                    lines.append({
                        "message_id": str(1190000000000100000 + len(lines)), "guild_id": str(guild),
                        "channel_id": str(1170000000000000100 + g), "visibility": "public",
                        "user_id": str(user), "user_name": f"Member{g}{u}",
                        "text": f"On day {d + 1} I worked on project {u}-{m} of guild {g}: the build is "
                                f"coming along, and tomorrow I will test part {m + 2} with the others.",
                        "ts": f"{day.isoformat()}T{10 + u}:{10 * m + 5:02d}:00+00:00"})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")


def _config(path, url: str, *, shared: bool, attempts: int = 4, workers: bool = False):
    path.write_text(
        f'summarizer = "gemini"\n[gemini]\nbase_url = "{url}"\nconcurrency = 4\nrate_window_s = {WINDOW_S}\n'
        f"shared_quota = {'true' if shared else 'false'}\nbackoff_max_s = 1\nmax_attempts = {attempts}\n"
        f'[gemini.limits."gemini-2.5-flash"]\nrpm = {RPM}\n'
        "[summary]\ndaily_chars = 40\nhistorical_chars = 40\ncontext_chars = 80\ncondense = \"model\"\n"
        + ("[workers]\nenabled = true\n" if workers else ""), encoding="utf-8")
    return path


def _mempipe(db_url, config, *args, wait=True, log=None):
    env = {**os.environ, "GEMINI_API_KEY": "test-key", "PYTHONPATH": str(ROOT)}
    for name in [n for n in env if n.startswith("MEMPIPE_")]:
        env.pop(name)
    cmd = [sys.executable, "-m", "pipeline.cli", "--db", db_url, "--config", str(config), *args]
    if log is not None:  # a file, not a pipe: a chatty worker never blocks on it
        with open(log, "w", encoding="utf-8") as out:
            return subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    if not wait:
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def _three_replays(db_url, config, *, exits=(0,)) -> None:
    procs = [_mempipe(db_url, config, "replay", "--from", "2026-11-01", "--to", "2026-11-07",
                      "--guild", str(guild), wait=False) for guild in GUILDS]
    for p in procs:
        _out, err = p.communicate(timeout=120)
        assert p.returncode in exits, err.decode()


def _share_used(times: list[float]) -> float:
    """Requests per window over the busy period's whole windows (from the first request), as a
    share of the limit."""
    times = sorted(times)
    windows = int((times[-1] - times[0]) // WINDOW_S)
    assert windows >= 5, "the processes were not kept busy for several windows"
    in_windows = sum(1 for t in times if t < times[0] + windows * WINDOW_S)
    return in_windows / (windows * RPM)


@pytest.fixture
def pg_db_url(db_url, db_kind):
    if db_kind != "postgresql":
        pytest.skip("a quota shared by processes is PostgreSQL's")
    return db_url


@pytest.fixture
def limited_gemini():
    with FakeGemini(canned_answer, latency=0.05, rpm_limit=RPM, rate_window=WINDOW_S) as server:
        yield server


def _prepare(db_url, tmp_path, server, *, shared: bool, days: int = DAYS, attempts: int = 4, workers: bool = False):
    config = _config(tmp_path / "gemini.toml", server.url, shared=shared, attempts=attempts, workers=workers)
    _corpus(tmp_path / "guilds.jsonl", days)
    _mempipe(db_url, config, "db", "upgrade")
    _mempipe(db_url, config, "import", str(tmp_path / "guilds.jsonl"))
    return config


def test_three_processes_on_one_key_share_one_quota_and_use_it(pg_db_url, limited_gemini, tmp_path):
    server = limited_gemini
    config = _prepare(pg_db_url, tmp_path, server, shared=True)
    _three_replays(pg_db_url, config)

    calls = _within_the_limit_and_used(server)
    spans = [[r.time for r in calls if f"Member{g}" in r.prompt_text] for g in range(len(GUILDS))]
    assert max(min(s) for s in spans) < min(max(s) for s in spans)  # the three really ran at once
    assert _runs_and_slots_in_flight(pg_db_url)[1] == 0  # each process wrote its last releases before it exited


def _within_the_limit_and_used(server) -> list:
    """The server's requests, checked: never over the limit (no 429 at all), ≥ 0.9 of it used
    over the whole busy period (stage barriers included)."""
    calls = server.calls()
    refused = [r for r in calls if r.outcome == "rate_limited_rpm"]
    busiest = server.max_requests_in_window(WINDOW_S)
    share = _share_used([r.time for r in calls])
    seen = f"{len(calls)} requests, busiest window {busiest}/{RPM}, share used {share:.2f}"
    assert not refused and busiest <= RPM, seen
    assert share >= 0.9, seen
    return calls


def _runs_and_slots_in_flight(db_url) -> tuple[list[str], int]:
    """The runs' statuses and the quota slots still marked in flight (none once every process ended)."""
    engine = sa.create_engine(db_url)
    with engine.connect() as conn:
        in_flight = conn.execute(sa.text("SELECT count(*) FROM llm_quota_slots WHERE held_until IS NULL")).scalar_one()
        status = conn.execute(sa.text("SELECT status FROM pipeline_runs ORDER BY id")).scalars().all()
    engine.dispose()
    return status, in_flight


def _ready_workers(db_url, config, tmp_path, n: int) -> list:
    """n `mempipe worker` processes, each listening on the queue before this returns."""
    procs = [_mempipe(db_url, config, "-v", "worker", log=tmp_path / f"worker{i}.log") for i in range(n)]
    deadline = time.monotonic() + 60
    for i, proc in enumerate(procs):
        log = tmp_path / f"worker{i}.log"
        while "jobs of queue" not in log.read_text(encoding="utf-8"):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text(encoding="utf-8")
            time.sleep(0.05)
    return procs


def test_three_workers_on_one_key_share_one_quota_and_use_it(pg_db_url, limited_gemini, tmp_path):
    server = limited_gemini
    # shared_quota off on purpose: with [workers] enabled the quota is the database's anyway
    config = _prepare(pg_db_url, tmp_path, server, shared=False, workers=True)
    workers = _ready_workers(pg_db_url, config, tmp_path, 3)
    try:
        _mempipe(pg_db_url, config, "replay", "--from", "2026-11-01", "--to", "2026-11-07")
    finally:
        codes = [stop_process(w) for w in workers]
    logs = [(tmp_path / f"worker{i}.log").read_text(encoding="utf-8") for i in range(3)]
    assert codes == [0, 0, 0], logs

    _within_the_limit_and_used(server)
    assert sum(1 for log in logs if " done in " in log) >= 2, logs  # more than one worker took items
    assert _runs_and_slots_in_flight(pg_db_url) == (["ok"], 0)


def test_without_shared_quota_three_processes_exceed_the_limit(pg_db_url, limited_gemini, tmp_path):
    server = limited_gemini
    # two days are enough to show it, and a 429 falls back at once (no retries): a short test
    config = _prepare(pg_db_url, tmp_path, server, shared=False, days=2, attempts=1)
    _three_replays(pg_db_url, config, exits=(0, 3))  # 3: the items refused with a 429 fell back
    # each process keeps its own count of RPM: together they send more, and meet 429s
    assert server.max_requests_in_window(WINDOW_S) > RPM
    assert any(r.outcome == "rate_limited_rpm" for r in server.calls())
