"""The offline fact extractor on what chat says beyond a plain "I …" sentence: "we" / "our",
lower-case names, dropped subjects and fragments, a statement before a question, favourites in
slang, pets named across clauses, restated homes, answers to the question before. Every fact
must pass the validator (grounded in its own lines), and nothing may come from questions,
hypotheticals, others' statements or negations."""

from __future__ import annotations

import datetime as dt

import pytest

from pipeline.config import MemorySettings
from pipeline.memory.extract import extract_facts
from pipeline.memory.favourites import singular
from pipeline.memory.fragments import as_i, place_like, statement_part
from pipeline.memory.validate import rejection
from pipeline.summarize.base import ChatLine, PartitionDay

WED = dt.date(2026, 3, 4)  # a Wednesday
D = dt.date
ANA, BO = 101, 202
SETTINGS = MemorySettings()  # min_confidence 0.7, min_grounding 0.45


def pd_of(*messages, day=WED) -> PartitionDay:
    """messages: text (said by Ana), (user_id, text) or a ChatLine."""
    lines = []
    for i, m in enumerate(messages):
        if isinstance(m, ChatLine):
            lines.append(m)
            continue
        user, text = (ANA, m) if isinstance(m, str) else m
        lines.append(ChatLine(message_id=1000 + i, user_id=user, name={ANA: "Ana", BO: "Bo"}[user], text=text,
                              ts=dt.datetime(day.year, day.month, day.day, 12, i % 60)))
    return PartitionDay("guild:1", day, tuple(lines), {ANA: "Ana", BO: "Bo"})


def facts(*messages, day=WED):
    pd = pd_of(*messages, day=day)
    found = extract_facts(pd)
    for f in found:  # every proposal passes the validator as it is
        assert rejection(f, pd, subject_name={ANA: "Ana", BO: "Bo"}[f.user_id], settings=SETTINGS) is None, f
    return found


def one(*messages, day=WED):
    found = facts(*messages, day=day)
    assert len(found) == 1, found
    return found[0]


def pets(*messages):
    return [f for f in facts(*messages) if (f.key or "").startswith("pet ")]


def texts(*messages, day=WED) -> list[str]:
    return [f.text for f in facts(*messages, day=day)]


# ------------------------------------------------------------------ 1. "we" / "our" include the speaker

@pytest.mark.parametrize("message, text, category, key, day", [
    ("we're heading to Lisbon on 15 August", "Heading to Lisbon", "plan", None, D(2026, 8, 15)),
    ("we finally relocated to Utrecht", "Finally relocated to Utrecht", "identity", "home city", None),
    ("lol we moved to porto last year", "Moved to porto", "identity", "home city", None),
    ("We live in Ghent now", "Lives in Ghent", "identity", "home city", None),
    ("we got a rabbit!!", "Got a rabbit", "other", None, None),
    ("we adopted two kittens", "Adopted two kittens", "other", None, None),
    ("our new place in Ghent is tiny but cute", "Has a new place in Ghent", "identity", "home city", None),
    ("our house in Denver got flooded", "Has a house in Denver", "identity", "home city", None),
    ("our dog Bruno is so spoiled", "Has a dog named Bruno", "other", "pet bruno", None),
    ("We're flying to Rome next week", "Flying to Rome", "plan", None, D(2026, 3, 11)),
    ("me and my wife are moving to Oslo on the 20th", "Moving to Oslo", "plan", None, D(2026, 3, 20)),
    ("we'll be in Tokyo on the 20th", "Will be in Tokyo", "plan", None, D(2026, 3, 20)),
    ("we got married in June", "Got married", "relationship", "relationship status", None),
    ("we have two kids", "Has two kids", "relationship", None, None),
])
def test_we_statements_include_the_speaker_and_are_less_sure(message, text, category, key, day):
    f = one(message)
    assert (f.text, f.category, f.key, f.event_day, f.confidence) == (text, category, key, day, 0.8)


def test_we_is_often_the_server_or_the_team_so_only_places_pets_and_family_count():
    assert facts("we're heading to the nether tonight", "we moved the server to Hetzner", "we moved to Discord",
                 "we got a new mod", "our server is dying", "we love Hades", "we use Linux at work",
                 "we're from the EU server", "we got 3 new members", "we have a tournament on Saturday",
                 "we work at Google", "we're not moving to Berlin", "we might move to Berlin next year",
                 "if we moved to Berlin we'd be happier", "are we moving to Berlin?", "they moved to Berlin",
                 "we're going to bed") == []


