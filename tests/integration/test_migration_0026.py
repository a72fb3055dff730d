"""Migration 0026 on a database with data, on both databases: a fact an in-chat "remember" stored
before (sources ["chat"]) gets the request's message as its source where one applied request alone
can have made it (same user, partition and day); two candidate requests or facts, a refused or pending
one, an extracted fact, a `facts remember` fact, or a chat fact that merged other sources, keep
what they had."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from pipeline.db.migrations import upgrade
from pipeline.db.tables import chat_requests, memory_facts
from pipeline.store import Store
from tests.integration.test_migration_0004 import _upgrade_to

UTC = dt.timezone.utc
G, CH = 1150000000000000001, 1170000000000000001
ANA, BO = 1160000000000000001, 1160000000000000002
D3, D4 = dt.date(2026, 11, 3), dt.date(2026, 11, 4)
AT = dt.datetime(2026, 11, 4, tzinfo=UTC)


def _fact(user: int, text: str, day: dt.date, sources: list, origin: str = "manual") -> dict:
    return {"user_id": user, "partition": f"guild:{G}", "level": "guild_public", "category": "other", "text": text,
            "fact_key": None, "confidence": 1.0, "event_day": None, "first_seen": day, "last_seen": day,
            "sources": sources, "origin": origin, "status": "active", "superseded_on": None, "input_hash": "h",
            "created_at": AT, "updated_at": AT}


def _request(message: int, user: int, day: dt.date, status: str = "applied", kind: str = "remember") -> dict:
    return {"channel_id": CH, "message_id": message, "user_id": user, "partition": f"guild:{G}", "day": day,
            "ts": dt.datetime.combine(day, dt.time(9), tzinfo=UTC), "kind": kind, "text": None, "status": status,
            "reason": None, "detected_at": AT, "handled_at": AT}


def test_0026_gives_an_old_chat_fact_its_request_message_where_only_one_can_be_it(db_url):
    store = Store.open(db_url, check_schema=False)
    try:
        _upgrade_to(store.engine, 25)
        with store.engine.begin() as conn:
            conn.execute(sa.insert(memory_facts), [
                _fact(ANA, "Is vegetarian", D3, ["chat"]),                     # one applied request that day: mapped
                _fact(BO, "Plays the cello", D3, ["chat"]),                    # two that day: kept
                _fact(BO, "Runs marathons", D4, ["chat"]),                     # only a refused one: kept
                _fact(ANA, "Likes tea", D4, ["chat", f"{CH}:900"]),            # merged with a message: kept
                _fact(ANA, "Lives in Lisbon", D4, ["manual"]),                 # `facts remember`: kept
                _fact(ANA, "Paints miniatures", D3, [f"{CH}:901"], origin="extracted"),
                _fact(BO, "Bakes bread", dt.date(2026, 11, 5), ["chat"]),        # one request, two such facts:
                _fact(BO, "Keeps bees", dt.date(2026, 11, 5), ["chat"]),         # both kept
            ])
            conn.execute(sa.insert(chat_requests), [
                _request(11, ANA, D3), _request(12, ANA, D3, kind="forget"), _request(21, BO, D3), _request(22, BO, D3),
                _request(31, BO, D4, status="refused"), _request(41, ANA, D4, status="pending"),
                _request(51, BO, dt.date(2026, 11, 5))])
        assert [m.version for m in upgrade(store.engine)][0] == 26
        with store.engine.connect() as conn:
            got = {text: sources for text, sources in conn.execute(sa.select(memory_facts.c.text, memory_facts.c.sources))}
        assert got == {"Is vegetarian": [f"{CH}:11"], "Plays the cello": ["chat"], "Runs marathons": ["chat"],
                       "Likes tea": ["chat", f"{CH}:900"], "Lives in Lisbon": ["manual"],
                       "Paints miniatures": [f"{CH}:901"], "Bakes bread": ["chat"], "Keeps bees": ["chat"]}
    finally:
        store.close()
