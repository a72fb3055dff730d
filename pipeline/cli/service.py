"""`mempipe serve`, `retention`, `status`: the scheduler service and what cron-only operators need."""

from __future__ import annotations

import asyncio
import logging

import click

from ..logs import FORMATS, configure_logging
from .main import State, _echo_json, cli, json_option, stop_on_signals

# ---------------------------------------------------------------- serve / status

@cli.command("serve")
@click.option("--log-format", type=click.Choice(FORMATS), default=None, envvar="MEMPIPE_LOG_FORMAT",
              show_envvar=True, help="text (default) or json: one JSON object per line, e.g. per job run.")
@click.option("--run-now", is_flag=True, envvar="MEMPIPE_RUN_NOW", show_envvar=True,
              help="Run the refresh as soon as this process becomes leader (else: scheduler.run_on_start).")
@click.option("--http", "http_address", metavar="HOST:PORT", default=None, envvar="MEMPIPE_HTTP", show_envvar=True,
              help="Also serve the status page (/), /healthz and /metrics (Prometheus) on HOST:PORT, e.g. "
                   "127.0.0.1:8089 ([::1]:8089 for IPv6, port 0: any free one). Off by default. Standbys "
                   "serve it too.")
@click.pass_obj
def serve_cmd(state: State, log_format, run_now, http_address):
    """Run the scheduler service: the hourly refresh, a rollover after each timezone's local
    midnight and the daily retention ([scheduler] in the config).

    Start it on several machines against one database: one process leads (PostgreSQL advisory
    lock, or a lock file next to a SQLite database), the others stand by and take over within
    scheduler.takeover_s when it dies. SIGTERM or SIGINT stop it cleanly: no new work, the job in
    flight is cancelled (finished partition-days stay, the one in progress is not written), exit 0.
    One log line per job run: job, partitions, calls, tokens, duration, outcome.

    With --http, an HTTP server runs beside the scheduler in the same process, on leader and
    standbys alike: the status page, /healthz (200, or 503 when the database is unreachable, the
    leader's heartbeat is stale or a job's last run failed) and /metrics, all read from the
    database. It stops with the service.

    \b
    Example: mempipe --db postgresql+psycopg://mempipe@db/mempipe serve --log-format json
    Example: mempipe serve --http 127.0.0.1:8089
    """
    from ..scheduler.leader import default_identity
    from ..scheduler.service import serve

    fmt = log_format or state.log_format
    level = logging.DEBUG if state.verbose > 1 else logging.INFO if state.verbose else logging.WARNING
    configure_logging(fmt, level, timestamps=True)
    logging.getLogger("pipeline").setLevel(min(level, logging.INFO))  # job lines, leader changes
    log = logging.getLogger("pipeline.scheduler")
    settings = state.settings
    address = None
    if http_address is not None:
        from ..web import parse_address

        try:
            address = parse_address(http_address)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="'--http' / MEMPIPE_HTTP") from None
    store = state.store()
    identity = default_identity()
    http, role = None, None
    if address is not None:
        from ..web import Role, start_http

        role = Role()
        try:
            http = start_http(address, settings, clock=state.clock, identity=identity, role=role)
        except OSError as exc:  # in use, or not an address of this host
            reason = exc.strerror or str(exc)
            raise click.BadParameter(f"cannot listen on {http_address}: {reason} (choose another port, or an "
                                     f"address of this host)", param_hint="'--http' / MEMPIPE_HTTP") from None

    async def main():
        from ..summarize import make_summarizer

        close = getattr(make_summarizer(settings), "aclose", None)  # a config error fails now, not at the first job
        if close is not None:
            await close()
        stop = asyncio.Event()
        with stop_on_signals(stop, log):
            await serve(settings, clock=state.clock, stop_event=stop, run_now=run_now or None, store=store,
                        identity=identity, on_leader=role)

    try:
        asyncio.run(main())
    finally:
        if http is not None:  # after the scheduler: probes keep answering while a job is cancelled
            http.stop()


def _ts(value) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else "never"


@cli.command("retention")
@json_option
@click.pass_obj
def retention_cmd(state: State, as_json: bool):
    """Delete what aged out (chat history and daily summaries older than retention_days,
    historical summaries past their window, contexts not refreshed since), in bounded batches.
    Facts are kept. `mempipe serve` runs this daily; run it from cron when you use cron instead.

    Example: mempipe retention
    """
    from ..retention import apply_retention

    deleted = apply_retention(state.store(), state.settings, now=state.clock(),
                              batch_size=state.settings.scheduler.retention_batch_size)
    if as_json:
        _echo_json(deleted)
    else:
        click.echo(", ".join(f"{table}: {n} deleted" for table, n in deleted.items()))


@cli.command("status")
@json_option
@click.pass_obj
def status_cmd(state: State, as_json):
    """Show the scheduler service: which `mempipe serve` leads (holder, pid, host, heartbeat
    age), how each job last ended, and when each is due next. Read from the database, so it
    works from any machine.

    Example: mempipe status --json
    """
    from ..scheduler.status import status

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

