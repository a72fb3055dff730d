"""Ids are checked once, at the edge, by one rule (pipeline/ids.py: an int or a string of ASCII
digits, 0 ≤ id ≤ 2**63−1; never a float, a bool or another script's digits) and one error type,
IdError: scopes (parse_scope, whose ScopeError is an IdError), get_context, the CLI and ingest
(there an InputError naming the line). A bad id never reaches the database."""

from __future__ import annotations

import datetime as dt
import json

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from pipeline.calendar import parse_scope
from pipeline.cli import cli
from pipeline.errors import IdError, InputError, ScopeError
from pipeline.ingest import import_files
from pipeline.read import get_context

TOO_BIG = 2**63
SCOPE, ANA = "guild:1150000000000000001", 1160000000000000001


@pytest.mark.parametrize("scope", [f"guild:{TOO_BIG}", "dm:9999999999999999999", f"channel:{2**64}",
                                   "guild:" + "9" * 5000])
def test_a_scope_id_beyond_64_bits_is_refused_before_anything_is_written(db_url, scope):
    with pytest.raises(ScopeError, match="2\\*\\*63") as err:
        parse_scope(scope)
    assert isinstance(err.value, IdError) and len(str(err.value)) < 200
    runner = CliRunner()
    assert runner.invoke(cli, ["--db", db_url, "db", "upgrade"]).exit_code == 0
    result = runner.invoke(cli, ["--db", db_url, "facts", "remember", "--scope", scope, "--user", str(ANA),
                                 "Ana studies statistics."])
    assert result.exit_code == 2 and "--scope" in result.output and "Traceback" not in result.output
    engine = sa.create_engine(db_url)
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT COUNT(*) FROM memory_facts")).scalar_one() == 0
    engine.dispose()


def test_a_scope_has_one_spelling():
    assert str(parse_scope("guild:0")) == "guild:0"
    with pytest.raises(ScopeError):
        parse_scope("guild:0009")  # stored rows are keyed by the scope's text: "guild:9" is the one


@pytest.mark.parametrize("user_id", [TOO_BIG, -1, 1.16e18, float(ANA), True, "１２", "12a", None])
def test_get_context_refuses_a_bad_user_id_as_bad_input_not_an_outage(store, user_id):
    with pytest.raises(IdError, match="user_id"):
        get_context(SCOPE, user_id, store=store)


@pytest.mark.parametrize("scope", [None, ["guild:1"], 5])
def test_get_context_refuses_a_scope_that_is_not_text(store, scope):
    with pytest.raises(ScopeError):
        get_context(scope, ANA, store=store)


def test_get_context_takes_an_id_as_int_or_digits(store):
    assert get_context(SCOPE, ANA, store=store) is None
    assert get_context(SCOPE, str(ANA), store=store) is None
    assert get_context(SCOPE, 2**63 - 1, store=store) is None


@pytest.mark.parametrize("value", ["1.16e18", "9223372036854775808", "-5", "１２", "1_000", "+5"])
def test_the_cli_refuses_a_bad_user_id(db_url, value):
    runner = CliRunner()
    assert runner.invoke(cli, ["--db", db_url, "db", "upgrade"]).exit_code == 0
    result = runner.invoke(cli, ["--db", db_url, "context", "--scope", SCOPE, "--user", value])
    assert result.exit_code == 2 and "--user" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("value", [1.16e18, 1160000000000000001.0, TOO_BIG, "1e18", True])
def test_an_import_refuses_a_bad_id_on_its_line(store, settings, tmp_path, value):
    row = {"message_id": "1", "guild_id": None, "channel_id": "5", "visibility": "dm", "user_id": value,
           "user_name": "Ana", "text": "hi", "ts": "2026-11-02T18:00:00+00:00"}
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(row | {"user_id": "7"}) + "\n" + json.dumps(row | {"message_id": "2"}) + "\n")
    with pytest.raises(InputError, match="user_id") as err:
        import_files(store, [path], settings)
    assert err.value.where == "line 2" and store.count_messages() == 0


@pytest.mark.parametrize("user_id", [TOO_BIG, 1.16e18, True])
def test_remember_and_forget_refuse_a_bad_user_id_before_writing(store, settings, user_id):
    import asyncio

    from pipeline.stages.facts import forget, remember
    from tests.helpers import make_context

    ctx = make_context(store, settings)
    with pytest.raises(IdError, match="user_id"):
        asyncio.run(remember(ctx, SCOPE, user_id, "Ana studies statistics."))
    with pytest.raises(IdError, match="user_id"):
        asyncio.run(forget(ctx, SCOPE, user_id, "statistics"))
    assert store.memory_facts() == [] and store.forgotten() == []
