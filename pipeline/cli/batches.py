"""`mempipe batches`: the Gemini Batch API jobs that runs with gemini.batch submitted
(pipeline/llm/batch.py; README, "Batch mode")."""

from __future__ import annotations

import click

from .main import State, _echo_json, cli, json_option

HEADER = f"{'name':32} {'model':24} {'state':10} {'requests':>8} {'age':>8}  run"


def _age(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h" if seconds < 86400 else f"{seconds / 86400:.1f}d"


def job_line(job: dict, now) -> str:
    """One job: name, model, state (running, succeeded, failed, cancelled, expired, timed_out),
    its requests, its age, and the run that submitted it (serve starts that run again)."""
    span = f"{job['date_from'] or ''}..{job['date_to'] or ''}" if job["date_from"] or job["date_to"] else ""
    error = f"  {job['error']}" if job["error"] else ""
    return (f"{job['name']:32} {job['model']:24} {job['state']:10} {job['requests']:>8} "
            f"{_age((now - job['submitted_at']).total_seconds()):>8}  {job['run_kind']} {span}".rstrip() + error)


@cli.command("batches")
@click.option("--limit", type=click.IntRange(1, 2**63 - 1), default=20, show_default=True,
              help="How many of the newest jobs.")
@json_option
@click.pass_obj
def batches_cmd(state: State, limit, as_json):
    """List the batch jobs runs submitted with gemini.batch, newest first: name, model, state,
    requests and age, and the run that submitted them.

    \b
    running    the server has not finished it: the next run (or serve's poll) asks again
    succeeded  its answers are stored; the next run uses them
    failed, cancelled, expired, timed_out (unfinished after gemini.batch_timeout_h, cancelled)
               its requests are sent interactively by the next run, within the quota"""
    jobs = state.store().batch_jobs()[:limit]
    if as_json:
        _echo_json(jobs)
        return
    if not jobs:
        click.echo("no batch jobs (gemini.batch is off, or no run has submitted one yet)")
        return
    now = state.clock()
    click.echo(HEADER)
    for job in jobs:
        click.echo(job_line(job, now))
