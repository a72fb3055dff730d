"""The Gemini summarizer through the CLI, against the loopback fake (tests/fakes): a small export
whose texts fit their length targets makes (almost) no request, and the run says why; a model
that keeps failing finishes with exit 3, the degraded items counted."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pipeline.cli import cli
from tests.conftest import SAMPLE
from tests.fakes.gemini_server import FakeGemini, status
from tests.fakes.responders import canned_answer

RANGE = ("--from", "2026-11-01", "--to", "2026-11-04")


def _gemini_cli(db_url, server, monkeypatch, tmp_path, extra: str = ""):
    """`mempipe --db … --config <gemini on the fake> ARGS…`; the default length targets unless
    `extra` says otherwise."""
    for name in ("MEMPIPE_DATABASE_URL", "MEMPIPE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    config = tmp_path / "gemini.toml"
    config.write_text(f'summarizer = "gemini"\n[gemini]\nbase_url = "{server.url}"\n{extra}'
                      '[gemini.limits."gemini-2.5-flash"]\nrpm = 100000\n')
    runner = CliRunner()

    def invoke(*args, code=0):
        result = runner.invoke(cli, ["--db", db_url, "--config", str(config), *args], catch_exceptions=False)
        assert result.exit_code == code, result.output
        return result

    invoke("db", "upgrade")
    invoke("import", str(SAMPLE))
    return invoke


@pytest.fixture
def server():
    with FakeGemini(canned_answer) as s:
        yield s


@pytest.mark.parametrize("condense", ["cut", "model"])
def test_gemini_configured_but_the_texts_fit_says_why_no_request_was_made(db_url, server, monkeypatch, tmp_path,
                                                                          condense):
    mp = _gemini_cli(db_url, server, monkeypatch, tmp_path, f'[summary]\ncondense = "{condense}"\n')
    dry = mp("replay", *RANGE, "--dry-run").stdout
    # the sample's short days fit the default daily target: the daily stage would ask nothing
    assert "14 partition-days with messages: 0 would be summarized (~0 LLM requests" in dry
    assert "14 would pass through without a model: 14 daily texts already within their length target" in dry
    assert "The estimate covers only the daily stage" in dry and server.calls() == []

    text = mp("replay", *RANGE).stdout
    run = json.loads(mp("runs", "--json").stdout)[0]
    requests = server.calls("generateContent")
    assert not any("<messages>" in r.prompt_text for r in requests)  # no daily prompt was sent
    assert run["llm_calls"] == len(requests) and run["summarized"] == len(requests)  # one request per item
    assert run["passed_fits"] == run["partition_days"] == 14
    assert f"= {run['summarized']} summarized + " in text
    if condense == "cut":  # past weeks and contexts over their budgets are cut to fit: no request at all
        assert requests == [] and "summarized:" not in text and "= 0 summarized + 34 passed through" in text
    else:  # the contexts over context_chars are merged by the model
        assert requests and f"summarized: {run['summarized']} by the model ({len(requests)} LLM requests" in text
    assert "passed through without a model: 14 daily texts already within their length target" in text
    table = mp("runs").stdout.splitlines()[1]
    assert "14 fit" in table and f" {len(requests)} " in table

    again = mp("replay", *RANGE, "--dry-run").stdout  # now every stage can be estimated: nothing to do
    assert "0 would be summarized (~0 LLM requests at most" in again and "34 unchanged since the last run" in again


def test_a_failing_model_finishes_with_exit_3_and_counts_the_degraded(db_url, server, monkeypatch, tmp_path):
    server.responder = lambda _req: status(500, "the model is down")
    mp = _gemini_cli(db_url, server, monkeypatch, tmp_path,
                     'max_attempts = 1\n[summary]\ndaily_chars = 40\nhistorical_chars = 40\ncontext_chars = 80\n')
    result = mp("replay", *RANGE, "--json", code=3)
    run = json.loads(result.stdout)  # still one JSON object on stdout
    assert run["status"] == "ok" and run["fallbacks"] == run["summarized"] > 0
    assert "degraded" in result.stderr and "(exit 3)" in result.stderr
    assert run["partition_days"] + run["historical_items"] + run["context_items"] == \
        run["summarized"] + sum(v for k, v in run.items() if k.startswith("passed_")) + run["errors"]
    text = mp("replay", *RANGE, code=3).stdout  # degraded rows are retried, and fail again
    assert "of them by the extractive fallback after the model failed (degraded)" in text
    assert mp("replay", *RANGE, "--dry-run").exit_code == 0  # a dry run degrades nothing
