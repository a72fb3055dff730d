"""What a fact write reads to decide ADD / UPDATE / NOOP (pipeline/store/facts.py `_comparable`):
exactly the stored active facts of the new facts' groups (memory/dedup.py `group_of`), and the
decisions and rows are those of the in-memory store, which compares with every fact of the user."""

from __future__ import annotations

import datetime as dt

from pipeline.memory.dedup import group_of
from pipeline.store.facts import _comparable
from pipeline.testing import InMemoryStageStore

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 11, 3, 4, 5, 6, tzinfo=UTC)
# (partition, level) of the places a user's facts live; global facts carry the partition they came from
PLACES = [("guild:10", "guild_public"), ("guild:11", "guild_public"), ("channel:20", "channel_restricted"),
          ("dm:30", "dm"), ("guild:10", "global"), ("guild:11", "global")]
WORDS = ["chess", "violin", "Oslo", "ferrets", "sourdough", "Rust", "climbing", "jazz", "Lisbon", "tea", "kayaks",
         "origami"]


def _fact(user: int, partition: str, level: str, text: str, day: int, key: str | None = None) -> dict:
    return {"user_id": user, "partition": partition, "level": level, "category": "preference", "text": text,
            "fact_key": key, "confidence": 0.8, "event_day": None, "first_seen": dt.date(2026, 11, day),
            "last_seen": dt.date(2026, 11, day), "sources": [f"m{user}-{day}-{len(text)}"], "origin": "extracted",
            "input_hash": "h" * 64, "created_at": NOW, "updated_at": NOW}


def _seed() -> list[dict]:
    """Two users with two unrelated facts in every place, one of them later restated with more
    words (so a superseded row is stored too)."""
    rows = []
    for user in (1, 2):
        for i, (partition, level) in enumerate(PLACES):
            for j in range(2):
                first, second = WORDS[(i * 2 + j + user) % len(WORDS)], WORDS[(i * 2 + j + user + 5) % len(WORDS)]
                rows.append(_fact(user, partition, level, f"{first} with {second}", 1))
    rows.append(_fact(1, "guild:10", "guild_public", f"{_text(rows, 1, 'guild:10', 'guild_public')} every weekend", 2))
    return rows


def _text(rows: list[dict], user: int, partition: str, level: str) -> str:
    return next(r["text"] for r in rows if (r["user_id"], r["partition"], r["level"]) == (user, partition, level))


def test_decisions_and_rows_match_a_store_that_compares_with_every_fact(store):
    seed = _seed()
    later = [
        _fact(1, "guild:10", "guild_public", seed[-1]["text"], 3),                                 # NOOP
        _fact(1, "guild:11", "guild_public", _text(seed, 1, "guild:11", "guild_public") + " and friends", 3),
        _fact(2, "guild:10", "global", _text(seed, 2, "guild:10", "global"), 3),                     # NOOP, global
        _fact(2, "dm:30", "dm", "kayaks on fjords", 3, key="boat"),                                  # ADD
        _fact(1, "channel:20", "channel_restricted", "lives in Lisbon", 3, key="home city"),
        _fact(1, "channel:20", "channel_restricted", "moved to Porto", 4, key="home_city"),          # same key
    ]
    memory = InMemoryStageStore()
    counts = [(store.apply_facts(batch, 0.85), memory.apply_facts(batch, 0.85)) for batch in (seed, later)]
    assert [ours for ours, _theirs in counts] == [theirs for _ours, theirs in counts]
    assert counts[1][0] == {"unchanged": 2, "updated": 2, "added": 2}
    keep = ("id", "user_id", "partition", "level", "text", "status", "superseded_on", "first_seen", "last_seen",
            "confidence", "sources", "fact_key")
    stored = [{k: r[k] for k in keep} for r in store.memory_facts()]
    assert stored == [{k: r[k] for k in keep} for r in memory.memory_facts()]
    assert sum(r["status"] == "superseded" for r in stored) == 3


def test_a_write_reads_only_the_groups_of_its_new_facts(store):
    store.apply_facts(_seed(), 0.85)
    stored = store.memory_facts()
    cases = [
        [_fact(1, "guild:10", "guild_public", "User 1 likes tea", 3)],  # no global fact: none read
        [_fact(2, "guild:10", "global", "User 2 likes tea", 3)],        # global only
        [_fact(1, "channel:20", "channel_restricted", "x y z", 3), _fact(2, "dm:30", "dm", "a b c", 3),
         _fact(2, "guild:11", "global", "d e f", 3)],
        # a level at one partition and another level at another: never the cross pairs
        [_fact(1, "guild:11", "guild_public", "p q", 3), _fact(1, "channel:20", "channel_restricted", "r s", 3)],
        # two users, each in another partition (both have facts in both): never the other pairs
        [_fact(1, "guild:10", "guild_public", "t u", 3), _fact(2, "guild:11", "guild_public", "v w", 3)],
    ]
    for new in cases:
        groups = {group_of(r) for r in new}
        expected = {r["id"] for r in stored if r["status"] == "active" and group_of(r) in groups}
        with store.writing("reading") as conn:
            found = _comparable(conn, new)
        assert expected and {r["id"] for r in found} == expected
        assert len(found) == len(expected)
        other = [r for r in stored if r["user_id"] in {g[0] for g in groups} and r["id"] not in expected]
        assert other  # the user has facts elsewhere that were left unread