def test_we_in_a_later_clause_and_i_in_one_sentence():
    found = facts("I work at Spotify and we just moved to Malmo")
    assert [(f.text, f.confidence) for f in found] == [("Just moved to Malmo", 0.8), ("Works at Spotify", 0.9)]


@pytest.mark.parametrize("clause, singular_form", [
    ("we're heading to Porto", "I'm heading to Porto"), ("we are moving to Oslo", "I am moving to Oslo"),
    ("our new place in Ghent", "my new place in Ghent"), ("we've got a dog", "I've got a dog"),
    ("me and my wife are moving", "I am moving"), ("we were in Rome", "I was in Rome"),
])
def test_as_i(clause, singular_form):
    assert as_i(clause) == singular_form


# ------------------------------------------------------------------ 2. names and places in lower case

@pytest.mark.parametrize("message, text, key", [
    ("moved to utrecht last month", "Moved to utrecht", "home city"),
    ("we relocated to new zealand", "Relocated to new zealand", "home city"),
    ("i'm based in leeds", "Is based in leeds", "home city"),
    ("i'm from brazil originally", "Is from brazil originally", "hometown"),
    ("my cat is called miso", "Has a cat named miso", "pet miso"),
    ("my ferret's name is pebble", "Has a ferret named pebble", "pet pebble"),
    ("our cats are named salt and pepper", "Has cats named salt and pepper", "pet salt and pepper"),
    ("my name is alex btw", "Name is alex", "name"),
    ("my sister's name is ana", "Has a sister named ana", None),
    ("qa tester at spotify", "Is a qa tester at spotify", "job"),
    ("i work at spotify", "Works at spotify", "job"),
])
def test_lower_case_names_where_the_grammar_marks_one(message, text, key):
    f = one(message)
    assert (f.text, f.key) == (text, key)


def test_a_lower_case_word_is_no_name_without_a_mark():
    assert facts("my cat knocked over my plant", "my ferret miso is asleep", "my name is not important",
                 "my cat is called whatever she wants", "my name is literally on the list") == []
    assert texts("my cat is called miso and she hates me") == ["Has a cat named miso"]


@pytest.mark.parametrize("place, ok", [
    ("Utrecht", True), ("utrecht", True), ("new zealand", True), ("New York", True), ("the nether", False),
    ("work", False), ("discord", False), ("Discord", False), ("my flat", False), ("a b c d", False), ("3", False),
])
def test_place_like(place, ok):
    assert place_like(place) is ok


# ------------------------------------------------------------------ 3. dropped subjects, fragments, questions

@pytest.mark.parametrize("message, text, category, key, day", [
    ("packed everything and moved to Utrecht", "Moved to Utrecht", "identity", "home city", None),
    ("sold the car, packed the van and moved to gent", "Moved to gent", "identity", "home city", None),
    ("finally settled in Tallinn", "Finally settled in Tallinn", "identity", "home city", None),
    ("first week as a designer at Figma done", "Is a designer at Figma", "skill/work", "job", None),
    ("first day at Canonical: done ✅", "Works at Canonical", "skill/work", "job", None),
    ("new job at Spotify! support role", "Has a new job at Spotify", "skill/work", "job", None),
    ("new gig with Arup", "Has a new gig with Arup", "skill/work", "job", None),
    ("nurse here, can confirm", "Is a nurse", "skill/work", "job", None),
    ("senior dev @ Shopify now", "Is a senior dev at Shopify", "skill/work", "job", None),
    ("translator for UNICEF", "Is a translator for UNICEF", "skill/work", "job", None),
    ("booked tickets to Lisbon for the 4th of October", "Booked tickets to Lisbon", "plan", None, D(2026, 10, 4)),
    ("just booked flights to Seoul for May 2", "Just booked flights to Seoul", "plan", None, D(2026, 5, 2)),
    ("trip to Lisbon on Aug 23", "Trip to Lisbon", "plan", None, D(2026, 8, 23)),
    ("road trip to Scotland next weekend!", "Trip to Scotland", "plan", None, D(2026, 3, 14)),
    ("holiday in Spain next week", "Holiday in Spain", "plan", None, D(2026, 3, 11)),
    ("first day at Google tomorrow!", "First day at Google", "plan", None, D(2026, 3, 5)),
    ("going to Lisbon next Thursday, any tips?", "Going to Lisbon", "plan", None, D(2026, 3, 5)),
    ("I'm moving to Berlin on the 20th, is that crazy?", "Moving to Berlin", "plan", None, D(2026, 3, 20)),
    ("flying to Oslo tomorrow - who else is going?", "Flying to Oslo", "plan", None, D(2026, 3, 5)),
])
def test_fragments_and_dropped_subjects(message, text, category, key, day):
    f = one(message)
    assert (f.text, f.category, f.key, f.event_day) == (text, category, key, day)
    assert f.confidence in (0.8, 0.9)


