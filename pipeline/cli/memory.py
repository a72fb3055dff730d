"""`mempipe context`, `contexts`, `facts …`, `profile`, `memory-files`: what bots read, what users asked to
keep or forget, and long-term memory as people read it."""

from __future__ import annotations

import asyncio
import datetime as dt
import pathlib

import click

from ..errors import MempipeError
from .data import _progress_bar
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
from .search import hit_json, query_text


@cli.command("context")
@scope_option
@user_option
@click.option("--query", default=None, metavar="TEXT", callback=query_text,
              help="The message being answered: the best search hits for its words that SCOPE may read and "
                   "the context does not hold already are appended (\"Related memories:\"), as "
                   "get_context(..., query=...) does for a bot.")
@click.option("--budget", type=click.IntRange(min=1), default=None, metavar="TOKENS",
              help="With --query: hits are appended while the whole text stays within this many tokens "
                   "(estimated, ~4 characters each; the stored context is never cut). "
                   "Default: [search] context_budget_tokens.")
@json_option
@click.pass_obj
def context_cmd(state: State, scope, user_id, query, budget, as_json):
    """Print the context a bot reads for USER in SCOPE (exit 1 if there is none). With --query,
    also the related memories a bot gets for that message (--json: in "hits").

    \b
    Example: mempipe context --scope guild:1150000000000000001 --user 1160000000000000001
    Example: mempipe context --scope guild:1150000000000000001 --user 1160000000000000001 --query "shulker shells?"
    """
    from ..read import get_context

    if budget is not None and query is None:
        raise click.UsageError("--budget limits the hits --query adds; give --query too (or leave --budget out)")
    store = state.store()
    if query is None:
        c = get_context(scope, user_id, store=store)
    else:
        c = get_context(scope, user_id, query=query, budget_tokens=budget, store=store,
                        settings=state.settings)  # this command's --config, not the process default
    if c is None:
        matched = f" and no memory {scope} may read matches {query!r}" if query is not None else ""
        raise MempipeError(f"no context for user {user_id} in {scope}{matched} "
                           f"(has `mempipe run` been run since they spoke?)")
    if query is not None and not c.hits:
        click.echo(f"no related memories added for {query!r}: nothing {scope} may read matches it "
                   f"that the context does not hold already, within "
                   f"{budget or state.settings.search.context_budget_tokens} tokens", err=True)
    day1 = _current_day1(state, store, scope)
    if as_json:
        _echo_json(c._asdict() | {"hits": [hit_json(i, h) for i, h in enumerate(c.hits, 1)]}
                   | {"current_day1": day1, "stale_days": max((day1 - c.as_of_day).days, 0)})
    else:
        click.echo(age_note(scope, c.as_of_day, c.made_at, day1), err=True)  # stdout: the text a bot reads
        click.echo(c.text)


@cli.command("contexts")
@click.option("--scope", callback=_scope, default=None, help="Only this scope.")
@click.option("--user", "user_id", type=SNOWFLAKE, default=None, help="Only this user.")
@json_option
@click.pass_obj
def contexts_cmd(state: State, scope, user_id, as_json):
    """List context rows (all, or one scope's / one user's), each under a header: scope, user, the
    day 1 it was made for and when, and whether it is degraded or stale (older than its scope's
    current day 1)."""
    store = state.store()
    rows = store.contexts(scope, user_id)
    day1s = {s: _current_day1(state, store, s) for s in {r["scope"] for r in rows}}
    if as_json:
        _echo_json([r | {"current_day1": (d1 := day1s[r["scope"]]), "stale_days": max((d1 - r["as_of_day"]).days, 0)}
                    for r in rows])
        return
    for r in rows:
        flag = " [degraded]" if r["degraded"] else ""
        note = age_note(r["scope"], r["as_of_day"], r["made_at"], day1s[r["scope"]])
        click.echo(f"== {r['scope']} user {r['user_id']}: {note}{flag}")
        click.echo(r["context"])


def _current_day1(state: State, store, scope: str) -> dt.date:
    """The scope's day 1 now: today in its guild's timezone (a restricted channel's guild's; a DM's
    and an unknown channel's: the default timezone), by the command's clock."""
    kind, _, ident = scope.partition(":")
    guild = int(ident) if kind == "guild" else None
    if kind == "channel":
        guild = (store.channels([int(ident)]).get(int(ident)) or {}).get("guild_id")
    return state.clock().astimezone(state.settings.timezones.for_guild(guild)).date()


def age_note(scope: str, as_of: dt.date, made_at: dt.datetime, day1: dt.date) -> str:
    """"as of <day 1> (made <UTC time>)", and when it is older than the scope's current day 1,
    by how many days: its "Today" is not today (README, `mempipe context`)."""
    note = f"as of {as_of.isoformat()} (made {made_at.astimezone(dt.timezone.utc):%Y-%m-%d %H:%M} UTC)"
    behind = (day1 - as_of).days
    if behind > 0:
        note += (f"; STALE: {behind} day{'s' if behind != 1 else ''} older than {scope}'s current day 1, "
                 f"{day1.isoformat()} (`mempipe run` brings it up to date)")
    return note


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
    """Remember, forget and list facts about a user (per scope)."""




def _fact_json(rc, scope: str, user_id: int, **fields) -> dict:
    """What `facts remember/forget --json` print: the fact, what became of it, the contexts
    refreshed and the summarizer's use (64-bit ids as strings, as `facts show --json`)."""
    s = rc.stats
    return {"scope": scope, "user_id": str(user_id), **fields, "facts_added": s.facts_added,
            "facts_updated": s.facts_updated, "facts_unchanged": s.facts_unchanged,
            "contexts_written": s.contexts_written, "summarizer_calls": s.summarizer_calls, "llm_calls": s.llm_calls}


