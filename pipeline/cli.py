"""The `mempipe` command: a thin layer over the library. Data goes to stdout, progress and
errors to stderr; every option has an environment variable; errors say what to do."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import sys
from typing import Any

import click

from . import __version__
from .calendar import parse_scope
from .clock import system_clock
from .config import load_settings
from .errors import MempipeError
from .logs import FORMATS, configure_logging
from .store import Store

SNOWFLAKE = click.IntRange(0, 2**63 - 1)  # 64-bit ids; larger numbers are refused, not overflowed
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


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

    def store(self, check_schema: bool = True) -> Store:
        store = Store.open(self.settings.database_url, check_schema=check_schema,
                           pool_size=self.settings.pool_size, max_overflow=self.settings.pool_max_overflow)
        click.get_current_context().call_on_close(store.close)  # release pooled connections
        return store

    def context(self, store: Store, *, force: bool = False, dry_run: bool = False):
        from .stages.context import RunContext
        from .summarize import make_summarizer

        return RunContext(store=store, summarizer=make_summarizer(self.settings), settings=self.settings,
                          clock=self.clock, force=force, dry_run=dry_run)


def _json_default(value: Any):
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    raise TypeError(type(value).__name__)


def _echo_json(value: Any) -> None:
    click.echo(json.dumps(value, default=_json_default, ensure_ascii=False, indent=2))


def _date(_ctx, param, value):
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date; use YYYY-MM-DD") from None


class MempipeGroup(click.Group):
    """Turns library errors into `Error: …` (exit 1); tracebacks only with -v."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
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
              help="Database URL: sqlite:///var/mempipe.db (default) or postgresql+psycopg://user@host/db.")
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


# ---------------------------------------------------------------- db

@cli.group()
def db():
    """Create and upgrade the database schema."""


@db.command("upgrade")
@click.pass_obj
def db_upgrade(state: State):
    """Apply pending migrations from sql/migrations (safe to run again).

    Example: mempipe --db sqlite:///var/mempipe.db db upgrade
    """
    store = state.store(check_schema=False)
    applied = store.upgrade()
    for m in applied:
        click.echo(f"applied {m.path.name}", err=True)
    click.echo(f"schema up to date on {store.safe_url} ({len(applied)} migration(s) applied)")


@db.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def db_status(state: State, as_json: bool):
    """Show applied and pending migrations and table sizes."""
    from .db.migrations import applied_versions, discover

    store = state.store(check_schema=False)
    with store.transaction() as conn:
        done = applied_versions(conn)
    migrations = [{"file": m.path.name, "applied": m.version in done} for m in discover(store.dialect)]
    counts = store.table_counts() if all(m["applied"] for m in migrations) else {}
    if as_json:
        _echo_json({"database": store.safe_url, "migrations": migrations, "tables": counts})
        return
    click.echo(f"database: {store.safe_url}")
    for m in migrations:
        click.echo(f"  {'applied' if m['applied'] else 'PENDING'}  {m['file']}")
    for table, n in counts.items():
        click.echo(f"  {table}: {n} rows")


# ---------------------------------------------------------------- import

@cli.command("import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["jsonl", "discord"]), default=None,
              help="Input format; default: by extension (.jsonl -> jsonl, .json -> discord).")
@click.option("--visibility", type=click.Choice(["public", "restricted"]), default=None,
              help="For Discord guild exports: mark the channel restricted (role-gated). DMs are always dm.")
@click.option("--include-bots", is_flag=True, help="Keep messages written by bot accounts (skipped by default).")
@click.pass_obj
def import_cmd(state: State, paths, fmt, visibility, include_bots):
    """Import chat messages. Idempotent: re-importing adds nothing; newer edits replace text.

    The whole import is one transaction: on any bad line nothing is written, and the error
    names the file and line (or message id).

    Example: mempipe import samples/community.jsonl
    """
    from .ingest import import_files

    store = state.store()
    with click.progressbar(length=0, label="importing", file=sys.stderr, show_pos=True) as bar:
        def progress(n):
            bar.update(n)
        report = import_files(store, list(paths), state.settings, fmt=fmt,
                              visibility=None if visibility == "public" else visibility,
                              include_bots=include_bots, progress=progress)
    click.echo(f"read {report.read} messages, wrote {report.written}, skipped {report.skipped}, "
               f"cut {report.cut} over-long texts")


# ---------------------------------------------------------------- run / replay

