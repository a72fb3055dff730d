"""First person -> third person without the subject (pipeline/memory/phrasing.py)."""

from __future__ import annotations

import pytest

from pipeline.memory.phrasing import (agree, clauses, cut, implied_subject, object_end, possessive, third_person,
                                      tidy, unfilled)
from pipeline.memory.vocab import sensitive


@pytest.mark.parametrize("verb, third", [
    ("have", "has"), ("am", "is"), ("do", "does"), ("go", "goes"), ("be", "is"),
    ("study", "studies"), ("fly", "flies"), ("play", "plays"), ("enjoy", "enjoys"),
    ("watch", "watches"), ("push", "pushes"), ("fix", "fixes"), ("kiss", "kisses"), ("buzz", "buzzes"),
    ("echo", "echoes"), ("live", "lives"), ("work", "works"), ("love", "loves"),
    ("moved", "moved"), ("went", "went"), ("got", "got"), ("ran", "ran"), ("adopted", "adopted"),
    ("can", "can"), ("will", "will"), ("must", "must"), ("quit", "quit"), ("used", "used"),
    ("don't", "doesn't"), ("haven't", "hasn't"), ("can't", "can't"), ("didn't", "didn't"),
    ("Love", "Loves"), ("Have", "Has"),
])
def test_verb_agreement(verb, third):
    assert agree(verb) == third


@pytest.mark.parametrize("clause, fact", [
    ("I just moved to Lisbon", "Just moved to Lisbon"),
    ("I'm a nurse", "Is a nurse"),
    ("I am a nurse", "Is a nurse"),
    ("I’m a nurse", "Is a nurse"),          # a curly apostrophe
    ("im a nurse", "Is a nurse"),           # chat spelling
    ("I've been learning Rust", "Has been learning Rust"),
    ("ive been learning Rust", "Has been learning Rust"),
    ("I have two cats", "Has two cats"),
    ("I’ll be in Tokyo", "Will be in Tokyo"),
    ("I'd moved there before", "Had moved there before"),
    ("I'd go with Rust", "Would go with Rust"),
    ("i study CS", "Studies CS"),
    ("I really love Celeste", "Really loves Celeste"),
    ("I also go to the gym", "Also goes to the gym"),
    ("I finally fixed my bike", "Finally fixed their bike"),
    ("I don't like horror movies", "Doesn't like horror movies"),
    ("my favourite game is Celeste", "Favourite game is Celeste"),
    ("I watch anime with my sister", "Watches anime with their sister"),
    ("I taught myself Blender", "Taught themselves Blender"),
    ("I drove her home, the car is mine", "Drove her home, the car is theirs"),
    ("I asked him to call me", "Asked him to call them"),
    ("I study and I am tired", "Studies and they are tired"),  # a later "I" is "they"
    ("I moved after I was fired", "Moved after they were fired"),
    ("I sold it and I'm happy", "Sold it and they're happy"),
    ("I use C++ and C# daily.", "Uses C++ and C# daily."),
    ("I paid $2.50 for it", "Paid $2.50 for it"),
])
def test_third_person(clause, fact):
    assert third_person(clause) == fact


def test_third_person_keeps_a_word_cased_like_iphone():
    assert third_person("my iPhone broke") == "iPhone broke"


def test_possessive_changes_only_the_person():
    assert possessive("my grandma's garden") == "their grandma's garden"
    assert possessive("Celeste") == "Celeste"


def test_clauses_split_before_a_new_subject_and_drop_filler():
    found = clauses("lol yeah I live in Lisbon and I work at Google, my cat is called Miso", lambda text: False)
    assert found == [("I live in Lisbon", ""), ("I work at Google", ""), ("my cat is called Miso", "")]


def test_a_time_clause_stays_in_its_sentence():
    assert clauses("I've been playing piano since I was 6", lambda t: False) == [
        ("I've been playing piano since I was 6", "")]


def test_a_leading_time_phrase_is_set_apart():
    assert clauses("Tomorrow I'm flying to Tokyo", lambda t: t == "Tomorrow") == [("I'm flying to Tokyo", "Tomorrow")]
    assert clauses("Next month I'm starting at Google", lambda t: False) == [("I'm starting at Google", "")]


@pytest.mark.parametrize("clause, restored", [
    ("Started a new job at Mozilla", "I started a new job at Mozilla"),
    ("Just moved to Porto", "I just moved to Porto"),
    ("Heading to Paris on Friday", "I'm heading to Paris on Friday"),
    ("Great game today", "Great game today"),
    ("Moving on, what's next", "I'm moving on, what's next"),
])
def test_implied_subject(clause, restored):
    assert implied_subject(clause) == restored


