"""Settings: defaults < config/default.toml < --config FILE < MEMPIPE_* env < explicit overrides."""

from __future__ import annotations

import os
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from pipeline.config import DEFAULT_CONFIG, Settings, load_settings
from pipeline.errors import ConfigError, MempipeError

EXAMPLE = Path(__file__).resolve().parents[2] / "config" / "example-override.toml"
GUILD = 1150000000000000001


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    """A developer's own MEMPIPE_* variables must not leak into these tests."""
    for name in list(os.environ):
        if name.startswith("MEMPIPE_"):
            monkeypatch.delenv(name)


def write(tmp_path, text: str, name: str = "override.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- defaults

def test_defaults():
    s = load_settings()
    assert s.database_url == "sqlite:///var/mempipe.db"
    assert s.summarizer == "extractive"
    assert s.retention_days == 30
    assert s.max_message_chars == 2000
    assert s.timezones.default == "UTC"
    assert s.timezones.guilds == {}
    assert (s.summary.daily_chars, s.summary.historical_chars, s.summary.context_chars) == (300, 500, 1200)
    assert (s.memory.min_confidence, s.memory.min_grounding, s.memory.same_fact, s.memory.global_min_confidence,
            s.memory.profile_words) == (0.7, 0.45, 0.85, 0.9, 2000)


def test_default_toml_exists_and_agrees_with_the_code_defaults():
    assert DEFAULT_CONFIG.is_file()
    from_file, from_code = load_settings(), Settings()
    for section in ("database_url", "summarizer", "retention_days", "max_message_chars", "defer_import_indexes",
                    "pool_size", "pool_max_overflow", "timezones", "summary", "memory", "search", "refresh"):
        assert getattr(from_file, section) == getattr(from_code, section), section


def test_default_timezone_is_used_for_every_guild_and_dms():
    s = load_settings()
    assert s.timezones.for_guild(GUILD) == ZoneInfo("UTC")
    assert s.timezones.for_guild(None) == ZoneInfo("UTC")


# ---------------------------------------------------------------- override files

def test_override_file_deep_merges(tmp_path):
    s = load_settings(write(tmp_path, "[summary]\ndaily_chars = 420\n"))
    assert s.summary.daily_chars == 420
    # Everything else keeps its default, including the rest of [summary].
    assert (s.summary.historical_chars, s.summary.context_chars) == (500, 1200)
    assert s.retention_days == 30
    assert s.timezones.default == "UTC"
    assert s.database_url == "sqlite:///var/mempipe.db"


def test_override_file_is_not_remembered_by_the_next_load(tmp_path):
    assert load_settings(write(tmp_path, "retention_days = 9\n")).retention_days == 9
    assert load_settings().retention_days == 30


def test_example_override():
    s = load_settings(EXAMPLE)
    assert s.retention_days == 14
    assert s.summary.daily_chars == 400
    assert s.summary.historical_chars == 500
    assert s.timezones.default == "Europe/Berlin"
    assert s.timezones.guilds == {GUILD: "America/New_York"}  # string key in TOML, int here
    assert s.timezones.for_guild(GUILD) == ZoneInfo("America/New_York")
    assert s.timezones.for_guild(GUILD + 1) == ZoneInfo("Europe/Berlin")
    assert s.timezones.for_guild(None) == ZoneInfo("Europe/Berlin")


def test_guild_ids_are_exact_integers(tmp_path):
    big = 2**63 - 1
    s = load_settings(write(tmp_path, f'[timezones.guilds]\n"{big}" = "Asia/Tokyo"\n'))
    assert s.timezones.guilds == {big: "Asia/Tokyo"}
    assert s.timezones.for_guild(big) == ZoneInfo("Asia/Tokyo")
    assert s.timezones.for_guild(big - 1) == ZoneInfo("UTC")


def test_missing_config_file(tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match="does not exist") as info:
        load_settings(missing)
    assert str(missing) in str(info.value)
    assert isinstance(info.value, MempipeError)


def test_a_directory_is_not_a_config_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path)


# ---------------------------------------------------------------- environment and overrides

def test_env_overrides_the_file(tmp_path, monkeypatch):
    path = write(tmp_path, "[summary]\ndaily_chars = 420\nhistorical_chars = 450\n")
    monkeypatch.setenv("MEMPIPE_SUMMARY__DAILY_CHARS", "450")
    s = load_settings(path)
    assert s.summary.daily_chars == 450
    assert s.summary.historical_chars == 450  # from the file: the env only replaced one key
    assert s.summary.context_chars == 1200    # from the defaults


def test_env_overrides_the_defaults(monkeypatch):
    monkeypatch.setenv("MEMPIPE_RETENTION_DAYS", "21")
    monkeypatch.setenv("MEMPIPE_TIMEZONES__DEFAULT", "Asia/Tokyo")
    s = load_settings()
    assert s.retention_days == 21
    assert s.timezones.default == "Asia/Tokyo"
    assert s.summary.daily_chars == 300


def test_explicit_overrides_beat_env_and_none_is_ignored(monkeypatch, tmp_path):
    monkeypatch.setenv("MEMPIPE_DATABASE_URL", "sqlite:///env.db")
    s = load_settings(write(tmp_path, 'database_url = "sqlite:///file.db"\n'), database_url="sqlite:///cli.db")
    assert s.database_url == "sqlite:///cli.db"
    assert load_settings(database_url=None).database_url == "sqlite:///env.db"


# ---------------------------------------------------------------- invalid configuration

