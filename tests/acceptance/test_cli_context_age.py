"""`mempipe context` and `contexts` say how old a context is (issue 15): the day 1 it was made
for and when, and — once its scope's current day 1 (the guild's timezone) has moved on — that it
is stale and by how many days. Run in-process (click's CliRunner) on SQLite and PostgreSQL, with
the command's clock injected."""

from __future__ import annotations

import datetime as dt
import importlib
import json

import pytest

from pipeline.clock import fixed_clock

CLI_MAIN = importlib.import_module("pipeline.cli.main")  # the module (pipeline.cli exports a function `main`)

G, SECRET = 1150000000000002501, 1170000000000002501
ANA = 1160000000000002501
UTC = dt.timezone.utc


@pytest.fixture
def aged(mp, tmp_path, monkeypatch):
    """Ana's words in a restricted channel of a guild that lives at UTC+14, replayed on Nov 4;
    `at(...)` sets the clock the CLI reads."""
    config = tmp_path / "tz.toml"
    config.write_text(f'[timezones.guilds]\n"{G}" = "Pacific/Kiritimati"\n', encoding="utf-8")
    rows = [{"message_id": str(1190000000000250000 + i), "guild_id": str(G), "channel_id": str(SECRET),
             "visibility": "restricted", "user_id": str(ANA), "user_name": "Ana", "text": text, "ts": ts}
            for i, (text, ts) in enumerate([("The harbour crane is fixed.", "2026-11-02T20:00:00+00:00"),
                                            ("I painted the crane blue.", "2026-11-03T20:00:00+00:00")])]
    data = tmp_path / "old.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    def at(when: dt.datetime) -> None:
        monkeypatch.setattr(CLI_MAIN, "system_clock", fixed_clock(when))  # the clock State gives a command

    def cli(*args, ok=True):
        return mp("--config", str(config), *args, ok=ok)

    at(dt.datetime(2026, 11, 4, 6, 30, tzinfo=UTC))  # 20:30 on Nov 4 in Kiritimati
    cli("import", str(data))
    cli("replay", "--from", "2026-11-03", "--to", "2026-11-04")
    return cli, at


def test_a_current_context_shows_its_day_and_when_it_was_made(aged):
    cli, _at = aged
    out = cli("context", "--scope", f"channel:{SECRET}", "--user", str(ANA))
    assert out.stderr.strip() == "as of 2026-11-04 (made 2026-11-04 06:30 UTC)"
    assert out.stdout.startswith("Today, 2026-11-04: Ana: “I painted the crane blue.”")  # the text a bot reads
    assert "\nPast week: 2026-11-03: Ana: “The harbour crane is fixed.”" in out.stdout
    as_json = json.loads(cli("context", "--scope", f"channel:{SECRET}", "--user", str(ANA), "--json").stdout)
    assert (as_json["as_of_day"], as_json["current_day1"], as_json["stale_days"]) == ("2026-11-04", "2026-11-04", 0)


def test_an_old_context_says_it_is_stale_and_by_how_many_days(aged):
    cli, at = aged
    at(dt.datetime(2026, 11, 23, 11, tzinfo=UTC))  # Nov 24 in the guild's timezone, Nov 23 in UTC
    out = cli("context", "--scope", f"channel:{SECRET}", "--user", str(ANA))
    assert out.stderr.strip() == (f"as of 2026-11-04 (made 2026-11-04 06:30 UTC); STALE: 20 days older than "
                                  f"channel:{SECRET}'s current day 1, 2026-11-24 (`mempipe run` brings it up to date)")
    assert out.stdout.startswith("Today, 2026-11-04: ")  # the text itself is dated too
    as_json = json.loads(cli("context", "--scope", f"channel:{SECRET}", "--user", str(ANA), "--json").stdout)
    assert (as_json["current_day1"], as_json["stale_days"]) == ("2026-11-24", 20)
    listing = cli("contexts", "--user", str(ANA)).stdout
    assert listing.startswith(f"== channel:{SECRET} user {ANA}: as of 2026-11-04 (made 2026-11-04 06:30 UTC); "
                              f"STALE: 20 days older than")
    rows = json.loads(cli("contexts", "--user", str(ANA), "--json").stdout)
    assert [(r["scope"], r["current_day1"], r["stale_days"]) for r in rows] == [(f"channel:{SECRET}", "2026-11-24", 20)]
