"""Search (pipeline.read `search`, `get_context(..., query=...)`, their async twins) on SQLite and
PostgreSQL: ranking, the audience rule of contexts (a scope never finds what it may not read),
failing closed while a day waits to be recomputed, forget and supersede seen at once, the context
with related memories within its budget, and an outage raised, never [].

Items are written the way the pipeline writes them (rows of memory_facts, daily_summaries and
historical_summaries; the database's triggers fill the index); audiences come from imported
messages."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
import uuid

import pytest
import sqlalchemy as sa

from pipeline import read
from pipeline.db.tables import daily_summaries, historical_summaries, memory_facts
from pipeline.errors import ScopeError, SearchError, StoreError
from pipeline.ingest import ingest_messages
from pipeline.llm.client import estimate_tokens
from pipeline.read import aget_context, asearch, get_context, search
from pipeline.stages.facts import forget, remember
from pipeline.store import Store
from tests.helpers import make_context

UTC = dt.timezone.utc
G, G2 = 1150000000000000701, 1150000000000000702
GENERAL, SECRET, OTHER, DM_ANA, GROUP, DM_SHARED = (1170000000000000701, 1170000000000000702, 1170000000000000703,
                                                     1170000000000000704, 1170000000000000705, 1170000000000000706)
ANA, BO = 1160000000000000701, 1160000000000000702
D = dt.date(2026, 9, 10)
GUILD, RESTRICTED, GUILD2 = f"guild:{G}", f"channel:{SECRET}", f"guild:{G2}"
DM, GROUP_DM, SHARED_DM = f"dm:{DM_ANA}", f"dm:{GROUP}", f"dm:{DM_SHARED}"


def message(n: int, channel: int, user: int, text: str = "hello") -> dict:
    row = {"message_id": 1190000000000070000 + n, "channel_id": channel, "user_id": user,
           "user_name": "Ana" if user == ANA else "Bo", "text": text, "ts": dt.datetime.combine(D, dt.time(9 + n % 12), UTC)}
    if channel in (GENERAL, SECRET):
        return row | {"guild_id": G, "visibility": "public" if channel == GENERAL else "restricted"}
    if channel == OTHER:
        return row | {"guild_id": G2, "visibility": "public"}
    return row | {"guild_id": None, "visibility": "dm", "is_group": channel == GROUP}


@pytest.fixture
def audiences(store, settings):
    """Ana wrote in both guilds, the restricted channel, her one-to-one DM, a group DM and a DM
    marked one-to-one where Bo wrote too; Bo in the guild, the group and that DM."""
    ingest_messages(store, [message(1, GENERAL, ANA), message(2, SECRET, ANA), message(3, OTHER, ANA),
                            message(4, DM_ANA, ANA), message(5, GROUP, ANA), message(6, GROUP, BO),
                            message(7, GENERAL, BO), message(8, DM_SHARED, ANA), message(9, DM_SHARED, BO)], settings)
    return store


LEVEL = {"guild": "guild_public", "channel": "channel_restricted", "dm": "dm"}


def add_fact(store, user: int, partition: str, text: str, *, level: str | None = None, confidence: float = 0.9,
             day: dt.date = D) -> int:
    now = dt.datetime.combine(day, dt.time(12), UTC)
    with store.engine.begin() as conn:
        return conn.execute(sa.insert(memory_facts).returning(memory_facts.c.id), {
            "user_id": user, "partition": partition, "level": level or LEVEL[partition.split(":")[0]],
            "category": "other", "text": text, "confidence": confidence, "first_seen": day, "last_seen": day,
            "sources": ["manual"], "origin": "manual", "status": "active", "input_hash": "h",
            "created_at": now, "updated_at": now}).scalar_one()


def add_daily(store, user: int, partition: str, text: str, day: dt.date = D) -> None:
    with store.engine.begin() as conn:
        conn.execute(sa.insert(daily_summaries), {
            "partition": partition, "day": day, "user_id": user, "summary": text, "input_hash": "h",
            "degraded": False, "created_at": dt.datetime.combine(day, dt.time(23), UTC)})


def add_historical(store, user: int, partition: str, text: str, day: dt.date) -> None:
    with store.engine.begin() as conn:
        conn.execute(sa.insert(historical_summaries), {
            "partition": partition, "user_id": user, "day": day, "summary": text, "input_hash": "h", "source_days": 6,
            "degraded": False, "created_at": dt.datetime.combine(day, dt.time(1), UTC)})


def filler(store, n: int = 12) -> None:
    """Other people's items, so that the query words are rare in the index (as in a real one)."""
    for i in range(n):
        add_daily(store, BO, GUILD, f"Bo talked about chess openings and weather number {i}", D - dt.timedelta(days=i))


