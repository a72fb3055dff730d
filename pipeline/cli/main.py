"""The `mempipe` command: a thin layer over the library. Data goes to stdout, progress and
errors to stderr; every option has an environment variable; errors say what to do.

This module holds the group, its shared state and option helpers; the commands live by topic in
data.py (db, import, run, replay, runs), memory.py (context, contexts, facts, profile,
memory-files), search.py (search), users.py (user …), messages.py (messages delete) and
service.py (serve, retention, status) and worker.py (worker)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import os
import signal
from typing import Any, Iterator

import click

from .. import __version__
from ..calendar import parse_scope
from ..clock import system_clock
from ..config import load_settings
from ..errors import IdError, MempipeError
from ..ids import bare_chat_id, parse_id, shown
from ..logs import FORMATS, configure_logging
from ..store import Store


class _Id(click.ParamType):
    """A 64-bit platform id, by the one rule of pipeline/ids.py (click's INT would take "1_000",
    "+5" and other scripts' digits). `what` names the id in the error ("guild id")."""

    name = "id"

    def __init__(self, what: str | None = None):
        self.what = what

    def convert(self, value, param, ctx):
        try:
            return parse_id(value)
        except IdError as exc:
            if self.what is None:
                self.fail(str(exc), param, ctx)
            bare = bare_chat_id(str(value)) if self.what == "chat id" else None
            hint = f" (a Bot API chat id? pass the id Telegram Desktop writes: {bare})" if bare is not None else ""
            self.fail(f"{shown(value)} is not a {self.what}: a platform id is a string of digits "
                      f"(at most 2**63-1), e.g. 1150000000000000001{hint}", param, ctx)


SNOWFLAKE = _Id()
GUILD_ID = _Id("guild id")
USER_ID, CHAT_ID = _Id("user id"), _Id("chat id")
# What an interrupted command says it kept (ctx.meta, set by the command; default below).
INTERRUPTED = "mempipe.interrupted"
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class Terminated(Exception):
    """A command stopped by SIGTERM (run_until_sigterm): said like Ctrl-C, exit 143 (128 + 15)."""


class State:
    log_format = "text"

    def __init__(self, db: str | None, config: str | None, verbose: int):
        self.db, self.config, self.verbose = db, config, verbose
        self.clock = system_clock
        self._settings = None

    @property
    def settings(self):
        if self._settings is None:
            overrides = {"database_url": self.db} if self.db else {}
            self._settings = load_settings(self.config, **overrides)
        return self._settings

    def app(self, check_schema: bool = True):
        """The command's App (pipeline/app.py), closed when the command ends."""
        from ..app import App

        app = App.open(self.settings, check_schema=check_schema, clock=self.clock)
        click.get_current_context().call_on_close(app.close)  # release pooled connections
        return app

    def store(self, check_schema: bool = True) -> Store:
        return self.app(check_schema).store


def _json_default(value: Any):
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    raise TypeError(type(value).__name__)


def _echo_json(value: Any) -> None:
    click.echo(json.dumps(value, default=_json_default, ensure_ascii=False, indent=2))


# The days a run can compute: those of the times an import stores (pipeline/ingest/model.py, 1970 to
# 9998 UTC). Day 1 minus a week, or a day's end in UTC+14, left datetime's range further out: a
# traceback and a failed run row instead of a usage error.
FIRST_DAY, LAST_DAY = dt.date(1970, 1, 1), dt.date(9998, 12, 31)


def _date(_ctx, param, value):
    if value is None:
        return None
    try:
        day = dt.date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date; use YYYY-MM-DD") from None
    if not FIRST_DAY <= day <= LAST_DAY:
        raise click.BadParameter(f"{day} is out of range: use a day from {FIRST_DAY} to {LAST_DAY}")
    return day


class MempipeGroup(click.Group):
    """Turns library errors into `Error: …` (exit 1); tracebacks only with -v. Ctrl-C exits 130
    (the shell's code for SIGINT, not click's "Aborted!" and 1) and says what was kept."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            kept = ctx.meta.get(INTERRUPTED)  # meta is shared with the command's own context
            click.echo(f"Interrupted{': ' + kept if kept else '.'}", err=True)
            ctx.exit(130)
        except Terminated:
            kept = ctx.meta.get(INTERRUPTED)
            click.echo(f"Terminated{': ' + kept if kept else '.'}", err=True)
            ctx.exit(143)
        except MempipeError as exc:
            verbose = ctx.obj.verbose if isinstance(ctx.obj, State) else 0
            if verbose:
                raise
            click.echo(f"Error: {exc}", err=True)
            cause = exc.__cause__
            while cause is not None:
                click.echo(f"  caused by: {cause.__class__.__name__}: {cause}", err=True)
                cause = cause.__cause__
            ctx.exit(1)


@click.group(cls=MempipeGroup, context_settings=CONTEXT_SETTINGS)
@click.option("--db", envvar="MEMPIPE_DATABASE_URL", show_envvar=True, metavar="URL",
              help="Database URL: sqlite:///path/to/file.db or postgresql+psycopg://user@host/db. Default "
                   "sqlite:///var/mempipe.db, i.e. var/mempipe.db under the working directory (a relative path "
                   "set in a --config file is relative to that file). Only `db upgrade` creates a database.")
@click.option("--config", "config_file", envvar="MEMPIPE_CONFIG", show_envvar=True, metavar="FILE",
              type=click.Path(dir_okay=False), help="TOML file overriding config/default.toml.")
@click.option("-v", "--verbose", count=True, help="More logging; -v also shows tracebacks on errors.")
@click.option("--log-format", type=click.Choice(FORMATS), default="text", show_default=True,
              envvar="MEMPIPE_LOG_FORMAT", show_envvar=True,
              help="Log lines on stderr: text, or one JSON object per line (for log shippers).")
@click.version_option(__version__, prog_name="mempipe")
@click.pass_context
def cli(ctx, db, config_file, verbose, log_format):
    """mempipe: nightly memory for community chat bots.

    Messages go into chat_history (`mempipe import`, or pipeline.ingest.ingest_messages from a
    bot); `mempipe run` / `mempipe replay` turn them into daily and historical summaries and one
    context row per (scope, user); bots read that row (`mempipe context`, pipeline.read.get_context,
    or the SQL in the README).
    """
    configure_logging(log_format, logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING)
    ctx.obj = State(db, config_file, verbose)
    ctx.obj.log_format = log_format


def _scope(_ctx, _param, value):
    if value is None:
        return None
    try:
        return str(parse_scope(value))
    except MempipeError as exc:
        raise click.BadParameter(str(exc)) from None



@contextlib.contextmanager
def stop_on_signals(stop: asyncio.Event, log: logging.Logger, doing: str = "stopping") -> Iterator[None]:
    """Inside a running event loop, for a long-running command (`serve`, `worker`): SIGTERM or
    SIGINT sets `stop` (logged as "<signal> received: <doing>"); a second one exits at once (1)."""
    loop = asyncio.get_running_loop()

    def on_signal(name: str) -> None:
        if stop.is_set():
            log.error("%s again: exiting at once", name)
            os._exit(1)
        log.info("%s received: %s", name, doing)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig.name)
    try:
        yield
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


async def run_until_sigterm(coro, stopped: list[str]):
    """Await `coro` as the main task of asyncio.run; SIGTERM cancels it as Ctrl-C does (the
    default action killed the process mid-run and left its `pipeline_runs` row `running` for good).
    `stopped` gets "SIGTERM"; the caller raises Terminated. A second SIGTERM kills at once."""
    loop, task = asyncio.get_running_loop(), asyncio.current_task()

    def on_sigterm() -> None:
        stopped.append("SIGTERM")
        loop.remove_signal_handler(signal.SIGTERM)  # the default action again: a second one kills
        task.cancel()

    loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    try:
        return await coro
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


# Options several commands share: the same flag, help and checks everywhere.
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")
scope_option = click.option("--scope", required=True, callback=_scope, help="guild:<id>, channel:<id> or dm:<channel id>.")
user_option = click.option("--user", "user_id", required=True, type=SNOWFLAKE, help="User id.")


def main() -> None:
    cli(prog_name="mempipe")
