"""The offline fact extractor (pipeline/memory/extract.py): facts about each speaker from their own
first-person sentences, in the third person, grounded in the message they cite."""

from __future__ import annotations

import datetime as dt

import pytest

from pipeline.memory.extract import extract_facts
from pipeline.memory.model import CATEGORIES
from pipeline.summarize.base import ChatLine, PartitionDay
from pipeline.summarize.text import content_tokens

DAY = dt.date(2026, 3, 4)  # a Wednesday
ANA, BO = 101, 202


def pd_of(*messages, day=DAY, speakers=None) -> PartitionDay:
    """messages: text (said by Ana) or (user_id, text)."""
    lines = []
    for i, m in enumerate(messages):
        user, text = (ANA, m) if isinstance(m, str) else m
        lines.append(ChatLine(message_id=1000 + i, user_id=user, name={ANA: "Ana", BO: "Bo"}[user], text=text,
                              ts=dt.datetime(day.year, day.month, day.day, 12, i % 60)))
    return PartitionDay("guild:1", day, tuple(lines), speakers or {ANA: "Ana", BO: "Bo"})


def facts(*messages, day=DAY):
    return extract_facts(pd_of(*messages, day=day))


def one(message, day=DAY):
    found = facts(message, day=day)
    assert len(found) == 1, found
    return found[0]


def texts(*messages, day=DAY):
    return [f.text for f in facts(*messages, day=day)]


# ------------------------------------------------------------------ patterns

@pytest.mark.parametrize("message, text", [
    ("I just moved to Lisbon", "Just moved to Lisbon"),
    ("i live in porto with two cats", "Lives in porto"),
    ("I've been living in Berlin for six years", "Has been living in Berlin"),
    ("lol yeah I moved back to Toronto in the end", "Moved back to Toronto"),
])
def test_home_city(message, text):
    f = one(message)
    assert (f.text, f.category, f.key, f.confidence, f.global_safe) == (text, "identity", "home city", 0.9, False)


def test_where_someone_is_from_is_their_hometown_not_where_they_live():
    found = facts("I'm originally from Porto but I live in Lisbon now")
    assert [(f.text, f.key) for f in found] == [("Is originally from Porto", "hometown"), ("Lives in Lisbon", "home city")]


@pytest.mark.parametrize("message, text", [
    ("I'm a nurse", "Is a nurse"),
    ("honestly I'm a senior backend developer, it pays the bills", "Is a senior backend developer"),
    ("I work at Spotify", "Works at Spotify"),
    ("I've been working for the city council since 2019", "Has been working for the city council"),
    ("I just started a new job at Shopify!", "Just started a new job at Shopify"),
    ("I got hired by Valve", "Got hired by Valve"),
])
def test_job(message, text):
    f = one(message)
    assert (f.text, f.category, f.key) == (text, "skill/work", "job")


def test_not_a_job():
    assert facts("I'm a huge mess today", "I'm a bit tired") == []


@pytest.mark.parametrize("message, text, key", [
    ("my cat Miso knocked over my plant", "Has a cat named Miso", "pet cat name"),
    ("My dog's name is Biscuit", "Has a dog named Biscuit", "pet dog name"),
    ("we adopted him last year, my puppy is called Rex", "Has a puppy named Rex", "pet puppy name"),
    ("I adopted a kitten named mochi", "Has a kitten named mochi", "pet kitten name"),
])
def test_pets(message, text, key):
    f = one(message)
    assert (f.text, f.category, f.key) == (text, "other", key)


@pytest.mark.parametrize("message, text, key, safe", [
    ("my favourite game is Celeste", "Favourite game is Celeste", "favourite game", True),
    ("Hollow Knight is my favorite game", "Favorite game is Hollow Knight", "favourite game", True),
    ("my fave band is Radiohead tbh", "Fave band is Radiohead", "favourite band", True),
    ("my favourite place is my grandma's garden", "Favourite place is their grandma's garden", "favourite place", False),
])
def test_favourites(message, text, key, safe):
    f = one(message)
    assert (f.text, f.category, f.key, f.global_safe) == (text, "preference", key, safe)


