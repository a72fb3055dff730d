"""Configuration errors name where the bad value came from (the file and key, or the environment
variable), once each, with a did-you-mean for a misspelt key and never the value; MEMPIPE_*
variables that name no setting are warned about, once per process."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from pipeline import config_sources
from pipeline.cli import cli
from pipeline.config import DEFAULT_CONFIG, Settings, load_settings
from pipeline.errors import ConfigError

SECRET = "my-very-own-secret-value-91"  # a value no token format matches: only "never echoed" hides it


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in list(os.environ):
        if name.upper().startswith("MEMPIPE_"):
            monkeypatch.delenv(name)
    monkeypatch.setattr(config_sources, "_warned", set())  # "once per process", per test


def write(tmp_path: Path, text: str, name: str = "mempipe.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_of(*args, **kwargs) -> str:
    with pytest.raises(ConfigError) as info:
        load_settings(*args, **kwargs)
    return str(info.value)


def warnings_in(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "pipeline.config" and r.levelno == logging.WARNING]


# ---------------------------------------------------------------- the source of a bad value

def test_a_bad_value_from_the_environment_names_the_variable_not_default_toml(monkeypatch):
    monkeypatch.setenv("MEMPIPE_SUMMARY__DAILY_CHARS", SECRET)
    message = error_of()
    assert message.startswith("invalid configuration: environment variable MEMPIPE_SUMMARY__DAILY_CHARS "
                              "(summary.daily_chars): ")
    assert "default.toml" not in message and SECRET not in message


def test_a_bad_value_from_a_file_names_the_file_and_key(tmp_path):
    path = write(tmp_path, "[summary]\ndaily_chars = 10\n")
    message = error_of(path)
    assert message.startswith(f"invalid configuration: {path}: summary.daily_chars: ")
    assert "greater than or equal to 40" in message and str(DEFAULT_CONFIG) not in message


def test_the_variable_wins_over_the_file_and_is_the_one_blamed(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMPIPE_RETENTION_DAYS", "3")
    assert error_of(write(tmp_path, "retention_days = 2\n")) == (
        "invalid configuration: environment variable MEMPIPE_RETENTION_DAYS (retention_days): "
        "Input should be greater than or equal to 8")


def test_a_guild_timezone_error_names_the_guild_and_where_it_was_set(tmp_path, monkeypatch):
    path = write(tmp_path, '[timezones.guilds]\n"11" = "Europe/Lisbon"\n"12" = "Mars/Olympus"\n')
    monkeypatch.setenv("MEMPIPE_TIMEZONES__GUILDS__13", "Atlantis/Capital")
    message = error_of(path)
    assert f"{path}: timezones.guilds.12: unknown timezone 'Mars/Olympus'" in message
    assert "environment variable MEMPIPE_TIMEZONES__GUILDS__13 (timezones.guilds.13): unknown timezone" in message
    assert "timezones.guilds.11" not in message


def test_a_whole_section_as_json_is_blamed_on_its_variable(monkeypatch):
    monkeypatch.setenv("MEMPIPE_SUMMARY", '{"historical_chars": 5}')
    assert "environment variable MEMPIPE_SUMMARY (summary.historical_chars): " in error_of()
    monkeypatch.setenv("MEMPIPE_SUMMARY", "not json")
    message = error_of()
    assert "environment variable MEMPIPE_SUMMARY: not readable as summary" in message
    assert "not json" not in message


def test_every_problem_is_one_line_printed_once_and_no_value_is_echoed(tmp_path, monkeypatch):
    path = write(tmp_path, f'retention_days = "{SECRET}"\n[gemini]\nbase_url = "http://x"\ntimeout_s = -1\n'
                           f'[memory]\nsame_fact = "{SECRET}"\n')
    monkeypatch.setenv("MEMPIPE_POOL_SIZE", "0")
    message = error_of(path)
    lines = message.splitlines()
    assert lines[0] == "invalid configuration:"
    assert sorted(line.split(": ")[0 if "environment" in line else 1] for line in lines[1:]) == [
        "  - environment variable MEMPIPE_POOL_SIZE (pool_size)", "gemini.timeout_s", "memory.same_fact",
        "retention_days"]
    assert all(line.startswith(f"  - {path}: ") for line in lines[1:] if "environment" not in line)
    assert SECRET not in message


# ---------------------------------------------------------------- did you mean

@pytest.mark.parametrize("text,where,guess", [
    ('[gemini]\nbaseurl = "http://127.0.0.1:8089"\n', "gemini.baseurl", "`base_url`"),
    ("retention_dayz = 9\n", "retention_dayz", "`retention_days`"),
    ("[summary]\ndaily_char = 400\n", "summary.daily_char", "`daily_chars`"),
    ("[scheduler]\nrefresh_minutes = 9\n", "scheduler.refresh_minutes", "`refresh_minute`"),
])
def test_a_misspelt_key_in_a_file_gets_a_suggestion_from_its_own_section(tmp_path, text, where, guess):
    path = write(tmp_path, text)
    assert error_of(path) == (f"invalid configuration: {path}: {where}: not a setting (a misspelt or unknown key); "
                              f"did you mean {guess}?")


def test_an_unknown_key_with_nothing_close_gets_no_guess(tmp_path):
    message = error_of(write(tmp_path, 'colour = "blue"\n'))
    assert message.endswith("colour: not a setting (a misspelt or unknown key)")


def test_a_misspelt_key_in_a_variable_gets_the_variable_to_use(monkeypatch):
    monkeypatch.setenv("MEMPIPE_GEMINI__BASEURL", "http://127.0.0.1:8089")
    assert error_of() == ("invalid configuration: environment variable MEMPIPE_GEMINI__BASEURL (gemini.baseurl): "
                          "not a setting (a misspelt or unknown key); did you mean MEMPIPE_GEMINI__BASE_URL?")


def test_a_secret_looking_key_gets_where_keys_go_not_a_guess_nor_its_value(tmp_path):
    message = error_of(write(tmp_path, f'[gemini]\napi_key = "{SECRET}"\n'))
    assert "gemini.api_key: not a setting" in message and "GEMINI_API_KEY" in message
    assert "did you mean" not in message and SECRET not in message


# ---------------------------------------------------------------- MEMPIPE_* variables that name nothing

def test_a_misspelt_prefix_is_warned_about_once_with_a_suggestion(monkeypatch, caplog):
    monkeypatch.setenv("MEMPIPE_SUMARY__DAILY_CHARS", "400")
    caplog.set_level(logging.WARNING, logger="pipeline.config")
    assert load_settings().summary.daily_chars == 300  # ignored, as pydantic-settings does: hence the warning
    load_settings()
    assert warnings_in(caplog) == [
        "the environment variable MEMPIPE_SUMARY__DAILY_CHARS is not a mempipe setting and is ignored; "
        "did you mean MEMPIPE_SUMMARY__DAILY_CHARS?"]


@pytest.mark.parametrize("name,guess", [
    ("MEMPIPE_RETENTION_DAYS__MAX", "MEMPIPE_RETENTION_DAYS"),  # below a plain value: ignored
    ("MEMPIPE_DATABASEURL", "MEMPIPE_DATABASE_URL"),
    ("MEMPIPE_CONFIG_FILE", "MEMPIPE_CONFIG"),  # an option's variable is a candidate too
    ("MEMPIPE_RUNNOW", "MEMPIPE_RUN_NOW"),
])
def test_each_variable_that_names_no_setting_is_warned_about(monkeypatch, caplog, name, guess):
    monkeypatch.setenv(name, SECRET)
    caplog.set_level(logging.WARNING, logger="pipeline.config")
    load_settings()
    (warning,) = warnings_in(caplog)
    assert warning.startswith(f"the environment variable {name} is not a mempipe setting") and warning.endswith(
        f"did you mean {guess}?")
    assert SECRET not in caplog.text


def test_a_variable_with_nothing_close_says_how_variables_are_named(monkeypatch, caplog):
    monkeypatch.setenv("MEMPIPE_X", "1")
    caplog.set_level(logging.WARNING, logger="pipeline.config")
    load_settings()
    (warning,) = warnings_in(caplog)
    assert "MEMPIPE_SUMMARY__DAILY_CHARS" in warning and "README" in warning


def test_settings_and_the_variables_mempipe_reads_otherwise_are_not_warned_about(monkeypatch, caplog):
    for name, value in [("MEMPIPE_SUMMARY__DAILY_CHARS", "400"), ("MEMPIPE_TIMEZONES__GUILDS__11", "Europe/Lisbon"),
                        ("MEMPIPE_GEMINI__MODELS__DAILY", "gemma-3-27b-it"), ("mempipe_retention_days", "9"),
                        ("MEMPIPE_DATABASE_URL", "sqlite:///x.db"), *((n, "1") for n in config_sources.OTHER_VARIABLES)]:
        monkeypatch.setenv(name, value)
    caplog.set_level(logging.WARNING, logger="pipeline.config")
    s = load_settings()
    assert (s.summary.daily_chars, s.retention_days, s.timezones.guilds) == (400, 9, {11: "Europe/Lisbon"})
    assert warnings_in(caplog) == []


def test_an_unknown_key_in_a_known_section_is_an_error_not_a_warning(monkeypatch, caplog):
    monkeypatch.setenv("MEMPIPE_SUMMARY__DAILY_CHARZ", "400")
    caplog.set_level(logging.WARNING, logger="pipeline.config")
    assert "did you mean MEMPIPE_SUMMARY__DAILY_CHARS?" in error_of()
    assert warnings_in(caplog) == []


def _option_variables(command: click.Command):
    for param in command.params:
        names = param.envvar if isinstance(param.envvar, (list, tuple)) else [param.envvar]
        yield from (n for n in names if n)
    for sub in getattr(command, "commands", {}).values():
        yield from _option_variables(sub)


def test_every_cli_option_variable_is_a_setting_or_listed_so_no_process_is_warned_about_it():
    # A bot sharing `mempipe serve`'s environment loads settings without the CLI: the list in
    # config_sources must hold every option's variable that is not a setting.
    variables = set(_option_variables(cli))
    assert {"MEMPIPE_DATABASE_URL", "MEMPIPE_CONFIG", "MEMPIPE_LOG_FORMAT"} <= variables
    unlisted = {n for n in variables if n not in config_sources.OTHER_VARIABLES
                and not config_sources.is_setting_variable(Settings, n)}
    assert not unlisted, f"add {sorted(unlisted)} to OTHER_VARIABLES in pipeline/config_sources.py"


# ---------------------------------------------------------------- the CLI

def test_the_cli_prints_a_config_error_once_naming_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMPIPE_SUMMARY__DAILY_CHARS", SECRET)
    monkeypatch.setenv("MEMPIPE_SUMARY__HISTORICAL_CHARS", "400")
    result = CliRunner().invoke(cli, ["--db", f"sqlite:///{tmp_path}/x.db", "runs"])
    assert result.exit_code == 1
    assert result.output.count("Error: invalid configuration: environment variable MEMPIPE_SUMMARY__DAILY_CHARS") == 1
    assert result.output.count("summary.daily_chars") == 1 and SECRET not in result.output
    assert "caused by" not in result.output
    assert not (tmp_path / "x.db").exists()


# ---------------------------------------------------------------- where a relative database path points

def test_a_relative_sqlite_path_in_a_config_file_is_relative_to_that_file(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = write(tmp_path, 'database_url = "sqlite:///data/mempipe.db"\n')
    assert load_settings(config).database_url == f"sqlite:///{tmp_path}/data/mempipe.db"
    absolute = write(tmp_path, 'database_url = "sqlite:////srv/m.db"\n', name="abs.toml")
    assert load_settings(absolute).database_url == "sqlite:////srv/m.db"
    server = write(tmp_path, 'database_url = "postgresql+psycopg://u@h/db"\n', name="pg.toml")
    assert load_settings(server).database_url == "postgresql+psycopg://u@h/db"


def test_a_relative_path_from_anywhere_else_stays_relative_to_the_working_directory(tmp_path, monkeypatch):
    config = write(tmp_path, 'database_url = "sqlite:///data/mempipe.db"\n')
    assert load_settings().database_url == "sqlite:///var/mempipe.db"  # the shipped default
    assert load_settings(config, database_url="sqlite:///cli.db").database_url == "sqlite:///cli.db"
    monkeypatch.setenv("MEMPIPE_DATABASE_URL", "sqlite:///env.db")
    assert load_settings(config).database_url == "sqlite:///env.db"