def test_unknown_default_timezone(tmp_path):
    path = write(tmp_path, '[timezones]\ndefault = "Mars/Olympus_Mons"\n')
    with pytest.raises(ConfigError, match="Mars/Olympus_Mons") as info:
        load_settings(path)
    assert "unknown timezone" in str(info.value)
    assert str(path) in str(info.value)  # says which file


def test_unknown_guild_timezone(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown timezone 'Nowhere/Town'"):
        load_settings(write(tmp_path, f'[timezones.guilds]\n"{GUILD}" = "Nowhere/Town"\n'))


def test_unknown_timezone_from_env(monkeypatch):
    monkeypatch.setenv("MEMPIPE_TIMEZONES__DEFAULT", "Atlantis/Capital")
    with pytest.raises(ConfigError, match="Atlantis/Capital"):
        load_settings()


@pytest.mark.parametrize("text,needle", [
    ("retention_days = 3\n", "retention_days"),
    ("pool_size = 0\n", "pool_size"),
    ("pool_max_overflow = -1\n", "pool_max_overflow"),
    ("[summary]\ndaily_chars = 10\n", "daily_chars"),
    ('summarizer = "gpt"\n', "summarizer"),
    ("colour = \"blue\"\n", "colour"),
])
def test_invalid_values_and_unknown_keys_are_refused_by_name(tmp_path, text, needle):
    with pytest.raises(ConfigError, match=needle):
        load_settings(write(tmp_path, text))


@pytest.mark.parametrize("text", ["[summary]\ndaily_char = 400\n", '[timezones]\ndefualt = "Europe/Lisbon"\n'])
def test_misspelt_keys_inside_a_section_are_refused(tmp_path, text):
    with pytest.raises(ConfigError):
        load_settings(write(tmp_path, text))


def test_malformed_toml_names_the_file(tmp_path):
    path = write(tmp_path, "retention_days = \n", name="broken.toml")
    with pytest.raises(ConfigError, match="broken.toml"):
        load_settings(path)


# ---------------------------------------------------------------- connection pool

def test_pool_defaults_and_env_override(monkeypatch):
    s = load_settings()
    assert (s.pool_size, s.pool_max_overflow) == (5, 10)
    monkeypatch.setenv("MEMPIPE_POOL_SIZE", "2")
    monkeypatch.setenv("MEMPIPE_POOL_MAX_OVERFLOW", "0")
    s = load_settings()
    assert (s.pool_size, s.pool_max_overflow) == (2, 0)


def test_store_open_sizes_the_postgresql_pool():
    from pipeline.db import make_engine
    from pipeline.store import Store

    url = "postgresql+psycopg://nobody@127.0.0.1:1/none"  # engines connect lazily: no server needed
    default = make_engine(url)
    assert (default.pool.size(), default.pool._max_overflow) == (5, 10)
    store = Store.open(url, check_schema=False, pool_size=3, max_overflow=1)
    try:
        assert (store.engine.pool.size(), store.engine.pool._max_overflow) == (3, 1)
    finally:
        store.close()
        default.dispose()


# ---------------------------------------------------------------- secrets never echoed

KEY = "AIza" + "SyD4k9vQ2mX7pL1wR8tN3bF6hJ0cZ5gY2eU"  # built from pieces: no literal key in the repository
PLAIN = "my-very-own-secret-value-91"  # a value no token format matches


@pytest.mark.parametrize("text,field,value", [
    (f'[gemini]\napi_key = "{KEY}"\n', "gemini.api_key", KEY),
    (f'gemini_api_key = "{PLAIN}"\n', "gemini_api_key", PLAIN),
    (f'[gemini]\napi_key_env = "{KEY}"\n', "gemini.api_key_env", KEY),  # the key where its variable's name goes
    (f'retention_days = "{PLAIN}"\n', "retention_days", PLAIN),  # no input value is ever echoed
    (f'[summary]\ndaily_chars = "{PLAIN}"\n', "summary.daily_chars", PLAIN),
])
def test_config_errors_name_the_field_never_the_value(tmp_path, text, field, value):
    with pytest.raises(ConfigError) as info:
        load_settings(write(tmp_path, text))
    message = str(info.value)
    assert field in message and value not in message
    cause = info.value.__cause__
    while cause is not None:  # the CLI prints the cause chain too
        assert value not in str(cause)
        cause = cause.__cause__


def test_a_key_in_the_environment_under_a_setting_name_is_not_echoed(monkeypatch):
    monkeypatch.setenv("MEMPIPE_GEMINI__API_KEY", KEY)
    with pytest.raises(ConfigError, match=r"gemini\.api_key") as info:
        load_settings()
    assert KEY not in str(info.value)
    assert "environment variable" in str(info.value)  # says where the key belongs


def test_the_cli_prints_config_errors_without_the_value(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from pipeline.cli import cli

    monkeypatch.delenv("MEMPIPE_CONFIG", raising=False)
    path = write(tmp_path, f'[gemini]\napi_key = "{KEY}"\n')
    result = CliRunner().invoke(cli, ["--db", f"sqlite:///{tmp_path}/x.db", "--config", str(path), "db", "status"])
    assert result.exit_code == 1 and "gemini.api_key" in result.output
    assert KEY not in result.output


def test_api_key_env_must_name_a_variable(tmp_path):
    assert load_settings(write(tmp_path, '[gemini]\napi_key_env = "MY_GEMINI_KEY"\n')).gemini.api_key_env == "MY_GEMINI_KEY"
    with pytest.raises(ConfigError, match="gemini.api_key_env"):
        load_settings(write(tmp_path, '[gemini]\napi_key_env = "not a name"\n'))