def texts(hits) -> list[str]:
    return [h.text for h in hits]


# ---------------------------------------------------------------------- ranking


def test_an_item_with_both_words_outranks_newer_surer_items_with_one(store):
    filler(store)
    add_fact(store, ANA, GUILD, "Rides the old tram across Lisbon", confidence=0.7, day=D - dt.timedelta(days=200))
    add_fact(store, ANA, GUILD, "Moved to Lisbon last spring", confidence=1.0, day=D)
    add_fact(store, ANA, GUILD, "Takes the tram to work daily", confidence=1.0, day=D)
    add_daily(store, ANA, GUILD, "Ana complained about the weather again")
    hits = search(GUILD, ANA, "What do you remember about the tram in Lisbon?", store=store)
    assert texts(hits)[0] == "Rides the old tram across Lisbon"
    assert set(texts(hits)[1:]) == {"Moved to Lisbon last spring", "Takes the tram to work daily"}
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].kind == "fact" and hits[0].level == "guild_public" and hits[0].fact_id is not None


def test_recency_then_confidence_break_near_ties(store):
    filler(store)
    add_fact(store, ANA, GUILD, "Grows basil on the balcony", day=D - dt.timedelta(days=40))
    add_fact(store, ANA, GUILD, "Grows tomato on the balcony", day=D)
    assert texts(search(GUILD, ANA, "balcony", store=store)) == ["Grows tomato on the balcony",
                                                                 "Grows basil on the balcony"]
    add_fact(store, ANA, GUILD, "Keeps unsure bees in the yard", confidence=0.75)
    add_fact(store, ANA, GUILD, "Keeps certain bees in the yard", confidence=0.95)
    add_daily(store, ANA, GUILD, "Ana showed her bees in the yard")
    hits = search(GUILD, ANA, "bees yard", store=store)
    assert texts(hits) == ["Keeps certain bees in the yard", "Keeps unsure bees in the yard",
                           "Ana showed her bees in the yard"]  # a summary counts as confidence 0.5
    assert hits[2].kind == "daily" and hits[2].confidence is None and hits[2].fact_id is None
    assert search(GUILD, ANA, "bees yard", store=store) == hits  # one order, every time
    assert len(search(GUILD, ANA, "bees yard", limit=1, store=store)) == 1


# ---------------------------------------------------------------------- who may read what


@pytest.fixture
def everywhere(audiences):
    """An item about bees of Ana's in every partition (a fact and a summary), her global fact, and
    Bo's items in the same places."""
    store = audiences
    for partition in (GUILD, RESTRICTED, GUILD2, DM, GROUP_DM, SHARED_DM):
        add_fact(store, ANA, partition, f"Keeps bees ({partition})")
        add_daily(store, ANA, partition, f"Ana talked about her bees in {partition}")
        add_fact(store, BO, partition, f"Bo keeps bees too ({partition})")
    add_fact(store, ANA, GUILD, "Favourite insect is the bee", level="global", confidence=0.95)
    return store


def where(hits) -> set[tuple[str, str]]:
    return {(h.partition, h.level) for h in hits}


