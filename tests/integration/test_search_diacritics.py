"""Diacritics are folded on both databases alike (ARCHITECTURE.md "Search": SQLite's FTS5 folds
them, PostgreSQL is asked for the folded spelling too): an item stored with accents is found by the
query typed without them, and the other way round — the same hits on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from pipeline.read import search
from tests.integration.test_search import ANA, GUILD, add_fact

ITEMS = ["Visits the café every morning", "Reads naïve poetry", "Moved to Kraków last spring",
         "Loves the creme brulee at Chez Paul"]


@pytest.mark.parametrize("query, found", [
    ("cafe", "Visits the café every morning"),  # accented item, plain query
    ("naive", "Reads naïve poetry"),
    ("krakow", "Moved to Kraków last spring"),
    ("KRAKÓW", "Moved to Kraków last spring"),
    ("crème brûlée", "Loves the creme brulee at Chez Paul"),  # plain item, accented query
])
def test_an_item_is_found_whatever_accents_either_side_writes(store, query, found):
    for text in ITEMS:
        add_fact(store, ANA, GUILD, text)
    assert [h.text for h in search(GUILD, ANA, query, limit=10, store=store)] == [found]