def test_fragments_that_say_nothing_of_the_speaker():
    assert facts("trip to Japan was amazing", "trip to Lisbon on Aug 23 got cancelled", "trip to Japan",
                 "the nurse at the clinic was rude", "Made by Valve and released in 2019",
                 "great trip to Oslo",
                 "new job at Spotify for my brother", "designer at Figma? no idea",
                 "first week at Figma was rough", "your new job at Spotify", "teacher at heart lol",
                 "designer for hire", "woke up late and moved my meeting to Friday",
                 "she got married and moved to Lisbon", "moving to Berlin, should I?",
                 "I'm moving to Berlin, right?", "I live in Berlin, or do I?", "moving to Rome next week, if the "
                 "visa comes through?") == []


@pytest.mark.parametrize("sentence, head", [
    ("going to Lisbon next Thursday, any tips?", "going to Lisbon next Thursday"),
    ("moved to Oslo - anyone else here from Norway?", "moved to Oslo"),
    ("I live in Rome", "I live in Rome"),
    ("I live in Rome, right?", None), ("moving to Berlin, should I?", None), ("Do you live in Rome?", None),
    ("I'm moving to Berlin, if that works?", None), ("which is better? Rome", None),
])
def test_statement_part(sentence, head):
    assert statement_part(sentence) == head


# ------------------------------------------------------------------ 4. favourites in slang and comparisons

@pytest.mark.parametrize("message, text, key", [
    ("my fav game is Hades", "Favourite game is Hades", "favourite game"),
    ("my all-time fave band is Radiohead", "Favourite band is Radiohead", "favourite band"),
    ("fav anime: Frieren", "Favourite anime is Frieren", "favourite anime"),
    ("Hades is the GOAT game", "Favourite game is Hades", "favourite game"),
    ("Dune is the goat of books", "Favourite book is Dune", "favourite book"),
    ("nobody beats Hades for me game-wise", "Favourite game is Hades", "favourite game"),
    ("nothing tops Radiohead when it comes to bands", "Favourite band is Radiohead", "favourite band"),
    ("Hades has replaced Celeste as my favourite game", "Favourite game is Hades", "favourite game"),
    ("Frieren overtook Naruto as my fav anime", "Favourite anime is Frieren", "favourite anime"),
    ("changed my mind, Hades is the best game, it's my favourite now", "Favourite game is Hades",
     "favourite game"),
    ("honestly Hades is my favourite game now", "Favourite game is Hades", "favourite game"),
    ("ngl ramen is easily my favourite food these days", "Favourite food is ramen", "favourite food"),
    ("if i had to pick one game forever it'd be Hades", "Favourite game is Hades", "favourite game"),
    ("If I could only eat one food for the rest of my life it would be pizza", "Favourite food is pizza",
     "favourite food"),
    ("been listening to Radiohead nonstop, easily my fav band", "Favourite band is Radiohead", "favourite band"),
    ("been playing Hades all week, my new favourite game", "Favourite game is Hades", "favourite game"),
    ("my favourite games are Hades and Celeste", "Favourite game is Hades", "favourite game"),
    ("Outer Wilds is my favorite video game ever", "Favourite video game is Outer Wilds", "favourite video game"),
])
def test_favourites_in_slang_and_comparisons(message, text, key):
    found = [f for f in facts(message) if f.key and f.key.startswith("favourite")]
    assert [(f.text, f.key, f.category, f.confidence) for f in found] == [(text, key, "preference", 0.9)]


def test_a_newer_favourite_has_the_key_of_the_older():
    found = facts("my fav game is Celeste", "Hades has replaced Celeste as my favourite game")
    assert [(f.text, f.key) for f in found] == [("Favourite game is Celeste", "favourite game"),
                                                ("Favourite game is Hades", "favourite game")]


def test_no_favourite_from_others_negations_the_past_or_without_a_thing():
    assert facts("Hades is not my favourite game", "Hades used to be my favourite game",
                 "Hades is no longer my fav game", "your favourite game is Hades", "is Hades your favourite game?",
                 "she thinks Hades is the GOAT game", "if Hades was my favourite game I'd play it more",
                 "my favourite game? Hades", "nothing beats a cold beer after work", "Hades is the GOAT",
                 "Hades is my fav", "this is my favourite song", "my favourite game is not Hades",
                 "what's your fav band?", "his fav band is Radiohead", "Hades or Celeste, which is your fave?",
                 "if I had to pick one I'd say Hades", "LeBron is the goat of basketball",
                 "apparently Hades is the GOAT game", "my friend thinks Hades is the GOAT game") == []