def _print_result(result, dry_run: bool):
    s = result.stats
    if dry_run:
        click.echo(f"dry run: {result.plan['partition_days']} partition-days with messages; "
                   f"{result.plan['daily_calls']} daily summarizer calls would be made "
                   f"({s.cache_hits} unchanged); historical and merge calls follow for the users of changed "
                   f"partition-days. Nothing was written.")
        if s.planned_prompt_tokens:
            click.echo(f"estimate for the daily stage: {s.planned_llm_calls} LLM requests, "
                       f"~{s.planned_prompt_tokens} prompt tokens (estimated at 4 characters per token)")
        return
    click.echo(f"run {result.run_id}: {s.partition_days} partition-days, {s.summarizer_calls} summarizer calls "
               f"({s.daily_computed} daily, {s.historical_computed} historical, {s.contexts_written} contexts written), "
               f"{s.cache_hits} cache hits, {s.fallbacks} fallbacks, {s.errors} errors, "
               f"{s.dropped_user_ids} dropped user ids"
               + (f"; {s.llm_calls} LLM requests, {s.retries} retries, {s.prompt_tokens} prompt + "
                  f"{s.output_tokens} output tokens, ~${s.estimated_cost:.4f}" if s.llm_calls else ""))


def _progress_bar(label: str):
    bar = click.progressbar(length=1, label=label, file=sys.stderr, show_pos=True)

    def progress(done: int, total: int):
        bar.length = max(total, 1)
        bar.update(done - bar.pos)

    return bar, progress


def _execute_with_progress(state: State, kind: str, date_from, date_to, guild, force: bool, dry_run: bool) -> None:
    from .runner import execute

    rc = state.context(state.store(), force=force, dry_run=dry_run)
    bar, progress = _progress_bar(kind)
    with bar:
        result = asyncio.run(execute(rc, kind, date_from, date_to, guild, progress))
    _print_result(result, dry_run)


@cli.command("run")
@click.option("--date", "day", callback=_date, metavar="YYYY-MM-DD",
              help="Day 1 (local date). Default: today in each guild's timezone.")
@click.option("--guild", type=SNOWFLAKE, default=None, help="Only this guild's partitions.")
@click.option("--force", is_flag=True, help="Recompute even rows whose inputs did not change.")
@click.option("--dry-run", is_flag=True, help="Say what would be computed; write nothing.")
@click.pass_obj
def run_cmd(state: State, day, guild, force, dry_run):
    """Bring every partition up to date as of day 1 (safe to run from cron every hour).

    Example: mempipe run            # today, per guild timezone
    """
    _execute_with_progress(state, "run", day, day, guild, force, dry_run)


@cli.command("replay")
@click.option("--from", "date_from", required=True, callback=_date, metavar="YYYY-MM-DD", help="First local day.")
@click.option("--to", "date_to", required=True, callback=_date, metavar="YYYY-MM-DD",
              help="Last local day; contexts are made as of this day.")
@click.option("--guild", type=SNOWFLAKE, default=None, help="Only this guild's partitions.")
@click.option("--force", is_flag=True, help="Recompute even rows whose inputs did not change.")
@click.option("--dry-run", is_flag=True, help="Say what would be computed (partition-days, calls); write nothing.")
@click.pass_obj
def replay_cmd(state: State, date_from, date_to, guild, force, dry_run):
    """Recompute daily summaries for every day in a range, then historical summaries and contexts
    as of the last day. Unchanged inputs cost nothing: a replay after a prompt or model change
    redoes exactly the rows it touches.

    Example: mempipe replay --from 2026-11-01 --to 2026-11-04 --dry-run
    """
    if date_to < date_from:
        raise click.BadParameter(f"--to {date_to} is before --from {date_from}", param_hint="--to")
    _execute_with_progress(state, "replay", date_from, date_to, guild, force, dry_run)


