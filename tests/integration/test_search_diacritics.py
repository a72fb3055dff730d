"""Diacritics are folded on both databases alike (ARCHITECTURE.md "Search": SQLite's FTS5 folds
them, PostgreSQL is asked for the folded spelling too): an item stored with accents is found by the
query typed without them, and the other way round — the same hits on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

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


# The Latin blocks whose letters carry diacritics (0021/0022 fold the 486 of them SQLite folds).
LATIN_BLOCKS = [(0x00C0, 0x00FF), (0x0100, 0x017F), (0x0180, 0x024F), (0x1E00, 0x1EFF)]


def _sqlite_folds(chars: list[str]) -> dict[str, str]:
    """What SQLite's FTS5 tokenizer (unicode61 remove_diacritics 2, as memory_items_fts uses) makes of
    each character alone: the independent reference PostgreSQL's folding must match."""
    import sqlite3

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(x, tokenize = 'unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')")
    conn.executemany("INSERT INTO f (rowid, x) VALUES (?, ?)", [(i + 1, c) for i, c in enumerate(chars)])
    return {chars[doc - 1]: term for term, doc in conn.execute("SELECT term, doc FROM v")}


def test_postgresql_folds_every_latin_letter_as_sqlite_does(store):
    """The folding PostgreSQL's search index applies (mempipe_fold_diacritics) gives, for every
    letter of the Latin blocks, the letter SQLite's tokenizer gives (lowercased as both index); and
    text of other scripts, punctuation and plain ASCII passes unchanged."""
    if store.dialect != "postgresql":
        pytest.skip("SQLite's tokenizer is the reference itself")
    chars = [chr(c) for a, b in LATIN_BLOCKS for c in range(a, b + 1)]
    reference = _sqlite_folds(chars)
    with store.engine.connect() as conn:
        folded = conn.execute(sa.text("SELECT c, mempipe_fold_diacritics(c) FROM unnest(CAST(:cs AS text[])) AS c"),
                              {"cs": chars}).all()
        untouched = ["Привет, мир", "東京タワー", "plain ascii 123", "ß ø ł đ ħ ŧ", "«»×÷"]
        same = conn.execute(sa.text("SELECT array_agg(mempipe_fold_diacritics(t) = t) FROM unnest(CAST(:ts AS text[])) t"),
                            {"ts": untouched}).scalar_one()
    differs = {c: (f, reference.get(c)) for c, f in folded if c in reference and f.lower() != reference[c]}
    assert not differs
    assert sum(1 for c, f in folded if f != c) == 488  # the letters 0021 names and the long s, no more
    assert all(same)