@pytest.mark.parametrize("word, one_form", [("games", "game"), ("series", "series"), ("dishes", "dish"),
                                            ("movies", "movie"), ("music", "music"), ("bands", "band"),
                                            ("anime", "anime"), ("cities", "city"), ("class", "class")])
def test_singular(word, one_form):
    assert singular(word) == one_form


# ------------------------------------------------------------------ 5. pets named by apposition or across clauses

@pytest.mark.parametrize("message, text, key", [
    ("Miso (my rabbit) says hi", "Has a rabbit named Miso", "pet miso"),
    ("mochi (my cat) is judging me", "Has a cat named mochi", "pet mochi"),
    ("my ferret Pebble stole my sock", "Has a ferret named Pebble", "pet pebble"),
    ("I got a kitten, her name is miso", "Has a kitten named miso", "pet miso"),
    ("we adopted a puppy!! we named him Bruno", "Has a puppy named Bruno", "pet bruno"),
    ("this is Biscuit, he's my new puppy", "Has a puppy named Biscuit", "pet biscuit"),
])
def test_pets_named_in_one_message(message, text, key):
    f = one(message)
    assert (f.text, f.key, f.category) == (text, key, "other")


@pytest.mark.parametrize("message, text", [
    ("had to take Miso to the vet today, my ferret ate a sock", "Has a ferret named Miso"),
    ("took pebble to the vet, my hamster is fine", "Has a hamster named pebble"),
    ("fed Ziggy twice by mistake, my gecko is thriving", "Has a gecko named Ziggy"),
    ("Miso! she's a cat", "Has a cat named Miso"),
])
def test_pets_named_less_surely(message, text):
    f = one(message)
    assert (f.text, f.confidence) == (text, 0.8)


def test_a_pet_named_in_the_next_message_cites_both():
    f = one("we adopted a puppy!", "his name is bruno")
    assert (f.text, f.sources, f.key, f.confidence) == ("Has a puppy named bruno", (0, 1), "pet bruno", 0.8)


def test_two_pets_of_one_kind_are_two_facts_and_a_kitten_grows_into_a_cat():
    found = facts("my cat Miso is asleep", "my cat Luna is not", "I adopted a kitten named Miso")
    assert sorted((f.text, f.key) for f in found) == [("Has a cat named Luna", "pet luna"),
                                                      ("Has a cat named Miso", "pet miso"),
                                                      ("Has a kitten named Miso", "pet miso")]


def test_no_pet_name_from_people_other_pets_or_a_wish():
    assert pets("her name is miso",
                 "my sister got a puppy, her name is Luna", "took Sarah to the airport, my cat was mad",
                "walked Sarah home, my dog was mad", "fed Sam dinner, my dog was jealous",
                 "if I got a cat I'd name her Miso", "my cat loves Mondays", "Garfield (his cat) is orange",
                 "her name is miso?", "Luna! she's a cat from Sailor Moon") == []


# ------------------------------------------------------------------ 6. restated homes

@pytest.mark.parametrize("message, text, confidence", [
    ("moving day done. Utrecht here i come", "Moved to Utrecht", 0.8),
    ("the movers just left!! Ghent, here we come", "Moved to Ghent", 0.8),
    ("finally settled in Utrecht", "Finally settled in Utrecht", 0.9),
    ("all settled in Lyon now", "Is all settled in Lyon", 0.9),
    ("we're finally settled in Kyoto", "Is finally settled in Kyoto", 0.8),
])
def test_restated_home(message, text, confidence):
    f = one(message)
    assert (f.text, f.key, f.category, f.confidence) == (text, "home city", "identity", confidence)


def test_not_a_new_home():
    assert facts("Tokyo here I come", "summer here I come", "settled in my new flat", "settled into my new job",
                 "settled in for the night", "we settled in with some tea",
                 "I'm settled on the name", "Lisbon here I come? not yet lol") == []


# ------------------------------------------------------------------ 7. answers to the question just before

def ask(question, reply, **reply_fields):
    return facts(ChatLine(1, BO, "Bo", question, dt.datetime(2026, 3, 4, 9)),
                 ChatLine(2, ANA, "Ana", reply, dt.datetime(2026, 3, 4, 9, 1), **reply_fields))


