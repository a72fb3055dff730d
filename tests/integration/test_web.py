"""`mempipe serve --http`: /healthz, /metrics and the status page over real HTTP on 127.0.0.1,
on every database the suite runs against, after a real replay of the sample with the Gemini
summarizer against the loopback fake (one retried request; every request about Eli, a member of
the second guild only, rejected: real fallbacks and degraded rows with their reasons)."""

from __future__ import annotations

import datetime as dt
import json
import re
import urllib.error
import urllib.request

import pytest
import sqlalchemy as sa
from prometheus_client.parser import text_string_to_metric_families

from pipeline.clock import fixed_clock
from pipeline.config import ModelLimits
from pipeline.ingest import import_files
from pipeline.llm.gemini import GeminiClient
from pipeline.store import Store
from pipeline.summarize.llm import LLMSummarizer
from pipeline.web import HttpService, Role, WebApp
from tests.conftest import SAMPLE
from tests.fakes.gemini_server import FakeGemini, status
from tests.fakes.responders import canned_answer
from tests.helpers import replay

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 11, 5, 12, tzinfo=UTC)  # tests.helpers' run clock: the runs started "today"
IDENTITY = "web-test:1"
ELI = re.compile(r"\bEli\b")


def _rejecting_eli(request):
    return status(400, "request rejected") if ELI.search(request.prompt_text) else canned_answer(request)


def gemini_replay(store, settings):
    """The sample imported and replayed (2026-11-01..04) with the Gemini summarizer against the
    fake; returns the run's settings. (tests/acceptance/test_status_page.py uses it too.)"""
    s = settings.model_copy(deep=True)
    s.summarizer = "gemini"
    s.gemini = s.gemini.model_copy(update={"backoff_initial_s": 0.01, "backoff_max_s": 0.02, "timeout_s": 5.0,
                                           "max_attempts": 2,
                                           # no per-minute wait; the daily limit is what /metrics reports
                                           "limits": {"gemini-2.5-flash": ModelLimits(rpm=100000, rpd=250)}})
    # short targets: the sample's texts then need the model (no pass-through of short text)
    s.summary = s.summary.model_copy(update={"daily_chars": 40, "historical_chars": 40, "context_chars": 80})
    import_files(store, [SAMPLE], s)
    with FakeGemini(_rejecting_eli) as server:
        s.gemini.base_url = server.url
        server.script(status(503, "overloaded"))  # the first request fails once, then is retried
        client = GeminiClient("test-key", base_url=server.url, timeout_s=s.gemini.timeout_s)
        replay(store, s, "2026-11-01", "2026-11-04", summarizer=LLMSummarizer(s, client))
    return s


@pytest.fixture
def ran(store, settings):
    return gemini_replay(store, settings)


@pytest.fixture
def web(store, ran):
    role = Role()
    with HttpService(("127.0.0.1", 0), WebApp(store, ran, clock=fixed_clock(NOW), identity=IDENTITY, role=role)) as svc:
        svc.role = role
        yield svc


def get(url: str) -> tuple[int, str, str]:
    """(status, content type, body) of a GET; an HTTP error status is an answer too."""
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.headers["Content-Type"], r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


def scalar(store: Store, sql: str):
    with store.engine.connect() as conn:
        return conn.execute(sa.text(sql)).scalar_one()


