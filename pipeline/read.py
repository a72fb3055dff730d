"""The bot read path: one indexed SELECT by (scope, user_id); with a query, also the best search
hits the scope may read (pipeline/search/). Never a model call.

From another language, run the `get_context` statement in sql/queries.sql (quoted in the README).

Without `store=`, the first call loads the settings (config/default.toml, MEMPIPE_* environment)
and each database URL gets one Store, kept for the life of the process; `reset()` forgets both
(tests, or a process whose configuration changed). Contexts themselves are never cached: the
database row is the truth, so a `facts forget` is seen by the very next read.

The async twins (`aget_context`, `asearch`) run the same functions on one bounded thread pool of
this module, so a bot's event loop is never blocked by a database read; `reset()` shuts it down.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

from .calendar import parse_scope
from .clock import system_clock
from .config import Settings, load_settings
from .errors import SearchError
from .ids import MAX_ID, parse_id
from .search import Hit, find_hits, query_terms
from .search.related import add_related
from .store import Store

MAX_SEARCH_LIMIT = 100
RELATED_POOL = 4  # get_context asks for this many times [search] context_hits, then drops what it holds
# Threads of the async twins. Each keeps a read connection of its own, outside the pool
# (store/read.py), so a PostgreSQL server sees up to this many more connections than the pool's.
ASYNC_READ_THREADS = 4

_settings: Settings | None = None
_stores: dict[str, Store] = {}
_executor: ThreadPoolExecutor | None = None  # the async twins' threads, made on first use
_lock = threading.Lock()  # guards the three above; the hot path only reads them


class Context(NamedTuple):
    """What a bot reads (a named tuple: the read path is hot)."""

    scope: str
    user_id: int
    text: str
    as_of_day: dt.date
    made_at: dt.datetime
    degraded: bool
    hits: tuple[Hit, ...] = ()  # the search hits appended to `text` (get_context with a query)


# bound once: the hot path below looks each up as one global, not module.class.method
_new_tuple = tuple.__new__
_day_from_text, _time_from_text = dt.date.fromisoformat, dt.datetime.fromisoformat
# The usual scope: a kind, ":", an id in ASCII digits without a leading zero. Every scope it
# accepts (once the id is at most 2**63-1) parse_scope accepts (tests/unit/test_read_scope.py);
# anything else goes to parse_scope, the rule, which raises or accepts.
_PLAIN_SCOPE = re.compile(r"(?:guild|channel|dm):(0|[1-9][0-9]{0,18})")


# Bounded and thread-safe (C implementation, ~0.1 µs a hit): a bot reads few scopes, over and over.
# A miss costs ~0.6 µs, not parse_scope's ~5 µs (its Scope object and error text are not needed
# here): a deployment of many scopes misses often. A bad scope raises, and exceptions are not cached.
@functools.lru_cache(maxsize=100_000)
def _check_scope(scope: str) -> str:
    plain = _PLAIN_SCOPE.fullmatch(scope)
    if plain is None or int(plain[1]) > MAX_ID:
        parse_scope(scope)  # raises ScopeError with the accepted forms
    return scope


def _store_for(url: str | None) -> Store:
    global _settings
    settings = _settings
    key = url or (settings.database_url if settings is not None else None)
    if key is not None and (store := _stores.get(key)) is not None:
        return store  # the usual case: no lock
    with _lock:
        if _settings is None:
            _settings = load_settings()
        url = url or _settings.database_url
        if url not in _stores:
            # Store.open checks the schema: a database that is down raises StoreError, and
            # nothing is kept, so the next call tries again. It never creates a database: a
            # SQLite file that is not there (a relative path is resolved against the working
            # directory) raises NoDatabaseError naming the file, and no empty file is left.
            _stores[url] = Store.open(url, pool_size=_settings.pool_size, max_overflow=_settings.pool_max_overflow)
        return _stores[url]


def _loaded_settings() -> Settings:
    global _settings
    settings = _settings
    if settings is None:
        with _lock:
            if _settings is None:
                _settings = load_settings()
            settings = _settings
    return settings


def reset() -> None:
    """Close the Stores get_context opened, shut the async twins' threads down (after the reads
    under way) and forget the loaded settings and checked scopes: the next call loads the
    configuration again."""
    global _settings, _executor
    with _lock:
        stores = list(_stores.values())
        _stores.clear()
        _settings = None
        _check_scope.cache_clear()
        executor, _executor = _executor, None
    if executor is not None:
        executor.shutdown(wait=True)
    for store in stores:
        store.close()


def get_context(scope: str, user_id: int, *, query: str | None = None, budget_tokens: int | None = None,
                store: Store | None = None, database_url: str | None = None,
                settings: Settings | None = None) -> Context | None:
    """The context a bot should read before answering `user_id` in `scope`, or None when there is
    no memory for them there. Raises StoreError when the database fails (never returns None for
    an outage) — NoDatabaseError, naming what it tried, when it is not there (a read never creates
    one) and SchemaError when it has no current mempipe schema — and IdError for bad input: a
    malformed scope (ScopeError, an IdError) or a user id that is not a 64-bit id (a float, a bool,
    out of range), before the database is asked.

    query: the message being answered. The stored context then gets the best search hits (see
    `search`) it does not hold already, appended as "Related memories:" lines while the whole
    text stays within `budget_tokens` (default: [search] context_budget_tokens; the stored text
    is never cut), in `Context.hits`. With no stored context, hits alone make one (as_of_day: the
    newest hit's day, made_at: now). SearchError for a query that is not text or a budget below 1.

    database_url: default, the configured one (settings loaded once per process, see `reset`); a
    relative SQLite path, like the default `sqlite:///var/mempipe.db`, is relative to the working
    directory of the first read.
    settings: whose [search] section a query uses (default: those loaded once per process)."""
    _check_scope(scope) if isinstance(scope, str) else parse_scope(scope)  # not a str: ScopeError, uncached
    if type(user_id) is not int or not 0 <= user_id <= MAX_ID:  # the usual id costs no call
        user_id = parse_id(user_id, "user_id")  # int(1.16e18) would silently read another user's row
    if query is not None or budget_tokens is not None:  # checked before any store is opened
        if query is not None:
            _check_query(query)
        if budget_tokens is not None and (type(budget_tokens) is not int or budget_tokens < 1):
            raise SearchError(f"budget_tokens must be a whole number of tokens, at least 1 (got {budget_tokens!r})")
        return _context_with_hits(scope, user_id, query, budget_tokens, store or _store_for(database_url),
                                  settings or _loaded_settings())
    row = (store or _store_for(database_url)).context_fast(scope, user_id)
    if row is None:
        return None
    text, as_of, made, degraded = row
    if isinstance(as_of, str):  # SQLite stores days and times as text
        as_of = _day_from_text(as_of)
    if isinstance(made, str):
        made = _time_from_text(made)
    # what Context(...) makes, without the Python-level __new__ of a named tuple (a hot path)
    return _new_tuple(Context, (scope, user_id, text, as_of, made, True if degraded else False, ()))


def _context_with_hits(scope: str, user_id: int, query: str | None, budget_tokens: int | None,
                       store: Store, settings: Settings) -> Context | None:
    stored = get_context(scope, user_id, store=store)  # the fast path: the stored row as it is
    terms = query_terms(query) if query is not None else []
    if not terms:  # nothing to look for: the stored context as it is
        return stored
    budget = settings.search.context_budget_tokens if budget_tokens is None else budget_tokens
    wanted = settings.search.context_hits
    # more hits than wanted: the best ones are often what the stored context already says
    hits = find_hits(store, parse_scope(scope), user_id, terms, limit=min(MAX_SEARCH_LIMIT, RELATED_POOL * wanted))
    text, kept = add_related(stored.text if stored else None, hits, budget, max_hits=wanted)
    if not kept:
        return stored
    if stored is not None:
        return stored._replace(text=text, hits=kept)
    return Context(scope, user_id, text, max(h.day for h in kept), system_clock(), False, kept)


def _check_query(query) -> None:
    if not isinstance(query, str):
        raise SearchError(f"a search query must be text (str), not {type(query).__name__}")


def search(scope: str, user_id: int, query: str, *, limit: int = 5, store: Store | None = None,
           database_url: str | None = None) -> list[Hit]:
    """The best `limit` (1..100) memory items of `user_id` that a reader in `scope` may see and
    that hold words of `query` (a chat message; its words are looked up, never read as full-text
    syntax), best first: facts, daily and historical summaries of the scope's readable partitions
    (the audience rule of contexts, ARCHITECTURE.md "scope") and the user's global facts; never
    a summary whose day waits to be recomputed. Ranking: pipeline/search/rank.py.

    [] when nothing matches, or when the query has no words worth looking up (then the database
    is not asked). Raises StoreError when the database fails (never [] for an outage), IdError
    for a bad scope or user id, SearchError for a query that is not text or a limit out of range."""
    _check_scope(scope) if isinstance(scope, str) else parse_scope(scope)
    user_id = parse_id(user_id, "user_id")
    _check_query(query)
    if type(limit) is not int or not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise SearchError(f"limit must be a whole number from 1 to {MAX_SEARCH_LIMIT} (got {limit!r})")
    terms = query_terms(query)
    if not terms:
        return []
    return find_hits(store or _store_for(database_url), parse_scope(scope), user_id, terms, limit=limit)


# ---------------------------------------------------------------------- async twins


def _read_executor() -> ThreadPoolExecutor:
    global _executor
    executor = _executor
    if executor is None:
        with _lock:
            if _executor is None:
                _executor = ThreadPoolExecutor(max_workers=ASYNC_READ_THREADS, thread_name_prefix="mempipe-read")
            executor = _executor
    return executor


async def _off_the_loop(call: functools.partial):
    loop = asyncio.get_running_loop()
    try:
        future = loop.run_in_executor(_read_executor(), call)
    except RuntimeError:  # a reset() shut the pool down after we took it: take the new one
        future = loop.run_in_executor(_read_executor(), call)
    return await future


async def aget_context(scope: str, user_id: int, *, query: str | None = None, budget_tokens: int | None = None,
                       store: Store | None = None, database_url: str | None = None,
                       settings: Settings | None = None) -> Context | None:
    """`get_context` on this module's read threads: the same result and errors, the loop free."""
    return await _off_the_loop(functools.partial(get_context, scope, user_id, query=query, budget_tokens=budget_tokens,
                                                 store=store, database_url=database_url, settings=settings))


async def asearch(scope: str, user_id: int, query: str, *, limit: int = 5, store: Store | None = None,
                  database_url: str | None = None) -> list[Hit]:
    """`search` on this module's read threads: the same result and errors, the loop free."""
    return await _off_the_loop(functools.partial(search, scope, user_id, query, limit=limit, store=store,
                                                 database_url=database_url))
