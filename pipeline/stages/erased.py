"""Names of erased users in other people's chat.

`erase` deletes a user's messages, names and every derived row that names them, but another
member's message that typed the name as plain text ("I play chess with Zephyrine") is that
member's and stays in chat_history. Without more, the next run that summarises such a day again
(erase queues it) would put the name back into summaries, facts and contexts. So erase records,
for each partition where the user had a name, a sha256 of each significant word of their names
(`word_key`) and when (`erased_names`, sql/migrations/0016). The word itself is not stored; the
hash has no secret key, so it hides the word from a reader of the table, not from someone who
guesses it and hashes the guess. The daily stage then reads such a word as "someone" in that
partition's messages posted before then — the summarizer never sees it — and in what the
summarizer says of those partition-days (`scrubber`), whatever it answers.

Not reached: messages posted after the erase (a name said later is new chat, not the erased
user's data), and names made only of stop words ("Will") or of one letter, which would blank
ordinary words.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import re
from collections import defaultdict
from typing import Callable, Iterable

from ..summarize.text import STOPWORDS, WORD, tokens

PLACEHOLDER = "someone"


# cached: blanking hashes every word of a partition's older messages, and chat repeats its words
@functools.lru_cache(maxsize=1 << 16)
def word_key(word: str) -> str:
    """A name word as erased_names keeps it (lower case, as `tokens` reads it)."""
    return hashlib.sha256(f"mempipe:erased-name:{word}".encode()).hexdigest()[:32]


def name_word_keys(names: Iterable[str]) -> set[str]:
    """The keys of the words of `names` a run blanks: significant ones of two letters or more."""
    return {word_key(w) for name in names for w in tokens(name) if w not in STOPWORDS and len(w) > 1}


def _normal(token: str) -> tuple[str, str]:
    """(the word as `tokens` reads it — the words names_person compares —, the possessive "'s"
    it dropped, as written)."""
    word = tokens(token)[0]
    return word, "" if word == token.lower() else token[-2:]  # `tokens` lower-cases, or also drops "'s"


class ErasedNames:
    """Every erased name word, by partition: {word key: erased at}."""

    def __init__(self, rows: Iterable[dict] = ()):
        self.by_partition: dict[str, dict[str, dt.datetime]] = defaultdict(dict)
        for r in rows:
            self.by_partition[r["partition"]][r["word_key"]] = r["erased_at"]

    def __bool__(self) -> bool:
        return bool(self.by_partition)

    def _blank(self, keys: dict[str, dt.datetime], text: str, ts: dt.datetime | None) -> str:
        def one(m: re.Match) -> str:
            word, possessive = _normal(m.group())
            at = keys.get(word_key(word))
            return PLACEHOLDER + possessive if at is not None and (ts is None or ts < at) else m.group()
        return WORD.sub(one, text)

    def kept(self, partition: str, messages: list[dict]) -> list[dict]:
        """The partition's messages with each erased name word posted before its erase read as
        "someone" (the same list when the partition has none)."""
        keys = self.by_partition.get(partition)
        if not keys:
            return messages
        last = max(keys.values())
        return [m if m["ts"] >= last else {**m, "text": self._blank(keys, m["text"], m["ts"])} for m in messages]

    def scrubber(self, partition: str, times: Iterable[dt.datetime]) -> Callable[[str], str] | None:
        """For a partition-day with messages at `times`: when any was posted before an erase of
        a name known in the partition, what reads every such name word in a text (what the
        summarizer says of that day) as "someone"; else None (nothing to scrub)."""
        keys = self.by_partition.get(partition)
        if not keys:
            return None
        last = max(keys.values())
        if not any(t < last for t in times):
            return None
        return lambda text: self._blank(keys, text, None) if text else text


NONE = ErasedNames()


def load_erased_names(store) -> ErasedNames:
    return ErasedNames(store.erased_names())