@pytest.mark.parametrize("clause, start, obj", [
    ("I live in Lisbon with my wife", 10, "Lisbon"),
    ("I live in New York City, it's loud", 10, "New York City"),
    ("I moved to Berlin in the end", 11, "Berlin"),
    ("I work at Booking.com now", 10, "Booking.com"),
    ("I'm learning Rust for work lol", 13, "Rust"),
    ("I moved to the netherlands 3 years ago", 11, "the netherlands"),
    ("I went to Porto last weekend", 10, "Porto"),
    ("I'm flying to Tokyo on", 14, "Tokyo"),
])
def test_object_end(clause, start, obj):
    assert clause[start:object_end(clause, start)] == obj


def test_object_end_stops_at_a_given_position_and_a_word_count():
    clause = "I'm flying to Tokyo 2026-12-03"
    assert clause[14:object_end(clause, 14, stop_at=20)] == "Tokyo"
    long = "I love " + " ".join(f"w{i}" for i in range(20))
    assert len(long[7:object_end(long, 7)].split()) == 8


def test_tidy_drops_stale_time_words_and_chat_noise():
    assert tidy("I was diagnosed with asthma last year lol") == "I was diagnosed with asthma"
    assert tidy("I sold my bike 3 days ago btw!") == "I sold my bike"
    assert tidy("I am on vacation in Greece until") == "I am on vacation in Greece"
    assert tidy("I moved to Lisbon") == "I moved to Lisbon"


def test_cut_keeps_a_fact_within_its_length_at_a_boundary():
    text = "Has been learning " + ", ".join(f"language number {i}" for i in range(30))
    out = cut(text)
    assert len(out) <= 200 and text.startswith(out) and not out.endswith(",")
    assert cut("Lives in Lisbon.") == "Lives in Lisbon"
    assert cut("x" * 300) == "x" * 200


@pytest.mark.parametrize("text, touchy", [
    ("Was diagnosed with ADHD", True), ("Is in therapy", True), ("Earns $90k", True),
    ("Got divorced", True), ("Has a girlfriend named Maya", True), ("Was banned from the server", True),
    ("Favourite band is Radiohead", False), ("Uses Neovim", False), ("Is an illustrator", False),
    ("Plays in a band", False), ("Is a translator", False), ("Lives in Lisbon", False),
])
def test_sensitive(text, touchy):
    assert sensitive(text) is touchy


def test_clauses_split_before_we_and_our_but_not_inside_me_and_my():
    assert clauses("I work at Spotify and we just moved to Malmo", lambda t: False) == [
        ("I work at Spotify", ""), ("we just moved to Malmo", "")]
    assert clauses("me and my wife are moving to Oslo", lambda t: False) == [("me and my wife are moving to Oslo", "")]


@pytest.mark.parametrize("sentence, parts", [
    ("packed everything and moved to Utrecht", ["packed everything", "I moved to Utrecht"]),
    ("sold the car, packed the van and moved to gent", ["sold the car, packed the van", "I moved to gent"]),
    ("I finished my thesis and started at Google", ["I finished my thesis", "I started at Google"]),
    ("we packed the van and moved to Oslo", ["we packed the van", "we moved to Oslo"]),
    ("packed my bags, flying to Tokyo tomorrow", ["packed my bags", "I'm flying to Tokyo tomorrow"]),
    # only after the speaker's own verb: not after another subject, nor a passive participle
    ("my sister got married and moved to Paris", ["my sister got married and moved to Paris"]),
    ("Made by Valve and released in 2019", ["Made by Valve and released in 2019"]),
])
def test_a_dropped_subject_is_carried_over_and(sentence, parts):
    assert [c for c, _ in clauses(sentence, lambda t: False)] == parts


@pytest.mark.parametrize("clause, restored", [
    ("finally settled in Utrecht", "I finally settled in Utrecht"),
    ("just booked flights to Seoul", "I just booked flights to Seoul"),
    ("all settled in Lyon", "I'm all settled in Lyon"),
    ("finally some good news", "finally some good news"),
])
def test_implied_subject_after_adverbs(clause, restored):
    assert implied_subject(clause) == restored


def test_unfilled():
    assert unfilled("lol ok honestly Hades is my favourite") == "Hades is my favourite"