@cli.command("runs")
@click.option("--limit", default=20, show_default=True, help="How many of the newest runs.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def runs_cmd(state: State, limit, as_json):
    """List pipeline runs, newest first: status, duration and counts. A failed run says why."""
    rows = state.store().runs(limit)
    for r in rows:
        r["duration_s"] = round((r["finished_at"] - r["started_at"]).total_seconds(), 3) if r["finished_at"] else None
    if as_json:
        _echo_json(rows)
        return
    click.echo(f"{'id':>4} {'kind':6} {'status':7} {'range':23} {'secs':>7} {'p-days':>6} {'calls':>6} "
               f"{'hits':>6} {'llm':>5} {'retry':>5} {'fallb':>5} {'errs':>4} {'tokens':>8} {'cost$':>7}")
    for r in rows:
        span = f"{r['date_from'] or 'today'}..{r['date_to'] or 'today'}"
        click.echo(f"{r['id']:>4} {r['kind']:6} {r['status']:7} {span:23} {r['duration_s'] if r['duration_s'] is not None else '-':>7} "
                   f"{r['partition_days']:>6} {r['summarizer_calls']:>6} {r['cache_hits']:>6} {r['llm_calls']:>5} "
                   f"{r['retries']:>5} {r['fallbacks']:>5} {r['errors']:>4} {r['prompt_tokens'] + r['output_tokens']:>8} "
                   f"{r['estimated_cost']:>7.4f}{'  ' + r['error'] if r['error'] else ''}{'  (dry run)' if r['dry_run'] else ''}")


# ---------------------------------------------------------------- reading

def _scope(_ctx, _param, value):
    if value is None:
        return None
    try:
        return str(parse_scope(value))
    except MempipeError as exc:
        raise click.BadParameter(str(exc)) from None


@cli.command("context")
@click.option("--scope", required=True, callback=_scope, help="guild:<id>, channel:<id> or dm:<channel id>.")
@click.option("--user", "user_id", required=True, type=SNOWFLAKE, help="User id.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def context_cmd(state: State, scope, user_id, as_json):
    """Print the context a bot reads for USER in SCOPE (exit 1 if there is none).

    Example: mempipe context --scope guild:1150000000000000001 --user 1160000000000000001
    """
    from .read import get_context

    c = get_context(scope, user_id, store=state.store())
    if c is None:
        raise MempipeError(f"no context for user {user_id} in {scope} (has `mempipe run` been run since they spoke?)")
    if as_json:
        _echo_json(c._asdict())
    else:
        click.echo(c.text)


@cli.command("contexts")
@click.option("--scope", callback=_scope, default=None, help="Only this scope.")
@click.option("--user", "user_id", type=SNOWFLAKE, default=None, help="Only this user.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def contexts_cmd(state: State, scope, user_id, as_json):
    """List context rows (all, or one scope's / one user's)."""
    rows = state.store().contexts(scope, user_id)
    if as_json:
        _echo_json(rows)
        return
    for r in rows:
        flag = " [degraded]" if r["degraded"] else ""
        click.echo(f"== {r['scope']} user {r['user_id']} (as of {r['as_of_day']}){flag}")
        click.echo(r["context"])


# ---------------------------------------------------------------- facts

async def _closing(rc, coro):
    """Await `coro`, then release the summarizer's HTTP client on the same event loop."""
    try:
        return await coro
    finally:
        close = getattr(rc.summarizer, "aclose", None)
        if close is not None:
            await close()


@cli.group()
def facts():
    """Remember and forget facts about a user (per scope)."""


_scope_opt = click.option("--scope", required=True, callback=_scope, help="guild:<id>, channel:<id> or dm:<channel id>.")
_user_opt = click.option("--user", "user_id", required=True, type=SNOWFLAKE, help="User id.")


@facts.command("remember")
@_scope_opt
@_user_opt
@click.argument("text")
@click.pass_obj
def facts_remember(state: State, scope, user_id, text):
    """Add a third-person fact about USER in SCOPE, and refresh their contexts.

    Example: mempipe facts remember --scope guild:1 --user 42 "Ana studies statistics."
    """
    from .stages.facts import remember

    store = state.store()
    rc = state.context(store)
    blob = asyncio.run(_closing(rc, remember(rc, scope, user_id, text)))
    click.echo(blob)


@facts.command("forget")
@_scope_opt
@_user_opt
@click.argument("text")
@click.pass_obj
def facts_forget(state: State, scope, user_id, text):
    """Forget a fact: removed from the facts, scrubbed from every stored summary and context of
    the user, and kept out of summaries made later. Exit 0 either way; prints whether it was found.

    Example: mempipe facts forget --scope guild:1 --user 42 "statistics exam"
    """
    from .stages.facts import forget

    store = state.store()
    rc = state.context(store)
    found = asyncio.run(_closing(rc, forget(rc, scope, user_id, text)))
    click.echo("forgotten" if found else "not found (recorded anyway: it will be kept out of future summaries)")


@facts.command("show")
@_scope_opt
@_user_opt
@click.pass_obj
def facts_show(state: State, scope, user_id):
    """Print the facts stored for USER in SCOPE."""
    click.echo(state.store().facts(scope, user_id))


# ---------------------------------------------------------------- serve / status

@cli.command("serve")
@click.option("--log-format", type=click.Choice(FORMATS), default=None, envvar="MEMPIPE_LOG_FORMAT",
              show_envvar=True, help="text (default) or json: one JSON object per line, e.g. per job run.")
@click.option("--run-now", is_flag=True, envvar="MEMPIPE_RUN_NOW", show_envvar=True,
              help="Run the refresh as soon as this process becomes leader (else: scheduler.run_on_start).")
@click.pass_obj
def serve_cmd(state: State, log_format, run_now):
    """Run the scheduler service: the hourly refresh, a rollover after each timezone's local
    midnight and the daily retention ([scheduler] in the config).

    Start it on several machines against one database: one process leads (PostgreSQL advisory
    lock, or a lock file next to a SQLite database), the others stand by and take over within
    scheduler.takeover_s when it dies. SIGTERM or SIGINT stop it cleanly: no new work, the job in
    flight is cancelled (finished partition-days stay, the one in progress is not written), exit 0.
    One log line per job run: job, partitions, calls, tokens, duration, outcome.

    \b
    Example: mempipe --db postgresql+psycopg://mempipe@db/mempipe serve --log-format json
    """
    import os
    import signal

    from .scheduler.service import serve

    fmt = log_format or state.log_format
    level = logging.DEBUG if state.verbose > 1 else logging.INFO if state.verbose else logging.WARNING
    configure_logging(fmt, level, timestamps=True)
    logging.getLogger("pipeline").setLevel(min(level, logging.INFO))  # job lines, leader changes
    log = logging.getLogger("pipeline.scheduler")
    settings = state.settings
    store = Store.open(settings.database_url, pool_size=settings.pool_size, max_overflow=settings.pool_max_overflow)
    click.get_current_context().call_on_close(store.close)

    async def main():
        from .summarize import make_summarizer

        close = getattr(make_summarizer(settings), "aclose", None)  # a config error fails now, not at the first job
        if close is not None:
            await close()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def on_signal(name: str):
            if stop.is_set():
                log.error("%s again: exiting at once", name)
                os._exit(1)
            log.info("%s received: stopping", name)
            stop.set()

        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, on_signal, sig.name)
        try:
            await serve(settings, clock=state.clock, stop_event=stop, run_now=run_now or None, store=store)
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)

    asyncio.run(main())


def _ts(value) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else "never"


@cli.command("retention")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def retention_cmd(state: State, as_json: bool):
    """Delete what aged out (chat history and daily summaries older than retention_days,
    historical summaries past their window, contexts not refreshed since), in bounded batches.
    Facts are kept. `mempipe serve` runs this daily; run it from cron when you use cron instead.

    Example: mempipe retention
    """
    from .retention import apply_retention

    deleted = apply_retention(state.store(), state.settings, now=state.clock(),
                              batch_size=state.settings.scheduler.retention_batch_size)
    if as_json:
        _echo_json(deleted)
    else:
        click.echo(", ".join(f"{table}: {n} deleted" for table, n in deleted.items()))


@cli.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def status_cmd(state: State, as_json):
    """Show the scheduler service: which `mempipe serve` leads (holder, pid, host, heartbeat
    age), how each job last ended, and when each is due next. Read from the database, so it
    works from any machine.

    Example: mempipe status --json
    """
    from .scheduler.status import status

    report = status(state.store(), state.settings, now=state.clock())
    if as_json:
        _echo_json(report)
        return
    lead = report["leader"]
    if lead is None:
        click.echo("leader: none yet (no `mempipe serve` has led on this database)")
    elif lead["state"] == "leading":
        click.echo(f"leader: {lead['holder']} (pid {lead['pid']} on {lead['host']}) since {_ts(lead['since'])} UTC, "
                   f"heartbeat {lead['heartbeat_age_s']:.0f} s ago")
    elif lead["state"] == "stopped":
        click.echo(f"leader: none — {lead['holder']} stopped at {_ts(lead['released_at'])} UTC")
    else:
        click.echo(f"leader: STALE — {lead['holder']} (pid {lead['pid']} on {lead['host']}) last heartbeat "
                   f"{lead['heartbeat_age_s']:.0f} s ago: stuck or dead (a standby takes over when its lock is free)")
    click.echo(f"{'job':28} {'last start (UTC)':19}  {'outcome':9} {'secs':>7}  next due (UTC)")
    for j in report["jobs"]:
        secs = f"{j['last_duration_s']:.1f}" if j["last_duration_s"] is not None else "-"
        due = _ts(j["next_run_at"]) if j["next_run_at"] else "-"
        if j["next_run_source"] == "missed":
            due += "  (missed: runs when a leader starts)"
        elif not j["configured"]:
            due = "(no longer configured)"
        click.echo(f"{j['job']:28} {_ts(j['last_started_at']):19}  {j['last_outcome'] or '-':9} {secs:>7}  {due}")
        if j["last_error"]:
            click.echo(f"{'':28} error: {j['last_error']}")


def main() -> None:
    cli(prog_name="mempipe")


if __name__ == "__main__":
    main()
