"""Settings: config/default.toml, then `--config FILE`, then MEMPIPE_* environment variables."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from .config_sources import Sources, warn_unknown_variables
from .db.location import DEFAULT_DATABASE_URL, absolute_url
from .errors import ConfigError, IdError
from .ids import parse_id
from .resources import config_dir
from .safety import looks_random, redact, secret_kind

DEFAULT_CONFIG = config_dir() / "default.toml"
# Files the TOML source reads, set by load_settings() for the duration of one construction
# (pydantic-settings builds its sources from the class, not the instance).
_TOML_FILES: tuple[Path, ...] = ()


def _check_zone(name: str) -> str:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown timezone {name!r} (use an IANA name like 'Europe/Lisbon')") from exc
    return name


class Timezones(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not a silent default

    default: str = "UTC"
    # checked one zone at a time: an error names the guild (and so the key or variable it came from)
    guilds: dict[int, Annotated[str, AfterValidator(_check_zone)]] = Field(default_factory=dict)

    _check_default = field_validator("default")(_check_zone)

    def for_guild(self, guild_id: int | None) -> ZoneInfo:
        if guild_id is not None and guild_id in self.guilds:
            return ZoneInfo(self.guilds[guild_id])
        return ZoneInfo(self.default)


class SummaryLengths(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not a silent default

    daily_chars: int = Field(300, ge=40)
    historical_chars: int = Field(500, ge=40)
    context_chars: int = Field(1200, ge=80, description="the recent part of a context (today + past week)")
    condense: Literal["cut", "model"] = Field(
        "cut", description="a past week, recent part or a day's partial summaries over their budget: cut to fit "
                           "(no call; a fold reads only new messages) or condensed by the model")

    def text_key(self, *, chunks: bool = False) -> dict:
        """What a summarizer's texts depend on (its fingerprint): the lengths, and for one that
        reads a big day in chunks (`chunks`) `condense` when it is "model" (the chunks' partial
        summaries are then reduced by the model, not cut and joined). Left out otherwise, so that
        rows made before the setting existed stay fresh; the historical and merge stages' own
        hashes say which way a row was made."""
        return self.model_dump(exclude=None if chunks and self.condense == "model" else {"condense"})


class MemorySettings(BaseModel):
    """Long-term memory (pipeline/memory/): what a fact must pass to be stored, when two facts
    are the same, and how long a profile may be."""

    model_config = ConfigDict(extra="forbid")

    min_confidence: float = Field(0.7, ge=0, le=1, description="below it a proposed fact is rejected")
    min_grounding: float = Field(0.45, gt=0, le=1,
                                 description="share of a fact's content words found in the messages it cites")
    same_fact: float = Field(0.85, gt=0, le=1, description="similarity at or above which two facts are one")
    global_min_confidence: float = Field(0.9, ge=0, le=1, description="a fact promoted to global needs this")
    profile_words: int = Field(2000, ge=50, description="a profile's length budget")


class ModelLimits(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not a silent default

    """Free-tier limits change often: configuration, never constants."""

    rpm: int | None = Field(None, ge=1, description="requests per minute")
    tpm: int | None = Field(None, ge=1, description="prompt tokens per minute")
    rpd: int | None = Field(None, ge=1, description="requests per day (then the fallback is used)")


class ModelPrice(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not a silent default

    input_per_million: float = Field(0.0, ge=0)
    output_per_million: float = Field(0.0, ge=0)


# Google's model pages: Gemini 2.5 and 3 models answer up to 65,536 tokens; Gemma 3 and Gemini 2.0
# up to 8,192, also the floor for a model not listed here.
_LONG_ANSWERS = re.compile(r"(models/)?gemini-(2\.5|3)")


def model_output_limit(model: str) -> int:
    return 65_536 if _LONG_ANSWERS.match(model) else 8_192


def model_input_budget(model: str) -> int:
    """A chunk of a busy day: each chunk repeats the prompt's fixed part (instructions, speaker
    list), so bigger chunks cost fewer prompt tokens; its answer grows with it (budget.answer_tokens),
    which the models with long answers can give. Gemma 3 (8,192 out, and 15,000 tokens a minute on
    the free tier) and the rest keep 8,000."""
    return 16_000 if _LONG_ANSWERS.match(model) else 8_000


class GeminiSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not a silent default

    # The API key is read from the environment variable named here; it is never logged or stored.
    api_key_env: str = "GEMINI_API_KEY"
    base_url: str | None = None
    api_version: str | None = None
    models: dict[str, str] = Field(default_factory=lambda: {
        "daily": "gemini-2.5-flash", "historical": "gemini-2.5-flash", "merge": "gemini-2.5-flash",
        "forget": "gemini-2.5-flash"})
    timeout_s: float = Field(60.0, gt=0)
    max_attempts: int = Field(4, ge=1, description="per item, then the extractive fallback")
    run_retry_budget: int = Field(200, ge=0, description="retries per run across all items (with workers: per "
                                  "worker process, refilled at its first job of a newer run)")
    backoff_initial_s: float = Field(1.0, ge=0)
    backoff_max_s: float = Field(60.0, ge=0)
    concurrency: int = Field(4, ge=1)
    input_budget_tokens: int | None = Field(None, ge=200, description="largest prompt sent, bigger days are read in "
                                            "chunks; unset: model_input_budget (Gemini 2.5+ 16,000, others 8,000)")
    max_output_tokens: int | None = Field(None, ge=64, description="longest answer asked; unset: the model's own "
                                          "limit (model_output_limit: Gemini 2.5+ 65,536, others 8,192)")
    answer_tokens_per_s: float = Field(100.0, gt=0, description="a request waits timeout_s plus its expected "
                                       "answer at this speed (a long day's answer takes minutes)")
    thinking_budget: int = Field(0, ge=-1, description="thinking tokens (billed as output); -1: the model decides")
    degraded_retry_budget: int = Field(3, ge=0, description="later runs that retry a degraded row")
    rate_window_s: float = Field(60.0, gt=0, description="the limits' window: leave at 60 (tests shrink it)")
    limits: dict[str, ModelLimits] = Field(default_factory=dict)
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    # Every process on one API key shares one quota: the limits above are counted in the database
    # (PostgreSQL; pipeline/llm/shared_limiter.py). Implied by workers.enabled.
    shared_quota: bool = Field(False, description="count the limits in the database, shared by every process")
    # Nightly work through the Batch API (half price, answers within hours; pipeline/llm/batch.py):
    # a run submits the requests it would send, and a later run (or serve's poll) uses the answers.
    batch: bool = Field(False, description="send nightly requests as Batch API jobs")
    batch_poll_s: float = Field(600.0, gt=0, description="serve checks submitted batch jobs this often")
    batch_timeout_h: float = Field(24.0, gt=0, description="a job still unfinished after this is given up: its items go interactive")
    batch_price_factor: float = Field(0.5, gt=0, le=1, description="batch price as a share of the interactive price")

    @field_validator("api_key_env")
    @classmethod
    def _check_key_env(cls, v: str) -> str:
        # The key itself pasted here would end up in error messages ("set the variable <key>").
        if secret_kind(v) or looks_random(v) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
            raise ValueError("must be the name of the environment variable holding the API key "
                             "(like GEMINI_API_KEY), never the key itself")
        return v

    def model_for(self, operation: str) -> str:
        return self.models.get(operation) or self.models["daily"]

    def output_limit(self, model: str) -> int:
        """The longest answer asked of `model`: max_output_tokens, else the model's own limit."""
        return self.max_output_tokens or model_output_limit(model)

    @property
    def input_budget(self) -> int:
        """The largest prompt sent to any of the configured models: input_budget_tokens, else the
        smallest of their defaults (one budget for every operation: the prompts share helpers)."""
        return self.input_budget_tokens or min(model_input_budget(m) for m in {*self.models.values()})