@pytest.mark.parametrize("message, text, safe", [
    ("I prefer Vim over Emacs", "Prefers Vim over Emacs", True),
    ("I use Arch btw", "Uses Arch", True),
    ("I code in Rust mostly", "Codes in Rust", True),
    ("I really love hiking in the Alps", "Really loves hiking in the Alps", False),
    ("I hate cilantro", "Hates cilantro", False),
])
def test_preferences(message, text, safe):
    f = one(message)
    assert (f.text, f.category, f.key, f.global_safe) == (text, "preference", None, safe)


def test_not_a_preference():
    assert facts("I love this", "I like that idea", "I love you guys", "I like how it turned out") == []


# ------------------------------------------------------------------ dates

@pytest.mark.parametrize("message, day, category", [
    ("I'm flying to Tokyo next week", dt.date(2026, 3, 11), "plan"),
    ("Tomorrow I'm flying to Tokyo", dt.date(2026, 3, 5), "plan"),
    ("I'm flying to Tokyo on Friday", dt.date(2026, 3, 6), "plan"),
    ("I'm flying to Tokyo on the 20th", dt.date(2026, 3, 20), "plan"),
    ("I'm flying to Tokyo on the 2nd", dt.date(2026, 4, 2), "plan"),
    ("I'm flying to Tokyo on 3 March", dt.date(2027, 3, 3), "plan"),
    ("I'm flying to Tokyo in 3 days", dt.date(2026, 3, 7), "plan"),
    ("I'm flying to Tokyo 2026-12-03", dt.date(2026, 12, 3), "plan"),
])
def test_trip_dates(message, day, category):
    f = one(message)
    assert (f.text, f.event_day, f.category) == ("Flying to Tokyo", day, category)


def test_past_trip_is_an_event():
    f = one("I went to Porto last weekend")
    assert (f.text, f.category, f.event_day) == ("Went to Porto", "event", dt.date(2026, 2, 28))


# ------------------------------------------------------------------ skipped

@pytest.mark.parametrize("message", [
    "Do you live in Berlin?",
    "If I lived in Paris I would be so happy",
    "I wish I worked at Google",
    "I would love to visit Japan someday",
    '"I live in Rome" is what she always says',
    "> I moved to Berlin",
    "lol",
    "I'm so tired today",
    "I'm going to bed",
])
def test_nothing_from(message):
    assert facts(message) == []


def test_a_fact_is_about_its_own_speaker_and_cites_its_line():
    found = facts((BO, "hey Ana how are you"), (ANA, "I just moved to Lisbon"), (BO, "nice! I live in Porto"))
    assert [(f.user_id, f.text, f.sources) for f in found] == [
        (ANA, "Just moved to Lisbon", (1,)), (BO, "Lives in Porto", (2,))]


def test_the_same_fact_twice_is_one_candidate_with_both_sources():
    found = facts("I live in Lisbon", (BO, "cool"), "I live in Lisbon.")
    assert [(f.text, f.sources) for f in found] == [("Lives in Lisbon", (0, 2))]


def test_deterministic_and_grounded():
    msgs = ["I just moved to Lisbon", "my cat Miso knocked over my plant", "I'm flying to Tokyo next week",
            (BO, "I've been learning Rust"), (BO, "I sold my bike for 200 euros yesterday")]
    a, b = facts(*msgs), facts(*msgs)
    assert a == b and len(a) == 5
    pd = pd_of(*msgs)
    for f in a:
        assert f.category in CATEGORIES and len(f.text) <= 200
        words = set(content_tokens(f.text))
        line = set(content_tokens(pd.lines[f.sources[0]].text))
        assert len(words & line) >= 0.45 * len(words), f
