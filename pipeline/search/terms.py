"""A user's search query -> the words worth looking up, and those words as each database's
full-text query.

The query is someone's chat message ("what did I tell you about the café in March?"), never
full-text syntax: only its words are kept, and each is passed to the engine as a quoted literal,
so `"a" OR x:*`, `NEAR(`, `body:secret`, `user_id:1`, `*`, `^`, `-`, parentheses and the words
AND / OR / NOT can neither fail the query nor widen it to another column or another user.
"""

from __future__ import annotations

import re
import unicodedata

MAX_TERMS = 32  # enough for any real question; bounds the work of one search
MAX_TERM_CHARS = 64  # no word is longer: a longer run of letters is noise, not a term

WORD = re.compile(r"[^\W_]+")  # letters and digits of any script; "_" and punctuation split words

# English stop words, and the filler of a question put to a chat bot ("what did I tell you
# about..."): they match everything and rank nothing.
STOP_WORDS = frozenset("""
a about above after again against all am an and any are aren as at be because been before being
below between both but by can cannot could couldn did didn do does doesn doing don down during
each few for from further had hadn has hasn have haven having he her here hers herself him himself
his how i if in into is isn it its itself just let ll me more most mustn my myself no nor not now
of off on once only or other ought our ours ourselves out over own re same shan she should
shouldn so some such than that the their theirs them themselves then there these they this those
through to too under until up ve very was wasn we were weren what when where which while who whom
why will with won would wouldn you your yours yourself yourselves d m s t y o
ago also anything around ask asked bot ever every get got hey hi hmm know
last like mention mentioned please recall remember remind said say saying something tell telling
tells thing things think told us whatever yeah yes ok okay oh um uh
""".split())


def query_terms(text: str) -> list[str]:
    """The words of a query, lower-cased, without stop words or chat filler, each once, in the
    order they first appear, at most MAX_TERMS. [] when nothing is left (then there is nothing
    to search for, and no database is asked)."""
    if not isinstance(text, str):
        raise TypeError("a search query is text")
    out: list[str] = []
    seen: set[str] = set()
    # NFC first: a decomposed "café" (e + combining accent) is one word, as the tokenizers see it
    for match in WORD.finditer(unicodedata.normalize("NFC", text)):  # stops at MAX_TERMS
        word = match.group().lower()  # as FTS5 and PostgreSQL fold case ("ß" stays "ß", unlike casefold)
        if word in STOP_WORDS or word in seen or len(word) > MAX_TERM_CHARS:
            continue
        seen.add(word)
        out.append(word)
        if len(out) == MAX_TERMS:
            break
    return out


def fts5_match(user_id: int, terms: list[str]) -> str:
    """An FTS5 MATCH expression for one user's items holding any of the terms:
    `user_id : "<id>" AND body : ("t1" OR "t2")`. Every term is a double-quoted string (its own
    `"` doubled), so FTS5 reads it as words to look up, never as operators or column filters."""
    if not terms:
        raise ValueError("no terms to match")
    quoted = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    return f'user_id : "{int(user_id)}" AND body : ({quoted})'


def _without_marks(word: str) -> str:
    """"café" -> "cafe": PostgreSQL's 'english' configuration keeps diacritics (SQLite's
    tokenizer folds them), so the folded spelling is asked for too."""
    return "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c))


def pg_tsquery(terms: list[str]) -> str:
    """A to_tsquery('english', ...) text: `'t1' | 't2'`, every term a quoted lexeme (its `'`
    doubled, a backslash doubled), so no term is read as an operator, a weight or a prefix."""
    if not terms:
        raise ValueError("no terms to match")
    spelled = list(dict.fromkeys(s for t in terms for s in (t, _without_marks(t)) if s))
    return " | ".join("'" + s.replace("\\", "\\\\").replace("'", "''") + "'" for s in spelled)