class SchedulerSettings(BaseModel):
    """`mempipe serve`: when the jobs run, how missed runs are handled, and leader election."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not a silent default

    timezone: str = Field("UTC", description="zone of refresh_minute / retention_hour (rollovers use each guild's)")
    refresh_minute: int = Field(7, ge=0, le=59, description="refresh: every hour at this minute")
    rollover_minute: int = Field(5, ge=0, le=59, description="rollover: this many minutes after each local midnight")
    retention_hour: int = Field(3, ge=0, le=23, description="retention: once a day at this hour")
    retention_minute: int = Field(30, ge=0, le=59)
    # A missed run (the machine slept, the loop was blocked) still runs when it is at most this
    # late. 24 h = one rollover period: after any sleep the latest missed midnight is < 24 h old,
    # so it always runs — once, because missed runs are coalesced.
    misfire_grace_s: int = Field(86400, ge=1)
    takeover_s: float = Field(30.0, gt=0, description="a standby tries to take over this often")
    heartbeat_s: float = Field(10.0, gt=0, description="the leader checks its lock and records a heartbeat this often")
    retention_batch_size: int = Field(5000, ge=1, description="rows deleted per transaction")
    run_on_start: bool = Field(False, description="run the refresh as soon as a process becomes leader")

    _check_timezone = field_validator("timezone")(_check_zone)


class RefreshSettings(BaseModel):
    """The hourly refresh (pipeline/stages/daily.py `_fold_waits`): today's fold of a few new
    messages waits for more, since the fold's fixed prompt would outweigh them."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not a silent default

    # A fold's fixed part (instructions, system text, speaker list) is ~450-600 prompt tokens;
    # 8000 characters of new text (~2000 tokens) make it a quarter or less (at 2400 it was about
    # as much as the text). The bot's "today" still lags by at most fold_max_wait_h. 0: fold
    # every refresh.
    fold_min_chars: int = Field(8000, ge=0, description="today's new messages fold once this much text waits")
    fold_max_wait_h: float = Field(3.0, ge=0, description="or once the oldest of them is this many hours old")
    # A trickle (less new text than a fold's own fixed part: 1,835 characters with the system
    # text for one speaker, more per speaker) would cost more in that fixed part than it reads,
    # and a bot that keeps the channel's recent messages holds that little text anyway: it waits
    # up to fold_quiet_wait_h instead (no effect when that is not longer than fold_max_wait_h).
    # 0 chars: no such tier.
    fold_quiet_chars: int = Field(2000, ge=0, description="new text shorter than this is a trickle")
    fold_quiet_wait_h: float = Field(12.0, ge=0, description="a trickle folds once its oldest message is this old")