@facts.command("remember")
@scope_option
@user_option
@click.argument("text")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object: the fact as stored (\"fact\"), whether it was added, updated or known "
                   "already, and the contexts refreshed.")
@click.pass_obj
def facts_remember(state: State, scope, user_id, text, as_json):
    """Add a third-person fact about USER in SCOPE, and refresh their contexts. Recorded in the
    audit (`mempipe user audit`); runs as the operator.

    Example: mempipe facts remember --scope guild:1 --user 42 "Ana studies statistics."
    """
    from ..controls import OPERATOR, remember

    rc = state.app().run_context()
    blob = asyncio.run(_closing(rc, remember(rc, scope, user_id, text, requested_by=OPERATOR)))
    if as_json:
        _echo_json(_fact_json(rc, scope, user_id, fact=blob))
    else:
        click.echo(blob)


@facts.command("forget")
@scope_option
@user_option
@click.argument("text")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object: the text forgotten (\"fact\"), whether anything stated it "
                   "(\"found\"), and the contexts refreshed.")
@click.pass_obj
def facts_forget(state: State, scope, user_id, text, as_json):
    """Forget a fact: removed from the facts, scrubbed from every stored summary and context of
    the user, and kept out of summaries made later. Exit 0 either way; prints whether it was found.
    Recorded in the audit (`mempipe user audit`, without the fact); runs as the operator.

    Example: mempipe facts forget --scope guild:1 --user 42 "statistics exam"
    """
    from ..controls import OPERATOR, forget

    rc = state.app().run_context()
    found = asyncio.run(_closing(rc, forget(rc, scope, user_id, text, requested_by=OPERATOR)))
    if as_json:
        _echo_json(_fact_json(rc, scope, user_id, fact=text, found=bool(found)))
    else:
        click.echo("forgotten" if found else "not found (recorded anyway: it will be kept out of future summaries)")


@facts.command("show")
@user_option
@click.option("--scope", callback=_scope, default=None,
              help="Only the facts this scope may read (its partitions for the user, plus global facts).")
@click.option("--all", "include_superseded", is_flag=True, help="Include superseded facts (history).")
@json_option
@click.pass_obj
def facts_show(state: State, user_id, scope, include_superseded, as_json):
    """List the structured facts stored about USER, one per line: level, category, confidence,
    first..last seen, event date, where it was said and its origin (manual, or the messages it was
    extracted from). Superseded facts only with --all.

    \b
    Example: mempipe facts show --user 1160000000000000001 --scope guild:1150000000000000001
    """
    from ..memory.views import fact_line, facts_for

    rows = facts_for(state.store(), user_id, scope, include_superseded=include_superseded)
    if as_json:
        _echo_json([_ids_as_text(r) for r in rows])
        return
    if not rows:
        where = f" that {scope} may read" if scope else ""
        click.echo(f"no {'' if include_superseded else 'active '}facts about user {user_id}{where}", err=True)
    for r in rows:
        click.echo(fact_line(r))


# ---------------------------------------------------------------- profile / memory files

ID_KEYS = ("id", "user_id")  # the 64-bit ids of a fact or profile row


def _ids_as_text(row: dict) -> dict:
    """A row for --json with its 64-bit ids as strings (a JavaScript number keeps only 53 bits)."""
    return {k: str(v) if k in ID_KEYS and v is not None else v for k, v in row.items()}


@cli.command("profile")
@scope_option
@user_option
@json_option
@click.pass_obj
def profile_cmd(state: State, scope, user_id, as_json):
    """Print the long-term profile of USER as SCOPE may read it (the facts part of a context),
    as stored by the last `mempipe run`. Exit 1 when there is none.

    \b
    Example: mempipe profile --scope guild:1150000000000000001 --user 1160000000000000001
    """
    from ..memory.views import profile_of

    row = profile_of(state.store(), scope, user_id)
    if as_json:
        _echo_json(_ids_as_text(row))
    else:
        click.echo(row["profile"])


@cli.command("memory-files")
@click.argument("directory", type=click.Path(path_type=pathlib.Path))
@scope_option
@click.option("--user", "user_id", type=SNOWFLAKE, default=None,
              help="Only this user (default: every user with a profile or a daily summary SCOPE may read).")
@json_option
@click.pass_obj
def memory_files_cmd(state: State, directory, scope, user_id, as_json):
    """Write each user's memory as markdown files under DIRECTORY (created if missing):

    \b
      <user>/MEMORY.md                the user's profile in SCOPE
      <user>/journal/YYYY-MM-DD.md    the user's daily summaries SCOPE may read

    Use one directory per scope. Safe to rerun: unchanged files are left alone, files whose
    memory is gone are removed, nothing else in DIRECTORY is touched.

    \b
    Example: mempipe memory-files var/memory/guild-1150 --scope guild:1150000000000000001
    """
    from ..memory.files import write_memory_files

    store = state.store()
    bar, progress = _progress_bar("memory files")
    with bar:
        counts = write_memory_files(store, directory, scope, user_id, progress=progress)
    if as_json:
        _echo_json(counts)
        return
    click.echo(f"{directory}: {counts['users']} user(s); {counts['written']} file(s) written, "
               f"{counts['unchanged']} unchanged, {counts['removed']} removed")
    if counts["written"] + counts["unchanged"] == 0:
        click.echo(f"nothing to write: no profile or daily summary that {scope} may read"
                   f"{f' for user {user_id}' if user_id is not None else ''} (has `mempipe run` been run?)", err=True)