def samples(text: str) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_metrics_are_the_database_at_scrape_time(store, web):
    code, ctype, text = get(web.url + "/metrics")
    assert code == 200 and ctype.startswith("text/plain; version=0.0.4")
    m = samples(text)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert all(name.startswith("mempipe_") and families[name].documentation for name in families)
    assert m[("mempipe_up", ())] == 1

    run = store.runs(1)[0]
    assert run["status"] == "ok" and run["fallbacks"] > 0 and run["retries"] == 1  # the scenario happened
    kind = (("kind", "replay"),)
    assert m[("mempipe_runs_total", (("dry_run", "false"), ("kind", "replay"), ("status", "ok")))] == 1
    assert m[("mempipe_llm_requests_total", kind)] == run["llm_calls"] > 0
    assert m[("mempipe_llm_retries_total", kind)] == 1
    assert m[("mempipe_llm_tokens_total", kind + (("type", "prompt"),))] == run["prompt_tokens"] > 0
    assert m[("mempipe_llm_tokens_total", kind + (("type", "output"),))] == run["output_tokens"] > 0
    assert m[("mempipe_llm_estimated_cost_usd_total", kind)] == pytest.approx(run["estimated_cost"])
    for what in ("summarizer_calls", "cache_hits", "fallbacks"):
        assert m[("mempipe_run_work_total", kind + (("what", what),))] == run[what]
    outcomes = {o for (name, labels), _v in m.items() if name == "mempipe_run_items_total"
                for k, o in labels if k == "outcome"}
    assert "summarized" in outcomes and "errors" in outcomes and "passed_fits" in outcomes
    for outcome in outcomes:
        assert m[("mempipe_run_items_total", kind + (("outcome", outcome),))] == run[outcome]
    # the outcomes add up to the run's items
    items = run["partition_days"] + run["historical_items"] + run["context_items"]
    assert sum(m[("mempipe_run_items_total", kind + (("outcome", o),))] for o in outcomes) == items
    assert m[("mempipe_run_stage_items_total", (("kind", "replay"), ("stage", "daily")))] == run["partition_days"] == 14
    assert m[("mempipe_facts_total", kind + (("outcome", "added"),))] == run["facts_added"]
    assert m[("mempipe_llm_requests_today", ())] == run["llm_calls"]  # the run started "today" (UTC)
    model = (("model", "gemini-2.5-flash"),)
    assert m[("mempipe_quota_requests_per_day", model)] == 250
    assert m[("mempipe_quota_used_ratio", model)] == pytest.approx(run["llm_calls"] / 250)

    # degraded rows per table, every reason classed: the rejected requests and what was built on them
    for table in ("partition_days", "daily_summaries", "historical_summaries", "memory_context"):
        want = scalar(store, f"SELECT count(*) FROM {table} WHERE degraded")
        got = {dict(labels)["reason"]: v for (name, labels), v in m.items()
               if name == "mempipe_degraded_rows" and dict(labels)["table"] == table}
        assert sum(got.values()) == want > 0, table
        assert set(got) <= {"rejected", "built_from_degraded"}, got
    assert m[("mempipe_degraded_rows", (("reason", "rejected"), ("table", "partition_days")))] > 0

    # contexts: every one counted once, by scope kind; as of 2026-11-04 on 2026-11-05 (UTC) = 1 day old
    contexts = {k: v for k, v in m.items() if k[0] == "mempipe_contexts"}
    assert sum(contexts.values()) == scalar(store, "SELECT count(*) FROM memory_context") > 0
    for kind_ in ("guild", "channel", "dm"):
        want = scalar(store, f"SELECT count(*) FROM memory_context WHERE scope LIKE '{kind_}:%'")
        assert m[("mempipe_contexts", (("age_days", "1"), ("scope_kind", kind_)))] == want
        assert m[("mempipe_context_age_days_max", (("scope_kind", kind_),))] == 1
    assert not any(k[0] == "mempipe_contexts" and "user" in dict(k[1]) for k in m)  # bounded labels


def test_metrics_follow_the_database_not_the_process(store, ran):
    """Two apps on one database (a leader and a standby) export the same data series; a run
    recorded after the first scrape shows in the next one."""
    def scrape(role: Role) -> dict:
        app = WebApp(store, ran, clock=fixed_clock(NOW), identity=IDENTITY, role=role)
        with HttpService(("127.0.0.1", 0), app) as svc:
            return samples(get(svc.url + "/metrics")[2])

    leader, standby = scrape(Role(True)), scrape(Role(False))
    assert leader.pop(("mempipe_process_leader", ())) == 1 and standby.pop(("mempipe_process_leader", ())) == 0
    assert leader == standby
    run_id = store.start_run("run", None, None, None, False, NOW)
    store.finish_run(run_id, "failed", {"llm_calls": 3}, NOW, error="boom")
    after = scrape(Role(False))
    assert after[("mempipe_runs_total", (("dry_run", "false"), ("kind", "run"), ("status", "failed")))] == 1
    assert after[("mempipe_llm_requests_total", (("kind", "run"),))] == 3


def test_healthz_rule(store, web):
    def healthz():
        code, ctype, body = get(web.url + "/healthz")
        assert ctype == "application/json"
        return code, json.loads(body)

    code, body = healthz()
    assert code == 200 and body["status"] == "ok" and body["problems"] == []
    assert body["database"]["reachable"] is True and body["leader"] is None  # no serve has led yet
    assert body["process"] == {"identity": IDENTITY, "role": "standby"}

    store.leader_heartbeat("other:7", 7, "other", NOW - dt.timedelta(minutes=5), NOW - dt.timedelta(seconds=5))
    code, body = healthz()
    assert code == 200 and body["leader"]["holder"] == "other:7" and body["leader"]["this_process"] is False
    assert body["leader"]["state"] == "leading"

    web.role(True)
    store.leader_heartbeat(IDENTITY, 1, "web-test", NOW - dt.timedelta(minutes=5), NOW - dt.timedelta(seconds=2))
    code, body = healthz()
    assert code == 200 and body["process"]["role"] == "leader" and body["leader"]["this_process"] is True

    # stale: older than max(3 × heartbeat_s, takeover_s) = 30 s by default
    store.leader_heartbeat(IDENTITY, 1, "web-test", NOW - dt.timedelta(minutes=5), NOW - dt.timedelta(seconds=31))
    code, body = healthz()
    assert code == 503 and body["status"] == "unhealthy" and "heartbeat" in body["problems"][0]
    store.leader_heartbeat(IDENTITY, 1, "web-test", NOW - dt.timedelta(minutes=5), NOW)

    started = NOW - dt.timedelta(minutes=1)
    store.scheduler_job_started("refresh", started)
    store.scheduler_job_finished("refresh", outcome="failed", started_at=started, now=NOW, error="StoreError: gone")
    code, body = healthz()
    assert code == 503 and body["jobs"]["refresh"]["last_outcome"] == "failed"
    assert body["problems"] == ["job refresh: last run failed: StoreError: gone"]

    store.scheduler_job_finished("refresh", outcome="cancelled", started_at=started, now=NOW, error="cancelled")
    store.scheduler_job_finished("retention", outcome="ok", started_at=started, now=NOW)
    code, body = healthz()
    assert code == 200 and body["jobs"]["retention"]["last_outcome"] == "ok"  # cancelled is a clean stop

    store.leader_released(IDENTITY, NOW)
    code, body = healthz()
    assert code == 200 and body["leader"]["state"] == "stopped"  # a standby takes over: not a failure


