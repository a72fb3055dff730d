"""pipeline/search/terms.py: a chat message becomes plain words, and those words become an FTS5
MATCH or a to_tsquery text in which nothing a user typed is read as syntax. The FTS5 side is also
run against an in-memory FTS5 table with the index's own tokenizer: no hostile query may fail or
reach another user's rows or another column."""

from __future__ import annotations

import re
import sqlite3
import time
import unicodedata

import pytest

from pipeline.search.terms import MAX_TERMS, fts5_match, pg_tsquery, query_terms

ANA, BO = 1160000000000000001, 1160000000000000002

HOSTILE = [
    '"a" OR x:*', 'NEAR(', 'NEAR(cat dog, 2)', 'body:secret', 'user_id:1160000000000000002', 'user_id : "1"',
    'cat*', '^cat', '-cat', '(cat', 'cat)', 'cat AND dog', 'cat OR', 'NOT cat', '"', '""', '"cat', "it's",
    "o'neil \\' back\\slash", '{user_id body}: cat', 'cat + dog', "'cat' | 'dog' & !x", 'cat:*', 'cat <-> dog',
    '\x00cat', 'cat\u200bdog',
]
FTS5_SHAPE = re.compile(r'user_id : "\d+" AND body : \("[^"]+"(?: OR "[^"]+")*\)')


def test_the_words_of_a_question_without_its_filler():
    assert query_terms("What did I tell you about the café in March?") == ["café", "march"]
    assert query_terms("Do you remember my cat's name?") == ["cat", "name"]
    assert query_terms("Lisbon lisbon LISBON trams, Lisbon!") == ["lisbon", "trams"]  # once each, in order


@pytest.mark.parametrize("text", ["", "   ", "the and of", "What was that, you told me?", "?!…", "_ _ __", "I"])
def test_a_query_of_only_stop_words_or_punctuation_has_no_terms(text):
    assert query_terms(text) == []


def test_at_most_32_terms_and_a_huge_query_is_read_only_that_far():
    words = [f"word{i}" for i in range(10_000)]
    started = time.perf_counter()
    terms = query_terms(" ".join(words) * 20)  # ~2 MB
    assert terms == words[:MAX_TERMS] and MAX_TERMS == 32
    assert time.perf_counter() - started < 2
    assert query_terms("x" * 100_000 + " cat") == ["cat"]  # a 100k-letter "word" is noise


def test_unicode_words_case_and_diacritics():
    assert query_terms("Café CAFÉ") == ["café"]
    decomposed = unicodedata.normalize("NFD", "café")
    assert query_terms(f"{decomposed} bar") == ["café", "bar"]  # one word, as the tokenizers see it
    assert query_terms("Straße") == ["straße"]  # lower-cased as the engines do (casefold would say "strasse")
    assert query_terms("東京 タワー") == ["東京", "タワー"]
    assert query_terms("snake_case") == ["snake", "case"]  # "_" is not a letter
    assert pg_tsquery(["café"]) == "'café' | 'cafe'"  # PostgreSQL's 'english' keeps marks: both spellings


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_input_is_only_words(text):
    terms = query_terms(text)
    assert all(re.fullmatch(r"[^\W_]+", t) for t in terms)
    if terms:
        assert FTS5_SHAPE.fullmatch(fts5_match(ANA, terms))
        assert re.fullmatch(r"'[^'\\]+'(?: \| '[^'\\]+')*", pg_tsquery(terms))


def test_operator_words_are_plain_words():
    assert query_terms("NEAR( cat") == ["near", "cat"]
    assert fts5_match(ANA, ["near", "cat"]) == f'user_id : "{ANA}" AND body : ("near" OR "cat")'
    assert query_terms("cat AND dog OR NOT bird") == ["cat", "dog", "bird"]  # and/or/not: stop words anyway


def test_quotes_and_backslashes_in_a_term_are_escaped():
    # query_terms never yields them; the quoting holds on its own all the same
    assert fts5_match(1, ['a"b']) == 'user_id : "1" AND body : ("a""b")'
    assert pg_tsquery(["o'neil", "a\\"]) == "'o''neil' | 'a\\\\'"
    with pytest.raises(ValueError):
        fts5_match(1, [])
    with pytest.raises(ValueError):
        pg_tsquery([])


@pytest.fixture
def fts():
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(user_id, body, tokenize='porter unicode61 remove_diacritics 2')")
    db.executemany("INSERT INTO t (user_id, body) VALUES (?, ?)", [
        (str(ANA), "Has a cat named Miso and went to the café"),
        (str(BO), "secret cat near the body of water, user id card"),
        (str(BO), "dog bird " + " ".join(f"word{i}" for i in range(40))),
    ])
    yield db
    db.close()


@pytest.mark.parametrize("text", HOSTILE + ["cat", "cafe", "secret body user id near", "x" * 64])
def test_no_hostile_query_fails_or_reaches_another_user(fts, text):
    terms = query_terms(text)
    if not terms:
        return
    rows = fts.execute("SELECT user_id FROM t WHERE t MATCH ?", (fts5_match(ANA, terms),)).fetchall()
    assert all(r == (str(ANA),) for r in rows)


def test_the_match_finds_the_users_own_words_stemmed_and_folded(fts):
    def found(text):
        return fts.execute("SELECT count(*) FROM t WHERE t MATCH ?", (fts5_match(ANA, query_terms(text)),)).fetchone()[0]
    assert found("cats?") == 1 and found("CAFE") == 1 and found("named") == 1
    assert found("secret") == 0 and found("dog") == 0  # Bo's words, not Ana's
    # user_id is matched as a token of its own column: a body holding the id does not count
    assert fts.execute("SELECT count(*) FROM t WHERE t MATCH ?",
                       (fts5_match(ANA, ["card"]),)).fetchone()[0] == 0