class ControlsSettings(BaseModel):
    """User controls (pipeline/controls/): who may act on someone else's memory."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not a silent default

    # A control (show, export, pause, resume, clear, erase, audit, remember, forget) proceeds only
    # when the requester is its subject or one of these user ids; the CLI runs as the operator.
    admins: list[int] = Field(default_factory=list, description="user ids allowed to act on anyone's memory")

    @field_validator("admins", mode="before")
    @classmethod
    def _check_admins(cls, v):
        if not isinstance(v, (list, tuple)):
            raise ValueError("must be a list of user ids, e.g. admins = [1160000000000000001]")
        try:  # the one id rule (pipeline/ids.py): a float has already lost an id's last digits
            return [parse_id(x, "admin id") for x in v]
        except IdError as exc:
            raise ValueError(str(exc)) from None


class SearchSettings(BaseModel):
    """Search (pipeline/search/, pipeline.read `search` and `get_context(..., query=...)`)."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not a silent default

    # get_context with a query appends related memories while the whole text stays within this
    # (estimated tokens, ~4 characters each); the stored context itself is never cut.
    context_budget_tokens: int = Field(2000, ge=1, description="a context with search hits stays within this")
    context_hits: int = Field(5, ge=1, le=100, description="at most this many hits appended to a context")