@pytest.mark.parametrize("kind", ["postgresql", "sqlite"])
def test_database_unreachable_is_503_everywhere(kind, settings, tmp_path, caplog):
    if kind == "postgresql":  # nothing listens on port 1
        url = "postgresql+psycopg://mempipe@127.0.0.1:1/mempipe?connect_timeout=3"
    else:  # a "database file" that is a directory: it cannot be opened
        (tmp_path / "dir.db").mkdir()
        url = f"sqlite:///{tmp_path}/dir.db"
    store = Store.open(url, check_schema=False)
    try:
        with HttpService(("127.0.0.1", 0), WebApp(store, settings, clock=fixed_clock(NOW), identity=IDENTITY)) as svc:
            code, _, body = get(svc.url + "/healthz")
            body = json.loads(body)
            assert code == 503 and body["database"]["reachable"] is False and body["status"] == "unhealthy"
            code, _, text = get(svc.url + "/metrics")
            assert code == 503 and "mempipe_" not in text  # no series at all, never zeros
            assert any("/metrics" in r.getMessage() for r in caplog.records if r.levelname == "ERROR")
            code, ctype, html = get(svc.url + "/")
            assert code == 503 and ctype.startswith("text/html") and "database cannot be read" in html
            assert get(svc.url + "/nothing")[0] == 404
    finally:
        store.close()


def _chat_and_memory_texts(store: Store) -> set[str]:
    """Every message text of the data set and every stored summary, context, profile and fact."""
    sqls = ["SELECT text FROM chat_history", "SELECT summary FROM daily_summaries",
            "SELECT summary FROM historical_summaries", "SELECT context FROM memory_context",
            "SELECT profile FROM memory_profiles", "SELECT text FROM memory_facts",
            "SELECT display_name FROM members"]
    out = set()
    with store.engine.connect() as conn:
        for sql in sqls:
            out |= {v for v in conn.execute(sa.text(sql)).scalars() if v}
    return out


def test_page_shows_runs_jobs_charts_and_no_chat_text(store, web):
    store.scheduler_job_finished("refresh", outcome="ok", started_at=NOW, now=NOW, report={"duration_s": 1.5})
    code, ctype, html = get(web.url + "/")
    assert code == 200 and ctype == "text/html; charset=utf-8"
    for element in ('<table id="jobs">', '<table id="runs">', '<table id="degraded-table">', 'id="quota-table"'):
        assert element in html
    assert html.count("<svg") == 4 and "<script" not in html
    assert re.search(r'<figure class="chart" id="chart-requests">', html)
    run = store.runs(1)[0]
    assert f'<td class="n">{run["id"]}</td><td>replay</td>' in html
    # its items add up as `mempipe runs` shows them: items, summarized, passed through
    items = run["partition_days"] + run["historical_items"] + run["context_items"]
    passed = sum(v for k, v in run.items() if k.startswith("passed_"))
    assert items == run["summarized"] + passed + run["errors"]
    assert f'<td class="n">{items}</td><td class="n">{run["summarized"]}</td><td class="n">{passed}</td>' in html
    assert ">refresh</td>" in html and ">rejected</td>" in html  # a job row; a degraded reason class
    # the requests chart has a bar for the run's day with its count
    assert f"2026-11-05: {run['llm_calls'] - run['retries']} first tries" in html
    assert "guild:1150000000000000002" in html  # freshness per guild id

    texts = _chat_and_memory_texts(store)
    assert len(texts) >= 90  # the 90 messages at least
    # whole texts and every phrase of them (a summary quotes messages; a page could quote a part)
    pieces = texts | {p.strip() for t in texts for p in re.split(r"[\n/·“”\"]|(?<=[.!?:])\s", t)}
    leaked = sorted(p for p in pieces if len(p) >= 16 and p in html)
    assert not leaked, leaked
    # names of people are personal data too (each is also inside longer texts checked above)
    assert not re.search(r"\b(Ana|Bo|Cy|Dex|Eli)\b", html)