@pytest.mark.parametrize("question, reply, text, key", [
    ("where do you live?", "utrecht", "Lives in utrecht", "home city"),
    ("where are you all based?", "Leeds, wbu?", "Lives in Leeds", "home city"),
    ("where are you from?", "brazil, you?", "Is from brazil", "hometown"),
    ("what do you do for work?", "qa tester at spotify", "Is a qa tester at spotify", "job"),
    ("so what's your job?", "nurse lol", "Is a nurse", "job"),
    ("what's your favourite game?", "Rimworld, best game ever made", "Favourite game is Rimworld",
     "favourite game"),
])
def test_answers_cite_the_answer_alone(question, reply, text, key):
    (f,) = ask(question, reply)
    assert (f.user_id, f.text, f.key, f.sources, f.confidence) == (ANA, text, key, (1,), 0.8)


def test_an_answer_that_would_not_be_grounded_is_skipped():
    # "Favourite game is Rimworld": favourite, game, rimworld; only 1 of 3 in "Rimworld, easy"
    assert ask("what's your favourite game?", "Rimworld, easy") == []


@pytest.mark.parametrize("question, reply", [
    ("where do you live?", "here lol"), ("where do you live?", "idk"), ("where do you live?", "why?"),
    ("where do you live?", "not telling you"), ("what do you do for work?", "nothing lol"),
    ("what's your favourite game?", "Hades? maybe"), ("did you eat?", "pizza"),
    ("where do you live?", "the nether"), ("what's your fav game?", "you tell me"),
])
def test_no_answer(question, reply):
    assert ask(question, reply) == []


def test_only_the_line_just_after_another_speakers_question_is_an_answer():
    assert facts((BO, "where do you live?"), (BO, "utrecht")) == []  # one's own question
    assert facts((BO, "where do you live?"), (ANA, "lol"), (ANA, "utrecht")) == []  # not the next line
    assert ask("where do you live?", "utrecht", reply_to_user=999, reply_to_name="Cy") == []  # a reply to another
    assert [f.text for f in ask("where do you live?", "utrecht", reply_to_user=BO, reply_to_name="Bo")] == [
        "Lives in utrecht"]


@pytest.mark.parametrize("message, day", [
    ("finally booked it!! Lisbon on September 13!", D(2026, 9, 13)),
    ("booked the flights. Lisbon on Sept 13", D(2026, 9, 13)),
    ("trip's sorted. Lisbon on the 20th", D(2026, 3, 20)),
    ("we're going!! Lisbon on the 20th", D(2026, 3, 20)),
])
def test_a_place_and_a_date_beside_a_trip_of_ones_own(message, day):
    f = one(message)
    assert (f.text, f.category, f.event_day, f.confidence) == ("Going to Lisbon", "plan", day, 0.8)


def test_a_place_and_a_date_alone_say_nothing_of_the_speaker():
    assert facts("Lisbon on September 13!", "trip got cancelled. Lisbon on September 13",
                 "my sister is going. Rome on the 5th", "not going anymore. Berlin on the 20th.",
                 "booked it? Lisbon on September 13") == []


# ------------------------------------------------------------------ properties over all of the above

CHAT = [m for m in """
we're heading to Lisbon on 15 August
our new place in Ghent is tiny but cute
me and my wife are moving to Oslo on the 20th
moved to utrecht last month
my cat is called miso
qa tester at spotify
packed everything and moved to Utrecht
first week as a designer at Figma done
booked tickets to Lisbon for the 4th of October
going to Lisbon next Thursday, any tips?
Hades has replaced Celeste as my favourite game
if i had to pick one game forever it'd be Hades
been listening to Radiohead nonstop, easily my fav band
had to take Miso to the vet today, my ferret ate a sock
we adopted a puppy!! we named him Bruno
moving day done. Utrecht here i come
finally booked it!! Lisbon on September 13!
""".strip().splitlines()]


def test_chat_facts_are_deterministic_third_person_and_validated():
    msgs = [(ANA if i % 2 else BO, m) for i, m in enumerate(CHAT)]
    found = facts(*msgs)  # validated in facts()
    assert found == facts(*msgs) and {s for f in found for s in f.sources} == set(range(len(CHAT)))
    for f in found:
        words = set(f.text.lower().replace(",", " ").split())
        assert not words & {"i", "i'm", "i've", "my", "me", "myself", "we", "we're", "our", "us"}, f
        assert f.text[:1].isupper() and not f.text.endswith(".") and f.confidence in (0.75, 0.8, 0.9)
        assert f.event_day is None or f.category in ("event", "plan")
