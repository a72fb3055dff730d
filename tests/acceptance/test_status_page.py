"""`mempipe serve --http` as real processes, and the status page in a real browser.

- two `serve --http 127.0.0.1:0` processes on one database: the leader's /healthz says leader,
  the standby's says standby and names the leader; both export the same data on /metrics;
  SIGTERM stops the scheduler and the HTTP server: exit 0, the port closed;
- a bad HOST:PORT and a port in use are usage errors naming --http;
- Debian's chromium (headless) renders the page: a screenshot of the requested size with the
  charts' colours in it, and a DOM with the charts' <svg>s, the runs table and the jobs table.
  Without chromium the test skips and says how to install it — under CI=true it fails.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from html.parser import HTMLParser

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pipeline.clock import fixed_clock
from pipeline.web import HttpService, Role, WebApp
from tests.conftest import ROOT, SAMPLE
from tests.integration.test_web import NOW, gemini_replay
from tests.helpers import stop_process

UTC = dt.timezone.utc


def _env():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for name in list(env):
        if name.startswith("MEMPIPE_"):
            del env[name]
    return env


def _config(tmp_path):
    """Fast leader election; no job due while the test runs (its minute is half an hour away)."""
    now = dt.datetime.now(UTC)
    path = tmp_path / "serve.toml"
    path.write_text(f"[scheduler]\ntakeover_s = 0.5\nheartbeat_s = 0.5\nrefresh_minute = {(now.minute + 30) % 60}\n"
                    f"rollover_minute = {(now.minute + 30) % 60}\nretention_hour = {(now.hour + 12) % 24}\n")
    return path


def _serve(db_url, config, log_path, *extra):
    cmd = [sys.executable, "-m", "pipeline.cli", "--db", db_url, "--config", str(config), "serve",
           "--log-format", "json", *extra]
    with open(log_path, "w") as log:  # a file, not a pipe: a standby's log never blocks on a full pipe
        proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=log, cwd=ROOT)
    proc.log_path = log_path
    return proc


def _wait(what, check, proc=None, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (found := check()) is not None:
            return found
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"serve exited ({proc.returncode}) waiting for {what}:\n{proc.log_path.read_text()}")
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}:\n{proc.log_path.read_text() if proc else ''}")


def _url_of(proc) -> str | None:
    for line in proc.log_path.read_text().splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if row.get("msg", "").startswith("http: serving"):
            return row["url"]
    return None


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _healthz(url: str) -> dict:
    code, body = _get(url + "/healthz")
    return {"code": code, **json.loads(body)}


def _data_series(text: str) -> dict:
    """Every sample but the per-process and clock-driven ones."""
    moving = ("mempipe_process_leader", "mempipe_leader_heartbeat_age_seconds")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples if s.name not in moving}


def test_leader_and_standby_serve_http_and_stop_cleanly(mp, db_url, tmp_path):
    mp("import", str(SAMPLE))
    mp("replay", "--from", "2026-11-01", "--to", "2026-11-04")
    config = _config(tmp_path)
    first = _serve(db_url, config, tmp_path / "first.log", "--http", "127.0.0.1:0")
    second = None
    try:
        url1 = _wait("the first server's address", lambda: _url_of(first), first)
        _wait("the first process to lead",
              lambda: True if _healthz(url1)["process"]["role"] == "leader" else None, first)
        second = _serve(db_url, config, tmp_path / "second.log", "--http", "127.0.0.1:0")
        url2 = _wait("the second server's address", lambda: _url_of(second), second)
        leader, standby = _healthz(url1), _healthz(url2)
        assert leader["code"] == standby["code"] == 200
        assert leader["leader"]["this_process"] is True and leader["leader"]["state"] == "leading"
        assert standby["process"]["role"] == "standby" and standby["leader"]["this_process"] is False
        assert standby["leader"]["holder"] == leader["process"]["identity"] != standby["process"]["identity"]

        m1, m2 = _get(url1 + "/metrics"), _get(url2 + "/metrics")
        assert m1[0] == m2[0] == 200
        assert _data_series(m1[1]) == _data_series(m2[1])
        replays = ("mempipe_runs_total", (("dry_run", "false"), ("kind", "replay"), ("status", "ok")))
        assert _data_series(m1[1])[replays] == 1
        code, html = _get(url2 + "/")
        assert code == 200 and '<table id="runs">' in html and "(standby)" in html
    finally:
        codes = [stop_process(p) for p in (first, second) if p is not None]
    assert codes == [0, 0]
    for url in (url1, url2):
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(url + "/healthz", timeout=5)
    assert '"http: stopped"' in first.log_path.read_text()



@pytest.mark.parametrize("address, says", [
    ("nonsense", "is not HOST:PORT"),
    ("127.0.0.1:99999", "port must be a number from 0 to 65535"),
    ("::1:8089", "IPv6 address in brackets"),
    ("192.0.2.1:8089", "cannot listen on 192.0.2.1:8089"),  # TEST-NET-1: not an address of this host
])
def test_a_bad_address_is_a_usage_error_naming_the_option(mp, address, says):
    result = mp("serve", "--http", address, ok=False)
    assert result.exit_code == 2, result.output
    assert "--http" in result.output and says in result.output


def test_a_port_in_use_is_a_usage_error_naming_the_option(mp):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = mp("serve", "--http", f"127.0.0.1:{port}", ok=False)
    assert result.exit_code == 2, result.output
    assert "--http" in result.output and f"cannot listen on 127.0.0.1:{port}" in result.output
    assert "in use" in result.output


# ---------------------------------------------------------------- the page in a browser

def _chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        why = ("no chromium on PATH: `make browser` installs Debian's chromium package "
               "(apt-get install chromium, as root)")
        if os.environ.get("CI") == "true":
            pytest.fail(f"the browser test must run under CI=true, but {why}")
        pytest.skip(why)
    return path


class _Elements(HTMLParser):
    """Tags with their ids, and the rows of each table by id."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, str | None]] = []
        self.rows: dict[str, int] = {}
        self._table: list[str | None] = []

    def handle_starttag(self, tag, attrs):
        ident = dict(attrs).get("id")
        self.tags.append((tag, ident))
        if tag == "table":
            self._table.append(ident)
        elif tag == "tr" and self._table and self._table[-1]:
            self.rows[self._table[-1]] = self.rows.get(self._table[-1], 0) + 1

    def handle_endtag(self, tag):
        if tag == "table" and self._table:
            self._table.pop()


