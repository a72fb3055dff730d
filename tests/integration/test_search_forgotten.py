"""A forgotten fact is never found again by a scope whose context it applies to: a forget in scope S
scrubs the rows of S's partitions and every context that reads one of them whole
(pipeline/stages/forgetting.py), so a search — or get_context's "Related memories" — in such a
scope must not bring it back from a partition the forget did not scrub (the user's own DM, a
restricted channel of the guild). Scopes the forget does not reach keep finding it, as their
contexts keep it. On both databases."""

from __future__ import annotations

import asyncio
import datetime as dt

import sqlalchemy as sa

from pipeline.db.tables import memory_facts
from pipeline.read import get_context, search
from pipeline.stages.facts import forget
from tests.helpers import make_context
from tests.integration.test_forget_scope import ANA, DM_ANA, FACT, G, GROUP, _contexts, _has, _load

UTC = dt.timezone.utc
DM, GROUP_DM, GUILD = f"dm:{DM_ANA}", f"dm:{GROUP}", f"guild:{G}"


def _texts(hits) -> list[str]:
    return [h.text for h in hits]


def test_a_fact_forgotten_in_the_guild_is_not_found_by_her_dm_whose_context_it_was_scrubbed_from(store, settings):
    _load(store, settings)
    assert any(_has(t) for t in _texts(search(DM, ANA, FACT, limit=20, store=store)))
    assert asyncio.run(forget(make_context(store, settings), GUILD, ANA, FACT))
    contexts = _contexts(store)
    assert not _has(contexts[(DM, ANA)])  # her DM's context reads the guild: scrubbed whole

    assert not any(_has(t) for t in _texts(search(DM, ANA, FACT, limit=20, store=store)))
    assert not any(_has(t) for t in _texts(search(GUILD, ANA, "balcony beehive honey", limit=20, store=store)))
    with_hits = get_context(DM, ANA, query="how is my balcony beehive?", store=store)
    assert with_hits is None or not _has(with_hits.text)
    # the group DM is not read by the guild's audience: its context keeps it, and so does its search
    assert _has(contexts[(GROUP_DM, ANA)])
    assert any(_has(t) for t in _texts(search(GROUP_DM, ANA, FACT, limit=20, store=store)))


def test_a_fact_of_an_unscrubbed_partition_stating_a_forgotten_fact_is_not_found_where_it_applies(store, settings):
    _load(store, settings)
    now = dt.datetime(2026, 11, 4, 12, tzinfo=UTC)
    with store.engine.begin() as conn:  # a fact said in her own DM, which a guild forget does not delete
        conn.execute(sa.insert(memory_facts), {
            "user_id": ANA, "partition": DM, "level": "dm", "category": "other", "text": "Keeps a balcony beehive",
            "confidence": 0.9, "first_seen": now.date(), "last_seen": now.date(), "sources": ["manual"],
            "origin": "manual", "status": "active", "input_hash": "h", "created_at": now, "updated_at": now})
    assert "Keeps a balcony beehive" in _texts(search(DM, ANA, "beehive", limit=20, store=store))
    asyncio.run(forget(make_context(store, settings), GUILD, ANA, FACT))
    assert "Keeps a balcony beehive" not in _texts(search(DM, ANA, "beehive", limit=20, store=store))
    assert search(DM, ANA, "morning", limit=20, store=store) == []  # the DM summary states it: it goes whole


def test_a_users_names_are_read_by_an_index(store):
    """The names a forgotten-fact check reads (query search_member_names) come from an index on
    members.user_id (migration 0023), not a read of every member: it runs on a bot's read path."""
    from pipeline.db.queries import query

    sql = query("search_member_names")
    with store.engine.connect() as conn:
        if store.dialect == "sqlite":
            plan = " ".join(str(r[-1]) for r in conn.execute(sa.text("EXPLAIN QUERY PLAN " + sql), {"user_id": ANA}))
        else:  # an empty table: make the planner choose as it would at size
            conn.execute(sa.text("SET enable_seqscan = off"))
            plan = " ".join(r[0] for r in conn.execute(sa.text("EXPLAIN " + sql), {"user_id": ANA}))
    assert "members_user" in plan, plan
