"""A forgotten fact leaves other people's facts that state it about the person too (README, "User
controls": no row keeps a forgotten text), on both databases: Bo's fact "Visited ZqxanaNick at her
flat in Zqxanaville" goes when she forgets Zqxanaville — from memory_facts, and so from search —
while Bo's facts that do not name her stay. Dataset: tests/integration/test_controls.py.
"""

from __future__ import annotations

import asyncio
import datetime as dt

from pipeline import controls
from pipeline.ingest import ingest_messages
from pipeline.read import search
from tests.helpers import make_context
from tests.integration.test_controls import ANA, BO, G, GEN, NOW, load, msg, run

ABOUT_HER = "Visited ZqxanaNick at her flat in Zqxanaville"
BOS_OWN = "Grew tomatoes in Zqxanaville as a kid, long ago"  # the same place, not about her


def _bo_facts(store) -> set[str]:
    return {f["text"] for f in store.memory_facts(user_ids=[BO])}


def test_a_forget_deletes_other_peoples_facts_that_state_it_about_the_person(store, settings):
    ingest_messages(store, [msg(50, GEN, BO, "I visited ZqxanaNick at her flat in Zqxanaville, lovely place.", 3, 16),
                            msg(51, GEN, BO, "I grew tomatoes in Zqxanaville as a kid, long ago.", 3, 17)], settings)
    load(store, settings)
    assert {ABOUT_HER, BOS_OWN} <= _bo_facts(store)
    asyncio.run(controls.forget(make_context(store, settings, now=NOW), f"guild:{G}", ANA, "Zqxanaville",
                                requested_by=ANA))
    assert ABOUT_HER not in _bo_facts(store) and BOS_OWN in _bo_facts(store)
    assert ABOUT_HER not in {h.text for h in search(f"guild:{G}", BO, "flat visit", store=store)}
    run(store, settings, now=NOW + dt.timedelta(hours=1))
    assert ABOUT_HER not in _bo_facts(store) and BOS_OWN in _bo_facts(store)
