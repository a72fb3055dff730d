"""`mempipe db …`, `import`, `run`, `replay`, `runs`."""

from __future__ import annotations

import asyncio
import sys

import click

from .main import (
    SNOWFLAKE,
    State,
    _date,
    _echo_json,
    cli,
    json_option,
)

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
    from ..ingest import import_files

    store = state.store()
    with click.progressbar(length=0, label="importing", file=sys.stderr, show_pos=True) as bar:
        def progress(n):
            bar.update(n)
        report = import_files(store, list(paths), state.settings, fmt=fmt,
                              visibility=None if visibility == "public" else visibility,
                              include_bots=include_bots, progress=progress, clock=state.clock)
    click.echo(f"read {report.read} messages, wrote {report.written}, skipped {report.skipped}, "
               f"cut {report.cut} over-long texts"
               + (f"; deleted {report.deleted} ({report.not_found} of {report.deletions} deletion rows matched "
                  f"no stored message)" if report.deletions else ""))


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
    from ..runner import execute

    rc = state.app().run_context(force=force, dry_run=dry_run)
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
@json_option
@click.pass_obj
def runs_cmd(state: State, limit, as_json):
    """List pipeline runs, newest first: status, duration and counts. A failed run says why.

    facts+ / upd / rej: facts added, updated (a newer statement superseded one) and rejected by
    validation in the run; --json has the counts by rejection reason (facts_rejected_<reason>)."""
    rows = state.store().runs(limit)
    for r in rows:
        r["duration_s"] = round((r["finished_at"] - r["started_at"]).total_seconds(), 3) if r["finished_at"] else None
    if as_json:
        _echo_json(rows)
        return
    click.echo(f"{'id':>4} {'kind':6} {'status':7} {'range':23} {'secs':>7} {'p-days':>6} {'calls':>6} "
               f"{'hits':>6} {'llm':>5} {'retry':>5} {'fallb':>5} {'errs':>4} {'tokens':>8} {'cost$':>7} "
               f"{'facts+':>6} {'upd':>4} {'rej':>4}")
    for r in rows:
        span = f"{r['date_from'] or 'today'}..{r['date_to'] or 'today'}"
        click.echo(f"{r['id']:>4} {r['kind']:6} {r['status']:7} {span:23} {r['duration_s'] if r['duration_s'] is not None else '-':>7} "
                   f"{r['partition_days']:>6} {r['summarizer_calls']:>6} {r['cache_hits']:>6} {r['llm_calls']:>5} "
                   f"{r['retries']:>5} {r['fallbacks']:>5} {r['errors']:>4} {r['prompt_tokens'] + r['output_tokens']:>8} "
                   f"{r['estimated_cost']:>7.4f} {r['facts_added']:>6} {r['facts_updated']:>4} "
                   f"{sum(v for k, v in r.items() if k.startswith('facts_rejected_')):>4}"
                   f"{'  ' + r['error'] if r['error'] else ''}{'  (dry run)' if r['dry_run'] else ''}")

