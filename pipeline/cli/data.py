"""`mempipe db …`, `import`, `run`, `replay`, `runs`."""

from __future__ import annotations

import asyncio
import datetime as dt
import sys

import click

from . import report
from .main import (
    CHAT_ID,
    GUILD_ID,
    INTERRUPTED,
    USER_ID,
    State,
    Terminated,
    _date,
    _echo_json,
    cli,
    json_option,
    run_until_sigterm,
)

# ---------------------------------------------------------------- db

@cli.group()
def db():
    """Create and upgrade the database schema."""


@db.command("upgrade")
@click.pass_obj
def db_upgrade(state: State):
    """Apply pending migrations from sql/migrations (safe to run again). On PostgreSQL, also
    create the job queue's tables (procrastinate's) for `mempipe worker` when they are missing.

    Example: mempipe --db sqlite:///var/mempipe.db db upgrade
    """
    store = state.store(check_schema=False)
    applied = store.upgrade()
    for m in applied:
        click.echo(f"applied {m.path.name}", err=True)
    if store.dialect == "postgresql":  # the job queue of `mempipe worker` (pipeline/workers/queue.py)
        from ..workers.queue import ensure_schema

        if ensure_schema(store.engine.url):
            click.echo("applied the job queue's schema (procrastinate)", err=True)
    click.echo(f"schema up to date on {store.safe_url} ({len(applied)} migration(s) applied)")


@db.command("status")
@json_option
@click.pass_obj
def db_status(state: State, as_json: bool):
    """Show applied and pending migrations and table sizes."""
    from ..db.migrations import applied_versions, discover

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
@click.option("--format", "fmt", type=click.Choice(["jsonl", "discord", "telegram"]), default=None,
              help="Input format; default: by extension and content (.jsonl -> jsonl; .json -> a DiscordChatExporter "
                   "or a Telegram Desktop export, told apart by its keys).")
@click.option("--visibility", type=click.Choice(["public", "restricted"]), default=None,
              help="Mark the export's channels restricted: Discord guild channels, Telegram groups and channels. "
                   "DMs are always dm.")
@click.option("--include-bots", is_flag=True,
              help="Keep messages written by bot accounts (Discord's); skipped by default. Changes nothing for "
                   "Telegram: its exports mark no bots in groups, and the only bot_chat imported is the one with "
                   "your bot.")
@click.option("--bot-user-id", "bot_user_ids", type=USER_ID, multiple=True, metavar="ID",
              help="Telegram: your bot's user id (repeatable). Its own messages are skipped and counted; a member's "
                   "chat with it is keyed by the member, as the bot sees it. Private chats are imported only when "
                   "the bot is one side of them: without this option, none is.")
@click.option("--restricted-chat", "restricted_chats", type=CHAT_ID, multiple=True, metavar="CHAT_ID",
              help="Telegram: this group (or channel) is restricted: its own partition, channel:CHAT_ID "
                   "(repeatable).")
@click.option("--include-channels", is_flag=True,
              help="Telegram: import channels, and posts sent as a channel or as the group (skipped by default).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the counts as one JSON object (read, new, edited, unchanged, skipped, skipped_by, cut, "
                   "deletions, deleted, not_found).")
@click.pass_obj
def import_cmd(state: State, paths, fmt, visibility, include_bots, bot_user_ids, restricted_chats, include_channels,
               as_json):
    """Import chat messages: JSONL, DiscordChatExporter or Telegram Desktop JSON exports.
    Idempotent: re-importing adds nothing; newer edits replace text.

    The whole import is one transaction: on any bad line nothing is written, and the error
    names the file and line (or message id). Prints what each row read did; the counts add up:
    read = new + edited + unchanged + skipped (+ deletion rows).

    \b
    Example: mempipe import samples/community.jsonl
             mempipe import result.json --bot-user-id 8000000001
    """
    from ..ingest import import_files

    store = state.store()
    click.get_current_context().meta[INTERRUPTED] = "nothing was imported (an import is one transaction)"
    # the number of messages is not known before they are read: a bar of unknown length shows the
    # count so far (length=0 drew "5000/0" and a full bar from the start)
    with click.progressbar((_ for _ in ()), label="importing", file=sys.stderr, show_pos=True) as bar:
        def progress(n):
            bar.update(n)
        report = import_files(store, list(paths), state.settings, fmt=fmt,
                              visibility=None if visibility == "public" else visibility,
                              include_bots=include_bots, bot_user_ids=bot_user_ids,
                              restricted_chats=restricted_chats, include_channels=include_channels,
                              progress=progress, clock=state.clock)
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        _echo_json(report.as_dict())
        return
    skipped = ", ".join(f"{reason}: {n}" for reason, n in sorted(report.skipped_by.items()))
    click.echo(f"read {report.read} messages: {report.new} new, {report.edited} edited, {report.unchanged} unchanged "
               f"(already stored); skipped {report.skipped}{f' ({skipped})' if skipped else ''}"
               + (f"; cut {report.cut} over-long texts" if report.cut else "")
               + (f"; {report.deletions} deletion rows: deleted {report.deleted} messages ({report.not_found} rows "
                  f"matched no stored message)" if report.deletions else ""))


