"""`mempipe search`: a user's memory as one scope may read it, best first, for a query (the bots'
`pipeline.read.search`, ARCHITECTURE.md "Search"). `mempipe context --query` is in memory.py."""

from __future__ import annotations

import click

from ..read import MAX_SEARCH_LIMIT
from .main import State, _echo_json, cli, json_option, scope_option, user_option

ID_KEYS = ("fact_id",)  # 64-bit ids in the JSON: strings (a JavaScript number keeps 53 bits)


def query_text(_ctx, _param, value):
    """A query with something in it: an empty or blank one is a usage error, not 'no hits'."""
    if value is not None and not value.strip():
        raise click.BadParameter("the query is empty; give the words to look for, e.g. \"cat\"")
    return value


def hit_json(rank: int, hit) -> dict:
    """One hit for --json: its rank (1 = best), its fields, ids as strings, the day ISO-8601."""
    row = {"rank": rank, **hit._asdict()}
    return {k: str(v) if k in ID_KEYS and v is not None else v for k, v in row.items()}


def hit_line(rank: int, hit) -> str:
    """One hit on one line: `1. [fact · 2026-09-03 · guild_public guild:1150… · 1.12] Speaks
    Portuguese` — rank, kind, day, level and partition, score, then the text (its line breaks
    folded into spaces, so one hit stays one line)."""
    text = " ".join(hit.text.split())
    return f"{rank}. [{hit.kind} · {hit.day.isoformat()} · {hit.level} {hit.partition or 'elsewhere'} · {hit.score:.2f}] {text}"


def nothing_found(query: str, scope: str, user_id: int) -> str:
    """Why a search found nothing: no searchable word in the query, or no item matched."""
    from ..search import query_terms

    if not query_terms(query):
        return (f"nothing to search for in {query!r}: only common words (a, the, what, remember, …); "
                f"name the thing to look for")
    return f"no memory of user {user_id} that {scope} may read matches {query!r}"


@cli.command("search")
@scope_option
@user_option
@click.argument("query", callback=query_text)
@click.option("--limit", type=click.IntRange(1, MAX_SEARCH_LIMIT), default=5, show_default=True,
              help=f"At most this many hits (1–{MAX_SEARCH_LIMIT}).")
@json_option
@click.pass_obj
def search_cmd(state: State, scope, user_id, query, limit, as_json):
    """Search USER's memory as SCOPE may read it for the words of QUERY: facts, daily summaries
    and the latest week summary, best first (relevance, then recency and confidence). Prints one
    hit per line: rank, kind, day, level and partition, score, text. What SCOPE may not read (a
    restricted channel from its guild, another DM) is never searched. QUERY is plain words:
    quotes, OR, NEAR(, * and column names are read as words, never as search syntax.

    \b
    Example: mempipe search --scope guild:1150000000000000001 --user 1160000000000000001 "shulker shells"
    """
    from ..read import search

    hits = search(scope, user_id, query, limit=limit, store=state.store())
    if as_json:
        _echo_json([hit_json(i, h) for i, h in enumerate(hits, 1)])
        return
    if not hits:
        click.echo(nothing_found(query, scope, user_id), err=True)
    for i, h in enumerate(hits, 1):
        click.echo(hit_line(i, h))
