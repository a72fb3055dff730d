"""`mempipe serve` as real processes against one database (PostgreSQL and SQLite), with the
Gemini summarizer against the loopback fake (with latency, so work takes time):

- two `serve` processes: one leads and does all the work (the fake server sees exactly one
  process's requests), the other stands by; kill -9 the leader and the standby takes over within
  `takeover_s` and runs;
- SIGTERM in the middle of a refresh: exit 0, no partial partition-day, and the next start
  resumes and completes without redoing finished partition-days.

`serve` runs on the real clock, so the sample chat is shifted to end yesterday; `--run-now` runs
the refresh as soon as a process leads, instead of at the next hh:07.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa

from tests.conftest import ROOT, SAMPLE
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.responders import canned_answer
from tests.helpers import stop_process

UTC = dt.timezone.utc
TAKEOVER_S = 1.0
SAMPLE_PARTITION_DAYS = 14


def _env():
    env = {**os.environ, "GEMINI_API_KEY": "test-key", "PYTHONPATH": str(ROOT)}
    for name in list(env):
        if name.startswith("MEMPIPE_"):
            del env[name]
    return env


def _mempipe(db_url, config, *args):
    cmd = [sys.executable, "-m", "pipeline.cli", "--db", db_url, "--config", str(config), *args]
    done = subprocess.run(cmd, env=_env(), capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


def _serve(db_url, config, log_path):
    cmd = [sys.executable, "-m", "pipeline.cli", "--db", db_url, "--config", str(config),
           "serve", "--run-now", "--log-format", "json"]
    log = open(log_path, "w")  # a file, not a pipe: a standby's log must never block on a full pipe
    proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=log, cwd=ROOT)
    proc.log_path = log_path
    log.close()
    return proc


def _log_lines(proc) -> list[dict]:
    out = []
    with open(proc.log_path, encoding="utf-8") as f:
        text = f.read()
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass  # a traceback line, shown by the assertion that fails
    return out


def _read(proc) -> str:
    with open(proc.log_path, encoding="utf-8") as f:
        return f.read()


def _job_lines(proc) -> list[dict]:
    return [r for r in _log_lines(proc) if r.get("msg", "").startswith("job ")]



@pytest.fixture
def shifted_sample(tmp_path):
    """The sample chat moved so that its last day (2026-11-04) is yesterday (UTC)."""
    shift = (dt.datetime.now(UTC).date() - dt.timedelta(days=1)) - dt.date(2026, 11, 4)
    lines = []
    for line in SAMPLE.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        for key in ("ts", "edited_ts"):
            if row.get(key):
                row[key] = (dt.datetime.fromisoformat(row[key]) + shift).isoformat()
        lines.append(json.dumps(row))
    path = tmp_path / "recent.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _config(tmp_path, server, *, concurrency=2):
    config = tmp_path / "serve.toml"
    config.write_text(
        f'summarizer = "gemini"\n'
        f'[gemini]\nbase_url = "{server.url}"\nconcurrency = {concurrency}\n'
        '[gemini.limits."gemini-2.5-flash"]\nrpm = 100000\n'
        # short targets: the sample's texts then need the model (no pass-through of short text)
        '[summary]\ndaily_chars = 40\nhistorical_chars = 40\ncontext_chars = 80\n'
        f'[scheduler]\ntakeover_s = {TAKEOVER_S}\nheartbeat_s = 0.5\n')
    return config


@pytest.fixture
def gemini(tmp_path):
    with FakeGemini(canned_answer, latency=0.1) as server:
        yield server, _config(tmp_path, server)


class Db:
    def __init__(self, url):
        self.engine = sa.create_engine(url)

    def rows(self, sql, **params):
        with self.engine.connect() as conn:
            return [tuple(r) for r in conn.execute(sa.text(sql), params)]

    def refreshes(self):
        return self.rows("SELECT status, error FROM pipeline_runs WHERE kind = 'refresh' ORDER BY id")

    def leader(self):
        rows = self.rows("SELECT holder, pid, released_at FROM scheduler_leader")
        return rows[0] if rows else None

    def whole_partition_days(self) -> int:
        rows = self.rows("SELECT p.user_count, (SELECT COUNT(*) FROM daily_summaries d "
                         "WHERE d.partition = p.partition AND d.day = p.day) FROM partition_days p")
        assert all(users == n for users, n in rows), rows  # written whole or not at all
        return len(rows)


def _wait(predicate, timeout, procs=(), what=""):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        for p in procs:
            assert p.poll() is None, f"serve exited early ({p.returncode}): {_read(p)}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _one_process_work(tmp_path, config, data, server) -> int:
    """Requests one `serve` process makes for the first refresh of this data (alone, on SQLite)."""
    ref = f"sqlite:///{tmp_path}/reference.db"
    _mempipe(ref, config, "db", "upgrade")
    _mempipe(ref, config, "import", str(data))
    server.reset()
    proc = _serve(ref, config, tmp_path / "reference.log")
    db = Db(ref)
    try:
        _wait(lambda: db.refreshes() == [("ok", None)], 120, [proc], "the reference refresh")
    finally:
        assert stop_process(proc) == 0
        db.engine.dispose()
    calls = len(server.calls())
    server.reset()
    return calls


def test_two_serves_one_leader_works_then_the_standby_takes_over(db_url, gemini, shifted_sample, tmp_path):
    server, config = gemini
    one_process = _one_process_work(tmp_path, config, shifted_sample, server)
    assert one_process >= SAMPLE_PARTITION_DAYS  # a request per partition-day at least: two processes would double it

    _mempipe(db_url, config, "db", "upgrade")
    _mempipe(db_url, config, "import", str(shifted_sample))
    db = Db(db_url)
    a = _serve(db_url, config, tmp_path / "a.log")
    b = _serve(db_url, config, tmp_path / "b.log")
    procs = {a.pid: a, b.pid: b}
    try:
        _wait(lambda: db.refreshes() == [("ok", None)], 120, [a, b], "the first refresh")
        time.sleep(3 * TAKEOVER_S)  # the standby polls the lock meanwhile and must do nothing
        assert db.refreshes() == [("ok", None)]
        assert len(server.calls()) == one_process  # one process's work, not two
        holder, pid, released = db.leader()
        assert pid in procs and released is None
        leader, standby = procs[pid], procs[a.pid if pid == b.pid else b.pid]
        assert [r["job"] for r in _job_lines(leader)] == ["refresh"] and _job_lines(standby) == []
        assert any(r["msg"].startswith("standby") for r in _log_lines(standby))
        status = json.loads(_mempipe(db_url, config, "status", "--json").stdout)
        assert status["leader"]["pid"] == pid and status["leader"]["state"] == "leading"
        assert {j["job"] for j in status["jobs"]} == {"refresh", "rollover:UTC", "retention"}

        # new chat for the next leader to summarise, then kill -9: no clean shutdown, no release
        # recorded — the lock goes with the process
        new = tmp_path / "today.jsonl"
        new.write_text(json.dumps({
            "message_id": "1190000000000099001", "guild_id": "1150000000000000001",
            "channel_id": "1170000000000000010", "visibility": "public", "user_id": "1160000000000000001",
            "user_name": "Ana", "text": "Back online after the outage, rebuilding the farm.",
            "ts": (dt.datetime.now(UTC) - dt.timedelta(minutes=1)).isoformat()}) + "\n", encoding="utf-8")
        _mempipe(db_url, config, "import", str(new))
        leader.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        leader.wait(timeout=30)
        _wait(lambda: (db.leader() or (None, None))[1] == standby.pid, 30, [standby], "the takeover")
        took = time.monotonic() - killed_at
        assert took <= TAKEOVER_S + 1.5, f"takeover took {took:.1f} s"
        _wait(lambda: db.refreshes() == [("ok", None), ("ok", None)], 60, [standby], "the new leader's refresh")
        (line,) = _wait(lambda: _job_lines(standby), 10, [standby], "the job's log line")  # written after its run row
        assert line["job"] == "refresh" and line["outcome"] == "ok" and line["llm_calls"] > 0
        assert len(server.calls()) == one_process + line["llm_calls"]  # it summarised the new chat
        assert stop_process(standby) == 0
        assert db.leader()[2] is not None  # released on the clean stop
    finally:
        for p in (a, b):
            if p.poll() is None:
                p.kill()
                p.wait()
        db.engine.dispose()


def test_sigterm_mid_refresh_exits_0_leaves_no_partial_rows_and_the_next_start_resumes(
        db_url, gemini, shifted_sample, tmp_path):
    server, _ = gemini
    server.latency = 0.3  # a long refresh: ~14 daily + 20 more requests, one at a time
    config = _config(tmp_path, server, concurrency=1)
    _mempipe(db_url, config, "db", "upgrade")
    _mempipe(db_url, config, "import", str(shifted_sample))
    db = Db(db_url)

    def dailies():
        return [r for r in server.calls() if "<messages>" in r.prompt_text]

    proc = _serve(db_url, config, tmp_path / "first.log")
    try:
        _wait(lambda: len(dailies()) >= 4, 60, [proc], "daily requests")
        assert db.refreshes() == [("running", None)]
        assert stop_process(proc) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    done = db.whole_partition_days()
    assert 0 < done < SAMPLE_PARTITION_DAYS
    (status, error), = db.refreshes()
    assert status == "failed" and "cancelled by shutdown" in error
    assert db.rows("SELECT last_outcome, last_error FROM scheduler_state WHERE job_id = 'refresh'") == \
        [("cancelled", "cancelled by shutdown")]
    lines = _job_lines(proc)
    assert [(r["job"], r["outcome"]) for r in lines] == [("refresh", "cancelled")]
    assert lines[0]["partitions"] >= done and "duration_s" in lines[0] and "tokens" in lines[0]
    assert db.leader()[2] is not None  # the leadership was released cleanly

    server.latency = 0.05
    before = len(dailies())
    again = _serve(db_url, config, tmp_path / "second.log")
    try:
        _wait(lambda: db.refreshes()[-1:] == [("ok", None)], 120, [again], "the resumed refresh")
        assert stop_process(again) == 0
    finally:
        if again.poll() is None:
            again.kill()
            again.wait()
    assert len(dailies()) - before == SAMPLE_PARTITION_DAYS - done  # finished partition-days not redone
    assert db.whole_partition_days() == SAMPLE_PARTITION_DAYS
    db.engine.dispose()


# ---------------------------------------------------------------- the CLI, in-process

@pytest.fixture
def cli_db(db_url, monkeypatch):
    from click.testing import CliRunner

    from pipeline.cli import cli

    for name in list(os.environ):
        if name.startswith("MEMPIPE_"):
            monkeypatch.delenv(name)
    runner = CliRunner()

    def invoke(*args, code=0):
        result = runner.invoke(cli, ["--db", db_url, *args], catch_exceptions=False)
        assert result.exit_code == code, result.output
        return result

    invoke("db", "upgrade")
    return invoke


def test_status_says_who_leads_and_what_is_due(cli_db, db_url):
    from pipeline.store import Store

    out = cli_db("status").output
    assert out.startswith("leader: none yet")
    for job in ("refresh", "rollover:UTC", "retention"):
        assert f"\n{job} " in out
    report = json.loads(cli_db("status", "--json").output)
    assert report["leader"] is None
    assert {j["job"]: j["next_run_source"] for j in report["jobs"]} == dict.fromkeys(
        ("refresh", "retention", "rollover:UTC"), "schedule")

    store = Store.open(db_url)
    now = dt.datetime.now(UTC)
    try:
        store.leader_heartbeat("h1:42", 42, "h1", now - dt.timedelta(hours=1), now)
        store.scheduler_job_started("refresh", now - dt.timedelta(minutes=3))
        store.scheduler_job_finished("refresh", outcome="failed", started_at=now - dt.timedelta(minutes=3), now=now,
                                     error="database error: gone", report={"duration_s": 1.5})
        store.scheduler_next_runs({"refresh": now + dt.timedelta(minutes=50)})
        out = cli_db("status").output
        assert out.startswith("leader: h1:42 (pid 42 on h1)") and "heartbeat 0 s ago" in out
        assert "failed" in out and "error: database error: gone" in out and "1.5" in out
        report = json.loads(cli_db("status", "--json").output)
        assert report["leader"]["state"] == "leading" and report["leader"]["pid"] == 42
        refresh = next(j for j in report["jobs"] if j["job"] == "refresh")
        assert refresh["next_run_source"] == "leader" and refresh["last_outcome"] == "failed"

        store.leader_heartbeat("h1:42", 42, "h1", now - dt.timedelta(hours=1), now - dt.timedelta(minutes=10))
        assert cli_db("status").output.startswith("leader: STALE — h1:42")
        stale = json.loads(cli_db("status", "--json").output)
        assert next(j for j in stale["jobs"] if j["job"] == "refresh")["next_run_source"] == "missed"
        store.leader_released("h1:42", now)
        assert cli_db("status").output.startswith("leader: none — h1:42 stopped at")
    finally:
        store.close()


def test_serve_refuses_an_old_schema_and_a_missing_api_key(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from pipeline.cli import cli

    for name in list(os.environ):
        if name.startswith("MEMPIPE_"):
            monkeypatch.delenv(name)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    runner = CliRunner()
    fresh = runner.invoke(cli, ["--db", f"sqlite:///{tmp_path}/new.db", "serve"])
    assert fresh.exit_code == 1 and "Error:" in fresh.output and "mempipe db upgrade" in fresh.output
    url = f"sqlite:///{tmp_path}/ok.db"
    assert runner.invoke(cli, ["--db", url, "db", "upgrade"]).exit_code == 0
    config = tmp_path / "gemini.toml"
    config.write_text('summarizer = "gemini"\n')
    nokey = runner.invoke(cli, ["--db", url, "--config", str(config), "serve"])
    assert nokey.exit_code == 1 and "GEMINI_API_KEY" in nokey.output
