"""The faster profile path (issue 14) makes exactly what the straightforward one made.

`UserFacts` (facts grouped once per user, each fact's share of the key rendered once, the choice
made once per fact set), `choose` (budget checked before similarity, one rapidfuzz call per
candidate) and `dedup.Seen` are checked against the plain definitions below — the code they
replaced, kept here as the specification — on seeded heavy users: hundreds of facts over dozens
of partitions, every level, superseded and manual facts, restatements, dated events, unicode,
budgets from tight to roomy. Same rows, same order, same keys, same text, byte for byte."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from pipeline.hashing import canonical, input_hash
from pipeline.memory import profile
from pipeline.memory.dedup import Seen, similarity
from pipeline.memory.model import EPISODIC, MANUAL
from pipeline.memory.profile import SECTIONS, UserFacts, choose, profile_key, render, visible

DAY0 = dt.date(2026, 9, 1)
WORDS = ("plays", "chess", "lives", "in", "Lisbon", "Porto", "works", "as", "a", "nurse", "loves", "Celeste",
         "Hades", "has", "cat", "named", "Miso", "São", "Paulo", "café", "東京", "trip", "to", "Japan", "guitar")
CATEGORIES = ("identity", "preference", "relationship", "event", "plan", "skill/work", "other")


# ---------------------------------------------------------------- the specification (the old code)

def ref_visible(rows, sources, as_of):
    allowed = set(sources)
    return [r for r in rows
            if (r["level"] == "global" or r["partition"] in allowed)
            and (r["first_seen"] <= as_of or r["origin"] == MANUAL)
            and (r["status"] == "active" or (r["superseded_on"] is not None and r["superseded_on"] > as_of))]


def _ties(r):  # what the fact says, then where and at which level; the id only after those
    return r["text"], r["partition"], r["level"], r["id"]


def _priority(r):
    return (-r["confidence"], -r["last_seen"].toordinal(), -r["first_seen"].toordinal(), *_ties(r))


def ref_choose(rows, max_words, same_fact):
    chosen, used = [], 0
    for r in sorted(rows, key=_priority):
        if any(similarity(r["text"], c["text"]) >= same_fact for c in chosen):
            continue
        cost = len(r["text"].split()) + (1 if r.get("event_day") else 0) + 1
        if used + cost > max_words:
            continue
        chosen.append(r)
        used += cost
    return chosen


def ref_key(name, rows, *, max_words, same_fact):
    return input_hash("profile", profile._template()[1], name, max_words, same_fact,
                      sorted(((r["text"], r["category"], r["confidence"], r.get("event_day"), r["last_seen"],
                               r["first_seen"], r["partition"], r["level"]) for r in rows), key=canonical))


def ref_render(name, rows, *, max_words, same_fact):
    chosen = ref_choose(rows, max_words, same_fact)
    if not chosen:
        return None
    sections = []
    for category, title in SECTIONS:
        facts = [r for r in chosen if r["category"] == category]
        if not facts:
            continue
        if category in EPISODIC:
            facts.sort(key=lambda r: (-(r.get("event_day") or r["first_seen"]).toordinal(), *_ties(r)))
        else:
            facts.sort(key=_priority)
        sections.append((title, [{"text": r["text"], "day": r.get("event_day") if category in EPISODIC else None}
                                 for r in facts]))
    text = profile._template()[0].render(name=name, sections=sections).strip()
    return text, ref_key(name, rows, max_words=max_words, same_fact=same_fact), tuple(sorted(r["id"] for r in chosen))


# ---------------------------------------------------------------- heavy users

def heavy_user(rng: random.Random, user_id: int, n: int, partitions: list[str]) -> list[dict]:
    rows, said = [], []
    for i in range(n):
        if said and rng.random() < 0.25:  # a restatement, with a word more or less, maybe elsewhere
            words = rng.choice(said).split()
            words = words + [rng.choice(WORDS)] if rng.random() < 0.5 else words[:-1] or words
        else:
            words = [rng.choice(WORDS) for _ in range(rng.choice((1, 2, 4, 8, 12)))]
        text = " ".join(words)
        said.append(text)
        first = DAY0 + dt.timedelta(days=rng.randrange(60))
        level = rng.choice(("dm", "channel_restricted", "guild_public", "global"))
        superseded = rng.random() < 0.2
        category = rng.choice(CATEGORIES)
        rows.append({
            "id": 1000 * user_id + i + 1, "user_id": user_id,
            "partition": rng.choice(partitions), "level": level, "category": category, "text": text,
            "fact_key": None, "confidence": rng.choice((0.6, 0.8, 0.8, 0.95, 1.0)),
            "event_day": first + dt.timedelta(days=rng.randrange(30)) if category in EPISODIC and rng.random() < 0.7
            else None,
            "first_seen": first, "last_seen": first + dt.timedelta(days=rng.randrange(20)),
            "origin": MANUAL if rng.random() < 0.05 else "extracted",
            "status": "superseded" if superseded else "active",
            "superseded_on": first + dt.timedelta(days=rng.randrange(1, 40)) if superseded else None,
        })
    rng.shuffle(rows)  # the order rows come in is kept, whatever it is
    return rows


@pytest.mark.parametrize("seed", range(6))
def test_user_facts_see_key_and_render_exactly_what_the_plain_definitions_do(seed):
    rng = random.Random(seed)
    partitions = ["guild:1"] + [f"channel:{c}" for c in range(24)] + ["dm:7"]
    rows = heavy_user(rng, 7, rng.choice((40, 150, 320)), partitions)
    facts = UserFacts(rows)
    # the scopes of this user: the guild, each channel (its own + the guild's), the DM (everything)
    scopes = [["guild:1"]] + [[f"channel:{c}", "guild:1"] for c in range(24)] + [partitions, ["channel:3"] * 2]
    checked = 0
    for sources in scopes:
        for as_of in (DAY0 + dt.timedelta(days=d) for d in (0, 20, 45, 90)):
            seen = facts.visible(sources, as_of)
            expected = ref_visible(rows, sources, as_of)
            assert [r for _i, r in seen] == expected and all(rows[i] is r for i, r in seen)
            for name, budget, same in (("Ana", 2000, 0.85), ("Zoë 東", 60, 0.85), ("Ana", 25, 0.5), ("Bo", 300, 1.0)):
                key = facts.key(name, seen, max_words=budget, same_fact=same)
                assert key == ref_key(name, expected, max_words=budget, same_fact=same) \
                    == profile_key(name, expected, max_words=budget, same_fact=same)
                made = facts.render(name, seen, max_words=budget, same_fact=same, key=key)
                want = ref_render(name, expected, max_words=budget, same_fact=same)
                assert (made and (made.text, made.input_hash, made.fact_ids)) == want
                plain = render(name, expected, max_words=budget, same_fact=same)
                assert (plain and (plain.text, plain.input_hash, plain.fact_ids)) == want
                assert choose(expected, budget, same) == ref_choose(expected, budget, same)
                checked += bool(want)
    assert checked > 100  # most of these scopes have a profile: the comparison is not vacuous


def test_visible_keeps_its_definition():
    rng = random.Random(42)
    rows = heavy_user(rng, 3, 200, ["guild:1", "channel:2", "dm:3"])
    for sources in (["guild:1"], ["channel:2", "guild:1"], ["dm:3", "guild:1", "channel:2"], []):
        for days in (0, 30, 100):
            as_of = DAY0 + dt.timedelta(days=days)
            assert visible(rows, sources, as_of) == ref_visible(rows, sources, as_of)


def test_seen_answers_as_similarity_does_even_at_the_threshold_itself():
    rng = random.Random(7)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8))) for _ in range(120)]
    for a in texts:
        others = rng.sample(texts, 10)
        scores = [similarity(a, b) for b in others]
        # thresholds at each score exactly (float boundary), just above it, and the usual one
        for same in {*scores, *(min(s + 0.001, 1.0) for s in scores), 0.85}:
            if same <= 0:
                continue
            seen = Seen(same)
            for b in others:
                seen.add(b)
            assert seen.has_same(a) == any(s >= same for s in scores)
    assert not Seen(0.85).has_same("anything at all")


@pytest.mark.parametrize("seed", range(4))
def test_a_profile_and_its_key_do_not_depend_on_the_order_facts_were_written_in(seed):
    """Fact ids follow the order rows were written, which differs between two runs of the same
    input when their stages run in several processes (pipeline/stages/processes.py): the same
    facts under other ids make the same profile and the same key."""
    rng = random.Random(seed)
    partitions = ["guild:1", "channel:2", "dm:7"]
    rows = heavy_user(rng, 7, 150, partitions)
    for r in rows:  # many ties: the same confidence and days, so only the tie-break orders them
        r["confidence"], r["last_seen"], r["first_seen"] = 0.8, DAY0, DAY0
    ids = [r["id"] for r in rows]
    renumbered = [dict(r, id=i) for r, i in zip(rows, rng.sample(ids, len(ids)))]
    for name, budget in (("Ana", 2000), ("Ana", 40)):
        a = render(name, rows, max_words=budget, same_fact=0.85)
        b = render(name, renumbered, max_words=budget, same_fact=0.85)
        assert a.text == b.text and a.input_hash == b.input_hash
        assert UserFacts(rows).key(name, list(enumerate(rows)), max_words=budget, same_fact=0.85) == a.input_hash