GLOBAL = (GUILD, "global")
GLOBAL_ELSEWHERE = (None, "global")  # said in GUILD, which this scope may not read: not named
READS = {
    GUILD: {(GUILD, "guild_public"), GLOBAL},
    RESTRICTED: {(RESTRICTED, "channel_restricted"), (GUILD, "guild_public"), GLOBAL},
    GUILD2: {(GUILD2, "guild_public"), GLOBAL_ELSEWHERE},
    # her own one-to-one DM: her rows of every partition she posted in
    DM: {(DM, "dm"), (GUILD, "guild_public"), (RESTRICTED, "channel_restricted"), (GUILD2, "guild_public"),
         (GROUP_DM, "dm"), (SHARED_DM, "dm"), GLOBAL},
    GROUP_DM: {(GROUP_DM, "dm"), GLOBAL_ELSEWHERE},
    SHARED_DM: {(SHARED_DM, "dm"), GLOBAL_ELSEWHERE},  # said to be one-to-one, but Bo wrote there too
}


@pytest.mark.parametrize("scope", list(READS))
def test_a_scope_finds_exactly_what_its_context_may_read(everywhere, scope):
    hits = search(scope, ANA, "bees", limit=100, store=everywhere)
    assert where(hits) == READS[scope]
    assert all("Bo keeps" not in h.text for h in hits)
    assert sum(h.level == "global" for h in hits) == 1


@pytest.mark.parametrize("query", [f'user_id:{BO} bees', f'bees OR user_id : "{BO}"', f'"bees" OR {BO}',
                                   'bees OR *', 'body:bees NEAR(bees keeps)', '{user_id body}: bees'])
def test_no_query_reaches_another_users_items_or_another_scope(everywhere, query):
    hits = search(GUILD, ANA, query, limit=100, store=everywhere)
    assert hits and where(hits) <= READS[GUILD]
    assert all("Bo keeps" not in h.text for h in hits)


def test_a_dm_nobody_imported_reads_itself_only(everywhere):
    assert where(search("dm:1170000000000000799", ANA, "bees", limit=100, store=everywhere)) == {GLOBAL_ELSEWHERE}


# ---------------------------------------------------------------------- fail closed, forget, supersede


def test_a_queued_recompute_hides_the_summaries_it_will_replace(audiences):
    store = audiences
    add_daily(store, ANA, GUILD, "Ana baked sourdough bread", D)
    add_daily(store, ANA, GUILD, "Ana baked rye bread", D + dt.timedelta(days=1))
    add_historical(store, ANA, GUILD, "Past week: Ana baked bread most days", D + dt.timedelta(days=3))
    add_historical(store, ANA, RESTRICTED, "Past week: Ana shared bread recipes", D + dt.timedelta(days=3))
    add_fact(store, ANA, GUILD, "Bakes bread at home")
    every = set(texts(search(RESTRICTED, ANA, "bread", limit=20, store=store)))
    assert len(every) == 5

    now = dt.datetime.combine(D, dt.time(20), UTC)
    store.enqueue_days([{"partition": GUILD, "day": D, "reason": "deleted"},
                        # not among the six days before the restricted week's day 1, nor of that partition
                        {"partition": RESTRICTED, "day": D - dt.timedelta(days=4), "reason": "deleted"},
                        {"partition": RESTRICTED, "day": D + dt.timedelta(days=3), "reason": "deleted"}], now)
    shown = set(texts(search(RESTRICTED, ANA, "bread", limit=20, store=store)))
    assert shown == every - {"Ana baked sourdough bread", "Past week: Ana baked bread most days"}

    store.dequeue_days([(GUILD, D)])
    assert set(texts(search(RESTRICTED, ANA, "bread", limit=20, store=store))) == every


def test_forget_and_supersede_are_seen_by_the_next_search(audiences, settings):
    store = audiences
    ctx = make_context(store, settings, now=dt.datetime.combine(D, dt.time(13), UTC))
    asyncio.run(remember(ctx, GUILD, ANA, "Ana plays the cello"))
    add_daily(store, ANA, GUILD, "Ana plays the cello for hours every day. Ana fixed her bike.")
    assert {h.kind for h in search(GUILD, ANA, "cello", store=store)} == {"fact", "daily"}

    ctx = make_context(store, settings, now=dt.datetime.combine(D, dt.time(14), UTC))
    assert asyncio.run(forget(ctx, GUILD, ANA, "plays the cello"))
    assert search(GUILD, ANA, "cello", store=store) == []
    assert search(GUILD, ANA, "bike", store=store)  # the rest of the summary stays

    old = add_fact(store, ANA, GUILD, "Home city is Porto")
    assert texts(search(GUILD, ANA, "home city", store=store)) == ["Home city is Porto"]
    with store.engine.begin() as conn:
        conn.execute(sa.update(memory_facts).where(memory_facts.c.id == old)
                     .values(status="superseded", superseded_on=D + dt.timedelta(days=1)))
    add_fact(store, ANA, GUILD, "Home city is Braga", day=D + dt.timedelta(days=1))
    assert texts(search(GUILD, ANA, "home city", store=store)) == ["Home city is Braga"]