# ---------------------------------------------------------------- run / replay

EXIT_CODES_HELP = ("Exit codes: 0 all fine; 1 error; 2 usage error (a bad option, an unknown --guild); "
                   "3 finished, but some items degraded (the model failed and the extractive fallback "
                   "was used, or an item failed): later runs retry them; 130 interrupted (Ctrl-C: "
                   "finished work is kept); 143 terminated (SIGTERM: the same).")


def _progress_bar(label: str):
    bar = click.progressbar(length=1, label=label, file=sys.stderr, show_pos=True)

    def progress(done: int, total: int):
        bar.length = max(total, 1)
        bar.update(done - bar.pos)

    return bar, progress


def _check_guild(store, guild: int) -> None:
    """--guild must name a guild with messages: an unknown one would run nothing and say nothing."""
    known = sorted({c["guild_id"] for c in store.channels().values() if c["guild_id"] is not None})
    if guild in known:
        return
    if not known:
        hint = "no guild has any yet: import messages first (`mempipe import`)"
    elif len(known) <= 10:
        hint = "the guilds with messages: " + ", ".join(map(str, known))
    else:
        hint = (f"{len(known)} guilds have messages, e.g. {', '.join(map(str, known[:5]))}; the channels table "
                f"lists them all (SELECT DISTINCT guild_id FROM channels)")
    raise click.BadParameter(f"guild {guild} has no messages in {store.safe_url}; {hint}", param_hint="--guild")


# UTC+14 (Kiritimati) is the first place a day begins: a later day has begun nowhere.
FIRST_TIMEZONE = dt.timedelta(hours=14)


def _check_not_future(state: State, day, option: str) -> None:
    """Day 1 after today is refused: a run as of 2099 (a typo'd year) would make contexts as of
    2099, and later runs never overwrite a context made as of a later day, so the bot would read
    them until then."""
    latest = (state.clock() + FIRST_TIMEZONE).date()
    if day is not None and day > latest:
        raise click.BadParameter(
            f"{day} has not begun in any timezone yet (the latest today is {latest}, in UTC+14): contexts made "
            f"as of a future day would stay in place of every later run's (a context made as of a later day is "
            f"never overwritten); give today or an earlier day", param_hint=option)


def _execute_with_progress(state: State, kind: str, date_from, date_to, guild, force: bool, dry_run: bool,
                           as_json: bool) -> None:
    from ..runner import execute

    _check_not_future(state, date_to, "--date" if kind == "run" else "--to")
    app = state.app()
    if guild is not None:
        _check_guild(app.store, guild)
    rc = app.run_context(force=force, dry_run=dry_run)
    click.get_current_context().meta[INTERRUPTED] = (
        "finished work is kept (each partition-day, past week and context is written when it is done) and "
        "`mempipe runs` shows this run as failed (interrupted, or terminated); the same command again does only "
        "what is left")
    bar, progress = _progress_bar(kind)
    stopped: list[str] = []
    with bar:
        try:
            result = asyncio.run(run_until_sigterm(execute(
                rc, kind, date_from, date_to, guild, progress,
                on_cancel=lambda: ("terminated (SIGTERM)" if stopped else "interrupted (SIGINT)")
                + ": finished work is kept"), stopped))
        except asyncio.CancelledError:
            if not stopped:
                raise
            raise Terminated() from None
    row = app.store.run(result.run_id)
    if as_json:
        _echo_json(report.as_json(row))
    elif dry_run:
        for line in report.dry_run_lines(row, rc.summarizer.kind, result.plan.get("estimated")):
            click.echo(line)
    else:
        for line in report.run_lines(row, rc.summarizer.kind, stale=result.stats.contexts_stale):
            click.echo(line)
    code = report.exit_code(row)
    if code == report.EXIT_DEGRADED:
        click.echo(f"finished with degraded items: {row['fallbacks']} fell back to the extractive summary "
                   f"(marked degraded), {row['errors']} failed (not written); later runs retry them (exit 3)",
                   err=True)
        click.get_current_context().exit(code)


