"""Day boundaries follow each guild's timezone, tested around a local midnight with freezegun
(the CLI's `run` takes today from the system clock)."""

from __future__ import annotations

import datetime as dt

import pytest
from click.testing import CliRunner
from freezegun import freeze_time

from pipeline.cli import cli
from pipeline.ingest import ingest_messages

UTC = dt.timezone.utc
LISBON_GUILD, TOKYO_GUILD = 1150000000000000100, 1150000000000000200


def _msg(mid, guild, ts, text):
    return {"message_id": mid, "guild_id": guild, "channel_id": guild + 1, "visibility": "public",
            "user_id": 1160000000000000100, "user_name": "Mia", "text": text, "ts": ts}


@pytest.fixture
def tz_env(db_url, tmp_path, monkeypatch):
    config = tmp_path / "tz.toml"
    config.write_text(
        '[timezones.guilds]\n'
        f'"{LISBON_GUILD}" = "America/Sao_Paulo"\n'
        f'"{TOKYO_GUILD}" = "Asia/Tokyo"\n')
    runner = CliRunner()
    base = ["--db", db_url, "--config", str(config)]
    assert runner.invoke(cli, base + ["db", "upgrade"], catch_exceptions=False).exit_code == 0
    return runner, base


def _daily_days(runner, base, partition):
    from pipeline.store import Store

    import sqlalchemy as sa
    store = Store.open(base[1])
    with store.engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT day FROM partition_days WHERE partition = :p ORDER BY day"),
                            {"p": partition}).scalars().all()
    store.close()
    return [str(d)[:10] for d in rows]


def test_local_midnight_splits_days_per_guild(tz_env):
    runner, base = tz_env
    from pipeline.config import load_settings
    from pipeline.store import Store

    store = Store.open(base[1])
    settings = load_settings(base[3])
    # 02:30 UTC on 11-05 is 23:30 on 11-04 in São Paulo (UTC-3) and 11:30 on 11-05 in Tokyo.
    ingest_messages(store, [
        _msg(1, LISBON_GUILD, dt.datetime(2026, 11, 5, 2, 30, tzinfo=UTC), "Late night build session before bed."),
        _msg(2, LISBON_GUILD, dt.datetime(2026, 11, 5, 3, 30, tzinfo=UTC), "Just after local midnight now."),
        _msg(3, TOKYO_GUILD, dt.datetime(2026, 11, 4, 14, 30, tzinfo=UTC), "Late evening in Tokyo already."),
        _msg(4, TOKYO_GUILD, dt.datetime(2026, 11, 4, 15, 30, tzinfo=UTC), "Past midnight in Tokyo."),
    ], settings)
    store.close()

    # Just before São Paulo midnight (02:59 UTC = 23:59 local on 11-04): its day 1 is 11-04.
    with freeze_time("2026-11-05 02:59:00"):
        result = runner.invoke(cli, base + ["run"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert _daily_days(runner, base, f"guild:{LISBON_GUILD}") == ["2026-11-04"]
    assert _daily_days(runner, base, f"guild:{TOKYO_GUILD}") == ["2026-11-04", "2026-11-05"]
    ctx = runner.invoke(cli, base + ["context", "--scope", f"guild:{LISBON_GUILD}", "--user", "1160000000000000100"])
    assert "Late night build session" in ctx.output and "after local midnight" not in ctx.output

    # One minute later it is 11-05 in São Paulo: the second message starts a new day 1.
    with freeze_time("2026-11-05 03:01:00"):
        result = runner.invoke(cli, base + ["run"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert _daily_days(runner, base, f"guild:{LISBON_GUILD}") == ["2026-11-04", "2026-11-05"]
    ctx = runner.invoke(cli, base + ["context", "--scope", f"guild:{LISBON_GUILD}", "--user", "1160000000000000100"])
    assert ctx.stdout.startswith("Today, 2026-11-05: Mia: “Just after local midnight now.”")  # São Paulo's day
    assert "\nPast week: 2026-11-04: Mia: “Late night build session" in ctx.stdout  # now in the past week


def test_day_bounds_on_dst_change():
    from zoneinfo import ZoneInfo

    from pipeline.calendar import day_bounds

    start, end = day_bounds(dt.date(2026, 3, 29), ZoneInfo("Europe/Lisbon"))  # clocks go forward
    assert end - start == dt.timedelta(hours=23)
    start, end = day_bounds(dt.date(2026, 10, 25), ZoneInfo("Europe/Lisbon"))  # clocks go back
    assert end - start == dt.timedelta(hours=25)
    assert start == dt.datetime(2026, 10, 24, 23, 0, tzinfo=UTC)
