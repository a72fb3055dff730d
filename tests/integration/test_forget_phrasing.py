"""A forget reaches the fact however it is phrased (README, "User controls"), on both databases.

Facts are stored in the third person ("Lives in Zqxanaville"), summaries quote the chat in the
first ("I live in Zqxanaville"); a user forgets the fact as `user show` lists it, or as they said it
("forget that I live in …"), in any case, with punctuation, or typed with lookalike letters. After
the forget and after the next run no fact row, summary, profile, context or search item states it;
the user's other facts stay. Dataset: tests/integration/test_controls.py.
"""

from __future__ import annotations

import asyncio
import re

import pytest

from pipeline import controls
from tests.helpers import make_context, tokens_in_tables
from tests.integration.test_controls import ANA, G, NOW, load, run

FORGOTTEN = re.compile(r"zqxanaville", re.IGNORECASE)
# the chat itself stays, and so does the record of what to forget (it keeps it out of later runs)
KEEPS_TEXT = {"chat_history", "forgotten_facts"}


def _traces(store) -> set[str]:
    return set(tokens_in_tables(store.engine, FORGOTTEN)) - KEEPS_TEXT


@pytest.mark.parametrize("said", ["Lives in Zqxanaville", "I live in Zqxanaville", "LIVING IN ZQXANAVILLE!",
                                  "lives in Ｚｑｘａｎａｖｉｌｌｅ", "lives in Zqxanavillé"])
def test_a_forget_reaches_every_phrasing_of_the_fact(store, settings, said):
    load(store, settings)
    facts = {f["text"] for f in store.memory_facts(user_ids=[ANA])}
    assert "Lives in Zqxanaville" in facts and _traces(store)
    found = asyncio.run(controls.forget(make_context(store, settings, now=NOW), f"guild:{G}", ANA, said,
                                        requested_by=ANA))
    assert found
    assert _traces(store) == set()
    run(store, settings)
    assert _traces(store) == set()
    assert {f["text"] for f in store.memory_facts(user_ids=[ANA])} == facts - {"Lives in Zqxanaville"}  # only it
