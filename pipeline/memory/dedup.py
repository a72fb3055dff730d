"""ADD / UPDATE / NOOP: a new fact against what is known of the same user at the same privacy
level — never across levels (a `dm` fact must never merge into, or overwrite, a `guild_public`
or `global` one), and below `global` never across partitions either (two guilds' public facts
have different audiences).

The measure (`similarity`): rapidfuzz's token-set ratio / 100 over the facts' content words
(pipeline/summarize/text.py `content_tokens`: lower-case, stop words out). 1.0 when one fact's
words are a subset of the other's, so a restatement with more detail counts as the same fact.

- similarity ≥ `same_fact` (0.85): the same fact. NOOP when the new one adds no word (the known
  row's last_seen, sources and confidence are updated); otherwise UPDATE: the newer statement
  supersedes the older (kept as `superseded`: history).
- otherwise, the same `fact_key` ("favourite game", "home city"): a new value of the same
  attribute. UPDATE, the newer (by first_seen day, not by processing order: a replay may extract
  day 50 before day 20) active, the older superseded.
- otherwise ADD.

Pure: the store reads the rows, calls `reconcile`, and writes what it returns, in one
transaction (pipeline/store/facts.py); pipeline/testing.py's in-memory store does the same.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process

from ..summarize.text import content_tokens, tokens

MAX_SOURCES = 20  # provenance kept per fact: the first messages it rests on


@functools.lru_cache(maxsize=65536)
def _words(text: str) -> str:
    return " ".join(content_tokens(text)) or text.lower()


def similarity(a: str, b: str) -> float:
    return fuzz.token_set_ratio(_words(a), _words(b)) / 100.0


class Seen:
    """Facts already shown, asked "is this one the same as any of them?" (`similarity` ≥
    same_fact with at least one): one call into rapidfuzz over all of them finds the few near
    the threshold instead of one Python call per pair (a profile of hundreds of facts asked it
    hundreds of times). Its cutoff sits a point under the threshold — with a cutoff rapidfuzz
    may drop a score within a hair of it — and each one found is then scored as `similarity`
    scores it, so the answer is exactly `any(similarity(text, s) >= same_fact for s in shown)`."""

    def __init__(self, same_fact: float):
        self.same_fact = same_fact
        self._cutoff = max(same_fact * 100.0 - 1.0, 0.0)
        self._words: list[str] = []

    def add(self, text: str) -> None:
        self._words.append(_words(text))

    def has_same(self, text: str) -> bool:
        if not self._words:
            return False
        words = _words(text)
        near = process.extract(words, self._words, scorer=fuzz.token_set_ratio, processor=None,
                               score_cutoff=self._cutoff, limit=None)
        return any(fuzz.token_set_ratio(words, self._words[i]) / 100.0 >= self.same_fact for _w, _s, i in near)


def normal_key(key: str | None) -> str | None:
    """"Favorite_Game" and "favourite game" are one attribute."""
    if not key:
        return None
    key = re.sub(r"[\s_\-]+", " ", key.strip().lower()).replace("favorite", "favourite")
    return key or None


def group_of(row: dict) -> tuple:
    """Facts that may be compared: one user, one level, and (below global) one partition."""
    return (row["user_id"], row["level"], None if row["level"] == "global" else row["partition"])


@dataclass
class Plan:
    """What to write: new rows (each with its final status), changes to stored rows by id, and
    counts for pipeline_runs (added / updated / unchanged)."""

    inserts: list[dict] = field(default_factory=list)
    updates: dict[int, dict] = field(default_factory=dict)
    counts: Counter = field(default_factory=Counter)


def _adds_nothing(new: str, old: str) -> bool:
    return set(content_tokens(new) or tokens(new)) <= set(content_tokens(old) or tokens(old))


def _merged_sources(old: list, new: list) -> list:
    return (list(old) + [s for s in new if s not in old])[:MAX_SOURCES]


def reconcile(existing: list[dict], new_rows: list[dict], same_fact: float) -> Plan:
    """`existing`: stored active rows (with `id`) of the users of `new_rows`; `new_rows`: validated
    facts (memory_facts columns, no id/status). Decisions see the rows planned before them."""
    plan = Plan()
    groups: dict[tuple, list[dict]] = {}
    for row in existing:
        if row["status"] == "active":
            groups.setdefault(group_of(row), []).append(row)

    def change(row: dict, **values) -> None:
        row.update(values)
        if "id" in row:  # a stored row; a planned insert is changed in place
            plan.updates.setdefault(row["id"], {}).update(values)

    def supersede(older: dict, newer: dict) -> None:
        change(older, status="superseded", superseded_on=newer["first_seen"])

    for new in sorted(new_rows, key=lambda r: r["first_seen"]):
        new = dict(new, status="active", superseded_on=None)
        known = groups.setdefault(group_of(new), [])
        best, best_score = None, 0.0
        for row in known:
            score = similarity(new["text"], row["text"])
            if score > best_score:
                best, best_score = row, score
        key = normal_key(new.get("fact_key"))
        same_key = next((r for r in known if key and normal_key(r.get("fact_key")) == key), None)
        if best is not None and best_score >= same_fact and _adds_nothing(new["text"], best["text"]):
            change(best, last_seen=max(best["last_seen"], new["last_seen"]),
                   first_seen=min(best["first_seen"], new["first_seen"]),
                   confidence=max(best["confidence"], new["confidence"]),
                   sources=_merged_sources(best["sources"], new["sources"]),
                   event_day=best.get("event_day") or new.get("event_day"),
                   updated_at=new["updated_at"])
            plan.counts["unchanged"] += 1
            continue
        older = best if best is not None and best_score >= same_fact else same_key
        if older is None:
            known.append(new)
            plan.inserts.append(new)
            plan.counts["added"] += 1
        elif new["first_seen"] >= older["first_seen"]:
            supersede(older, new)
            known.remove(older)
            known.append(new)
            plan.inserts.append(new)
            plan.counts["updated"] += 1
        else:  # said before what is known: history, not news
            new.update(status="superseded", superseded_on=older["first_seen"])
            plan.inserts.append(new)
            plan.counts["unchanged"] += 1
    return plan
