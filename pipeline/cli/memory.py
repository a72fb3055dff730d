"""`mempipe context`, `contexts`, `facts …`: what bots read and what users asked to keep or forget."""

from __future__ import annotations

import asyncio

import click

from ..errors import MempipeError
from .main import (
    SNOWFLAKE,
    State,
    _echo_json,
    _scope,
    cli,
    json_option,
    scope_option,
    user_option,
)


@cli.command("context")
@scope_option
@user_option
@json_option
@click.pass_obj
def context_cmd(state: State, scope, user_id, as_json):
    """Print the context a bot reads for USER in SCOPE (exit 1 if there is none).

    Example: mempipe context --scope guild:1150000000000000001 --user 1160000000000000001
    """
    from ..read import get_context

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
@json_option
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




@facts.command("remember")
@scope_option
@user_option
@click.argument("text")
@click.pass_obj
def facts_remember(state: State, scope, user_id, text):
    """Add a third-person fact about USER in SCOPE, and refresh their contexts.

    Example: mempipe facts remember --scope guild:1 --user 42 "Ana studies statistics."
    """
    from ..stages.facts import remember

    rc = state.app().run_context()
    blob = asyncio.run(_closing(rc, remember(rc, scope, user_id, text)))
    click.echo(blob)


@facts.command("forget")
@scope_option
@user_option
@click.argument("text")
@click.pass_obj
def facts_forget(state: State, scope, user_id, text):
    """Forget a fact: removed from the facts, scrubbed from every stored summary and context of
    the user, and kept out of summaries made later. Exit 0 either way; prints whether it was found.

    Example: mempipe facts forget --scope guild:1 --user 42 "statistics exam"
    """
    from ..stages.facts import forget

    rc = state.app().run_context()
    found = asyncio.run(_closing(rc, forget(rc, scope, user_id, text)))
    click.echo("forgotten" if found else "not found (recorded anyway: it will be kept out of future summaries)")


@facts.command("show")
@scope_option
@user_option
@click.pass_obj
def facts_show(state: State, scope, user_id):
    """Print the facts stored for USER in SCOPE."""
    rows = state.store().facts(scope=scope, user_ids=[user_id])
    click.echo(rows[0]["facts"] if rows else "")