# ---------------------------------------------------------------------- the read API


def stored_context(store, text: str) -> None:
    store.write_batch(contexts=[{
        "scope": GUILD, "user_id": ANA, "context": text, "as_of_day": D,
        "made_at": dt.datetime.combine(D, dt.time(12), UTC), "input_hash": "h", "inputs": {}, "degraded": False}])


def test_get_context_with_a_query_appends_new_hits_within_the_budget(store):
    filler(store)
    stored = "# Ana: long-term memory\n\n## Other\n- Lives in Lisbon\n\nToday: Ana said hi."
    stored_context(store, stored)
    add_fact(store, ANA, GUILD, "Lives in Lisbon")  # already in the context
    add_fact(store, ANA, GUILD, "Rides the tram in Lisbon", day=D - dt.timedelta(days=2))
    add_daily(store, ANA, GUILD, "Ana described every Lisbon tram line " + "in great detail " * 60)

    plain = get_context(GUILD, ANA, store=store)
    assert plain.text == stored and plain.hits == ()
    ctx = get_context(GUILD, ANA, query="tell me about lisbon trams", budget_tokens=100, store=store)
    assert ctx.text == stored + f"\n\nRelated memories:\n- Rides the tram in Lisbon ({D - dt.timedelta(days=2)})"
    assert texts(ctx.hits) == ["Rides the tram in Lisbon"] and estimate_tokens(ctx.text) <= 100
    assert ctx._replace(text=stored, hits=()) == plain  # the same row otherwise
    default = get_context(GUILD, ANA, query="lisbon trams", store=store)  # [search] budget: room for the long one
    assert len(default.hits) == 2 and estimate_tokens(default.text) <= 2000
    # no room, or nothing to look for: the stored context as it is (never cut)
    assert get_context(GUILD, ANA, query="lisbon", budget_tokens=5, store=store) == plain
    assert get_context(GUILD, ANA, query="what was that?", store=store) == plain


def test_hits_alone_make_a_context_where_none_is_stored(store):
    add_fact(store, ANA, GUILD, "Rides the tram in Lisbon", day=D - dt.timedelta(days=2))
    add_daily(store, ANA, GUILD, "Ana waited for the tram", D)
    assert get_context(GUILD, ANA, store=store) is None
    ctx = get_context(GUILD, ANA, query="tram", store=store)
    assert ctx.as_of_day == D and ctx.degraded is False and ctx.made_at.tzinfo is not None
    assert ctx.text.startswith("Related memories:\n- ") and len(ctx.hits) == 2
    assert get_context(GUILD, ANA, query="bicycle", store=store) is None


def test_the_async_twins_return_what_the_sync_calls_do_off_the_loop(store, monkeypatch):
    add_fact(store, ANA, GUILD, "Rides the tram in Lisbon")
    stored_context(store, "Ana: hello")
    threads = []
    real = store.searching
    monkeypatch.setattr(store, "searching", lambda *a, **kw: threads.append(threading.current_thread()) or real(*a, **kw))
    try:
        async def both():
            return (await asearch(GUILD, ANA, "tram", store=store),
                    await aget_context(GUILD, ANA, query="lisbon", store=store),
                    await aget_context(GUILD, ANA, store=store))
        hits, ctx, plain = asyncio.run(both())
        assert hits == search(GUILD, ANA, "tram", store=store)
        assert ctx == get_context(GUILD, ANA, query="lisbon", store=store) and ctx.hits
        assert plain == get_context(GUILD, ANA, store=store)
        assert threads[0] is not threading.main_thread() and threads[0].name.startswith("mempipe-read")
        with pytest.raises(SearchError):
            asyncio.run(asearch(GUILD, ANA, "tram", limit=0, store=store))
    finally:
        read.reset()
    assert read._executor is None


