"""The API key never reaches a table, a log line or an error text, even when the server echoes it
back in its errors: the real CLI and google-genai client against the loopback fake server, on
every database the suite runs against."""

from __future__ import annotations

import asyncio
import itertools
import uuid

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from pipeline.cli import cli
from pipeline.llm.errors import LLMError
from pipeline.llm.gemini import GeminiClient
from tests.conftest import SAMPLE
from tests.fakes.gemini_server import FakeGemini, status


def _key() -> str:
    # matches no token format, so only redaction of the configured value itself can hide it
    return f"plain-test-key-{uuid.uuid4().hex[:12]}"


def echoing_server() -> FakeGemini:
    """Every answer an error quoting the request's key: a 400 (not retried), a 503 and a 429."""
    turn = itertools.count()

    def responder(req):
        key = req.headers.get("x-goog-api-key", "")
        return [status(400, f"API key not valid: {key}"),
                status(503, f"backend overloaded for key={key}"),
                status(429, f"quota exhausted for {key}", retry_delay="0.01s")][next(turn) % 3]

    return FakeGemini(responder)


def _every_value(db_url: str) -> list[str]:
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            out = []
            for name in sa.inspect(conn).get_table_names():
                table = sa.Table(name, sa.MetaData(), autoload_with=conn)
                for row in conn.execute(sa.select(table)):
                    out.extend(str(v) for v in row)
            return out
    finally:
        engine.dispose()


def test_a_key_echoed_by_the_server_is_in_no_table_log_or_output(db_url, tmp_path, monkeypatch):
    key = _key()
    for name in ("MEMPIPE_DATABASE_URL", "MEMPIPE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", key)
    with echoing_server() as server:
        config = tmp_path / "gemini.toml"
        config.write_text(f'summarizer = "gemini"\n[gemini]\nbase_url = "{server.url}"\nmax_attempts = 2\n'
                          'backoff_initial_s = 0.01\nbackoff_max_s = 0.02\n'
                          '[gemini.limits."gemini-2.5-flash"]\nrpm = 100000\n'
                          '[summary]\ndaily_chars = 40\nhistorical_chars = 40\ncontext_chars = 80\n')
        runner = CliRunner()
        base = ["--db", db_url, "--config", str(config), "-v", "--log-format", "json"]
        outputs = []
        for args in (["db", "upgrade"], ["import", str(SAMPLE)],
                     ["replay", "--from", "2026-11-01", "--to", "2026-11-02"],
                     ["facts", "remember", "--scope", "guild:1150000000000000001", "--user", "1160000000000000001",
                      "Ana keeps bees on her balcony, which she started doing last spring with her sister."]):
            result = runner.invoke(cli, base + args, catch_exceptions=False)
            # every request fails, so the replay's items fall back: it finishes degraded (exit 3)
            assert result.exit_code == (3 if args[0] == "replay" else 0), result.output
            outputs.append(result.output + result.stderr)
        assert {r.headers["x-goog-api-key"] for r in server.calls()} == {key}
        assert {r.status_code for r in server.calls()} == {400, 503, 429}

    values = _every_value(db_url)
    assert not [v for v in values if key in v]
    assert any("fallback" in v and "[redacted]" in v for v in values)  # degraded_reason, redacted
    logs = "\n".join(outputs)
    assert key not in logs
    assert "falling back to extractive" in logs and "[redacted]" in logs  # the echoes were logged, redacted


def test_llm_errors_and_their_causes_never_carry_the_key():
    key = _key()
    with echoing_server() as server:
        client = GeminiClient(key, base_url=server.url, timeout_s=2)

        async def three():
            errors = []
            for _ in range(3):
                try:
                    await client.generate("gemini-2.5-flash", "hi", system=None, json_schema=None, max_output_tokens=64)
                except LLMError as exc:
                    errors.append(exc)
            await client.aclose()
            return errors

        errors = asyncio.run(three())
    assert len(errors) == 3 and "not valid: [redacted]" in str(errors[0])
    for exc in errors:
        chained = exc
        while chained is not None:
            assert key not in str(chained) and key not in repr(chained.args)
            chained = chained.__cause__ or (None if chained.__suppress_context__ else chained.__context__)