@cli.command("run", epilog=EXIT_CODES_HELP)
@click.option("--date", "day", callback=_date, metavar="YYYY-MM-DD",
              help="Day 1 (local date). Default: today in each guild's timezone.")
@click.option("--guild", type=GUILD_ID, default=None, help="Only this guild's partitions (it must have messages).")
@click.option("--force", is_flag=True, help="Recompute even rows whose inputs did not change.")
@click.option("--dry-run", is_flag=True, help="Say what would be computed and the LLM requests it would make; "
                                              "write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the run as one JSON object (the keys of `runs --json`).")
@click.pass_obj
def run_cmd(state: State, day, guild, force, dry_run, as_json):
    """Bring every partition up to date as of day 1 (safe to run from cron every hour).

    Prints how many items (partition-days, past weeks, contexts) were summarized, passed through
    without a model (and why) or failed; they add up to the items.

    Example: mempipe run            # today, per guild timezone
    """
    _execute_with_progress(state, "run", day, day, guild, force, dry_run, as_json)


@cli.command("replay", epilog=EXIT_CODES_HELP)
@click.option("--from", "date_from", required=True, callback=_date, metavar="YYYY-MM-DD", help="First local day.")
@click.option("--to", "date_to", required=True, callback=_date, metavar="YYYY-MM-DD",
              help="Last local day; contexts are made as of this day.")
@click.option("--guild", type=GUILD_ID, default=None, help="Only this guild's partitions (it must have messages).")
@click.option("--force", is_flag=True, help="Recompute even rows whose inputs did not change.")
@click.option("--dry-run", is_flag=True, help="Say what would be computed (items, LLM requests, prompt tokens); "
                                              "write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the run as one JSON object (the keys of `runs --json`).")
@click.pass_obj
def replay_cmd(state: State, date_from, date_to, guild, force, dry_run, as_json):
    """Recompute daily summaries for every day in a range, then historical summaries and contexts
    as of the last day. Unchanged inputs cost nothing: a replay after a prompt or model change
    redoes exactly the rows it touches. Reports like `mempipe run`.

    Example: mempipe replay --from 2026-11-01 --to 2026-11-04 --dry-run
    """
    if date_to < date_from:
        raise click.BadParameter(f"--to {date_to} is before --from {date_from}", param_hint="--to")
    _execute_with_progress(state, "replay", date_from, date_to, guild, force, dry_run, as_json)


@cli.command("runs")
@click.option("--limit", type=click.IntRange(1, 2**63 - 1), default=20, show_default=True,
              help="How many of the newest runs.")
@json_option
@click.pass_obj
def runs_cmd(state: State, limit, as_json):
    """List pipeline runs, newest first: status, duration and counts. A failed run says why.

    \b
    items = summ + passed + errs, as `mempipe run` prints them:
      items   partition-days, past weeks and contexts the run looked at
      summ    made by a summarizer operation (the model, its extractive fallback, or the extractive summarizer)
      passed  made or kept without a model, by reason (fit, weeks/recent rendered, nothing to merge, reused,
              unchanged)
      errs    failed (not written; retried by later runs)
    A run with gemini.batch adds "N deferred to a batch job": items waiting for a batch answer, made by a
    later run (`mempipe batches`); items = summ + passed + errs + deferred.
    llm: LLM requests (a long day may take several); facts+ / upd / rej: facts added, updated (a newer
    statement superseded one) and rejected by validation. --json has every count by name
    (passed_<reason>, facts_rejected_<reason>)."""
    rows = [report.as_json(r) for r in state.store().runs(limit)]
    if as_json:
        _echo_json(rows)
        return
    click.echo(report.TABLE_HEADER)
    for r in rows:
        click.echo(report.table_line(r))