class NoDatabase:
    def __getattr__(self, name):
        raise AssertionError(f"the database was asked ({name})")


@pytest.mark.parametrize("call", [
    lambda: search(GUILD, ANA, b"tram", store=NoDatabase()),
    lambda: search(GUILD, ANA, None, store=NoDatabase()),
    lambda: search(GUILD, ANA, "tram", limit=0, store=NoDatabase()),
    lambda: search(GUILD, ANA, "tram", limit=101, store=NoDatabase()),
    lambda: search(GUILD, ANA, "tram", limit=True, store=NoDatabase()),
    lambda: search(GUILD, ANA, "tram", limit=2.0, store=NoDatabase()),
    lambda: get_context(GUILD, ANA, query=["tram"], store=NoDatabase()),
    lambda: get_context(GUILD, ANA, query="tram", budget_tokens=0, store=NoDatabase()),
])
def test_bad_requests_are_refused_before_the_database(call):
    with pytest.raises(SearchError):
        call()


def test_bad_ids_and_empty_queries_never_reach_the_database():
    with pytest.raises(ScopeError):
        search("guild:x", ANA, "tram", store=NoDatabase())
    assert search(GUILD, ANA, "what was the thing you told me?", store=NoDatabase()) == []
    assert search(GUILD, str(ANA), '"" * ( ) ^ -', store=NoDatabase()) == []


# ---------------------------------------------------------------------- outages


@pytest.mark.parametrize("table, scope", [("memory_items", GUILD), ("channels", DM), ("chat_history", DM)])
def test_a_broken_database_raises_store_error_never_no_hits(audiences, table, scope):
    store = audiences
    add_fact(store, ANA, GUILD, "Rides the tram in Lisbon", level="global")
    with store.engine.begin() as conn:
        conn.execute(sa.text(f"ALTER TABLE {table} RENAME TO gone_{table}"))
    with pytest.raises(StoreError, match="database error while"):
        search(scope, ANA, "tram", store=store)
    with pytest.raises(StoreError):
        get_context(scope, ANA, query="tram", store=store)


def test_an_unreachable_database_raises_store_error(db_kind, db_url, tmp_path):
    if db_kind == "sqlite":
        url = f"sqlite:///{tmp_path}/no-such-directory/mempipe.db"
    else:
        url = sa.engine.make_url(db_url).set(database=f"mempipe_missing_{uuid.uuid4().hex[:8]}") \
            .render_as_string(hide_password=False)
    read.reset()
    try:
        with pytest.raises(StoreError):
            search(GUILD, ANA, "tram", database_url=url)
        assert url not in read._stores
        store = Store.open(url, check_schema=False)
        try:
            with pytest.raises(StoreError):
                asyncio.run(asearch(GUILD, ANA, "tram", store=store))
        finally:
            store.close()
    finally:
        read.reset()


def test_get_context_takes_its_search_settings_and_looks_past_hits_it_holds(store, settings):
    stored = "# Ana: long-term memory\n\n## Other\n- Lives in Lisbon\n- Rides the tram in Lisbon"
    stored_context(store, stored)
    add_fact(store, ANA, GUILD, "Lives in Lisbon", confidence=1.0)  # the best hits: already in the context
    add_fact(store, ANA, GUILD, "Rides the tram in Lisbon", confidence=1.0)
    for n in range(3):
        add_daily(store, ANA, GUILD, f"Ana found café number {n} in Lisbon", D - dt.timedelta(days=n + 1))
    one = settings.model_copy(update={"search": settings.search.model_copy(update={"context_hits": 1})})
    ctx = get_context(GUILD, ANA, query="Lisbon", store=store, settings=one)
    assert [h.kind for h in ctx.hits] == ["daily"]  # past the two it holds, and only one ([search] context_hits)
    assert len(get_context(GUILD, ANA, query="Lisbon", store=store, settings=settings).hits) == 3