class WorkerSettings(BaseModel):
    """`mempipe worker` (pipeline/workers/): nightly items run as procrastinate jobs on PostgreSQL."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not a silent default

    enabled: bool = Field(False, description="runs hand their items to `mempipe worker` processes (PostgreSQL)")
    queue: str = Field("mempipe", min_length=1, description="the procrastinate queue the items go to")
    concurrency: int = Field(4, ge=1, description="jobs at once in one worker process (`worker --concurrency`)")
    heartbeat_s: float = Field(10.0, gt=0, description="a worker records that it is alive this often")
    stalled_s: float = Field(30.0, gt=0, description="a worker silent this long is dead: its jobs are retried")
    no_worker_s: float = Field(600.0, gt=0, description="a run whose jobs no worker runs for this long fails")

    @model_validator(mode="after")
    def _stalled_after_missed_heartbeats(self) -> "WorkerSettings":
        # one late heartbeat (a busy database, a slow network) must not make a live worker dead
        if self.stalled_s < 2 * self.heartbeat_s:
            raise ValueError(f"stalled_s ({self.stalled_s:g}) must be at least twice heartbeat_s "
                             f"({self.heartbeat_s:g}), or a live worker whose heartbeat is late has its jobs run "
                             f"again: set stalled_s to {2 * self.heartbeat_s:g} or more (runs and workers must agree "
                             f"on both)")
        return self


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="MEMPIPE_", env_nested_delimiter="__", extra="forbid"
    )

    # relative to the working directory (pipeline/db/location.py); in a --config file, to that file
    database_url: str = DEFAULT_DATABASE_URL
    summarizer: Literal["extractive", "gemini"] = "extractive"
    retention_days: int = Field(30, ge=8)
    max_message_chars: int = Field(2000, ge=16)
    # an import at least as large as chat_history was builds the table's secondary indexes once at
    # its end (pipeline/store/ingest.py defer_message_indexes); on PostgreSQL that holds the
    # table's lock until the import commits, so a bot's inserts wait: false keeps them row by row
    defer_import_indexes: bool = Field(True, description="a large import into a small chat_history builds its "
                                       "indexes at its end (PostgreSQL: the table is locked until it commits)")
    # PostgreSQL connection pool (SQLite ignores these): connections kept open, and extra ones
    # allowed on top of them under load.
    pool_size: int = Field(5, ge=1)
    pool_max_overflow: int = Field(10, ge=0)
    # a run with the extractive summarizer shares each stage out to this many processes (0: one
    # per CPU); a model's runs stay in one (pipeline/stages/processes.py)
    processes: int = Field(1, ge=0, description="processes a run with the extractive summarizer uses (0: one per CPU)")
    timezones: Timezones = Field(default_factory=Timezones)
    summary: SummaryLengths = Field(default_factory=SummaryLengths)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    gemini: GeminiSettings = Field(default_factory=GeminiSettings)
    scheduler: SchedulerSettings = Field(default_factory=SchedulerSettings)
    refresh: RefreshSettings = Field(default_factory=RefreshSettings)
    controls: ControlsSettings = Field(default_factory=ControlsSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    workers: WorkerSettings = Field(default_factory=WorkerSettings)


    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = TomlConfigSettingsSource(settings_cls, toml_file=list(_TOML_FILES), deep_merge=True)
        return (init_settings, env_settings, toml)


def load_settings(config_file: str | os.PathLike | None = None, **overrides) -> Settings:
    """Defaults < config/default.toml < config_file < MEMPIPE_* env < explicit overrides.

    A relative SQLite path in `config_file` is relative to that file's directory (a config file
    travels with its database); anywhere else (default.toml, MEMPIPE_DATABASE_URL, an override)
    it stays relative to the working directory. A MEMPIPE_* variable that names no setting is
    warned about (logging, once per process). A refused value raises ConfigError with one line
    per problem, naming the file and key or the variable it came from, never the value."""
    if not DEFAULT_CONFIG.is_file():  # shipped in the package: missing means a broken install
        raise ConfigError(f"default configuration {DEFAULT_CONFIG} is missing: the mempipe installation "
                          "is incomplete; reinstall mempipe")
    files = [DEFAULT_CONFIG]
    if config_file is not None:
        path = Path(config_file)
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist (pass an existing TOML file to --config)")
        files.append(path)
    arguments = {k: v for k, v in overrides.items() if v is not None}
    sources = Sources(Settings, [(f, _read_toml(f)) for f in files], os.environ, arguments)
    warn_unknown_variables(Settings, os.environ)
    global _TOML_FILES
    _TOML_FILES = tuple(files)
    try:
        settings = Settings(**arguments)
    except ValidationError as exc:
        # `from None`: pydantic's own text (printed by the CLI as the cause) quotes input values
        problems = sources.problems(exc)
        raise ConfigError(_invalid(problems)) from None
    except SettingsError as exc:  # a MEMPIPE_* variable pydantic-settings could not parse
        field = re.search(r'field "([^"]+)"', str(exc))
        raise ConfigError(_invalid([sources.unreadable_variable(field[1] if field else "?")])) from None
    finally:
        _TOML_FILES = ()
    supplier, _ = sources.supplier(("database_url",))
    if supplier is not None and supplier.kind == "file" and supplier.path != DEFAULT_CONFIG:
        settings.database_url = absolute_url(settings.database_url, supplier.path.absolute().parent)
    return settings


def _read_toml(path: Path) -> dict:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:  # it gives a line and column, never the value
        raise ConfigError(f"invalid configuration: {path} is not valid TOML: {redact(str(exc))}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read the config file {path}: {exc.strerror}") from None


def _invalid(problems: list[str]) -> str:
    if len(problems) == 1:
        return f"invalid configuration: {problems[0]}"
    return "invalid configuration:\n" + "\n".join(f"  - {p}" for p in problems)