def _browser(chromium: str, tmp_path, *args) -> subprocess.CompletedProcess:
    profile = tmp_path / "chromium-profile"  # its own: never another chromium's lock
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           f"--user-data-dir={profile}", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_the_page_in_a_browser(sqlite_store, settings, tmp_path):
    from PIL import Image

    chromium = _chromium()
    s = gemini_replay(sqlite_store, settings)
    app = WebApp(sqlite_store, s, clock=fixed_clock(NOW), identity="browser-test:1", role=Role(True))
    sqlite_store.scheduler_job_finished("refresh", outcome="ok", started_at=NOW, now=NOW, report={"duration_s": 2.0})
    with HttpService(("127.0.0.1", 0), app) as svc:
        shot = tmp_path / "status.png"
        _browser(chromium, tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", svc.url + "/")
        dom = _browser(chromium, tmp_path, "--dump-dom", svc.url + "/").stdout

    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(shot) as img:
        assert img.size == (1280, 2000)
        pixels = img.convert("RGB")
        colours = pixels.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) >= 16, "the screenshot is (nearly) blank"
    counts = {rgb: n for n, rgb in colours}
    # the header, and bars of the charts (series colours of templates/_style.css.j2) fill real areas
    for name, rgb in (("header", (0x24, 0x3B, 0x53)), ("first series", (0x26, 0x80, 0xC2)),
                      ("second series", (0xF0, 0xB4, 0x29))):
        assert counts.get(rgb, 0) > 200, f"no {name} colour in the screenshot"

    parsed = _Elements()
    parsed.feed(dom)
    ids = {ident for _tag, ident in parsed.tags if ident}
    assert sum(1 for tag, _ in parsed.tags if tag == "svg") == 4
    assert {"chart-requests", "chart-tokens", "chart-cost", "chart-freshness", "jobs", "runs", "leader"} <= ids
    assert parsed.rows["runs"] >= 2 and parsed.rows["jobs"] >= 2  # a header row and at least one row each
    assert "<script" not in dom
