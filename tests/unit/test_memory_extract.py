"""The offline fact extractor (pipeline/memory/extract.py): facts about each speaker from their own
first-person sentences, in the third person, grounded in the message they cite."""

from __future__ import annotations

import datetime as dt

import pytest

from pipeline.config import MemorySettings
from pipeline.memory.extract import extract_facts
from pipeline.memory.model import CATEGORIES, Candidate
from pipeline.memory.validate import grounding
from pipeline.summarize.base import ChatLine, PartitionDay
from pipeline.summarize.text import tokens

WED = dt.date(2026, 3, 4)  # a Wednesday
D = dt.date
ANA, BO = 101, 202


def pd_of(*messages, day=WED, speakers=None) -> PartitionDay:
    """messages: text (said by Ana) or (user_id, text)."""
    lines = []
    for i, m in enumerate(messages):
        user, text = (ANA, m) if isinstance(m, str) else m
        lines.append(ChatLine(message_id=1000 + i, user_id=user, name={ANA: "Ana", BO: "Bo"}[user], text=text,
                              ts=dt.datetime(day.year, day.month, day.day, 12, i % 60)))
    return PartitionDay("guild:1", day, tuple(lines), speakers or {ANA: "Ana", BO: "Bo"})


def facts(*messages, day=WED) -> list[Candidate]:
    return extract_facts(pd_of(*messages, day=day))


def one(message, day=WED) -> Candidate:
    found = facts(message, day=day)
    assert len(found) == 1, found
    return found[0]


def texts(*messages, day=WED) -> list[str]:
    return [f.text for f in facts(*messages, day=day)]


# ------------------------------------------------------------------ where they live, where from

@pytest.mark.parametrize("message, text", [
    ("I just moved to Lisbon", "Just moved to Lisbon"),
    ("i live in porto with two cats", "Lives in porto"),
    ("I've been living in Berlin for six years", "Has been living in Berlin"),
    ("lol yeah I moved back to Toronto in the end", "Moved back to Toronto"),
    ("I'm based in Austin, TX", "Is based in Austin"),
    ("I'm currently living in a tiny flat in Leeds", "Is currently living in a tiny flat in Leeds"),
    ("i moved to the netherlands 3 years ago", "Moved to the netherlands"),
    ("Just moved to Porto!!", "Just moved to Porto"),                  # no "I": chat drops it
])
def test_home_city(message, text):
    f = one(message)
    assert (f.text, f.category, f.key, f.confidence, f.global_safe) == (text, "identity", "home city", 0.9, False)


def test_where_someone_is_from_is_their_hometown_not_where_they_live():
    found = facts("Im from Brazil originally but I live in Germany now")
    assert [(f.text, f.key) for f in found] == [("Is from Brazil originally", "hometown"),
                                                ("Lives in Germany", "home city")]
    assert one("I grew up in Glasgow").key == "hometown"
    assert (one("I was born in 1998").text, one("I was born in 1998").key) == ("Was born in 1998", "birth year")


def test_moving_later_is_a_plan_with_its_day():
    f = one("I'm moving to Berlin on March 20")
    assert (f.text, f.category, f.event_day, f.key) == ("Moving to Berlin", "plan", D(2026, 3, 20), None)
    f = one("we'll see, I'm moving to Berlin next month")
    assert (f.text, f.category, f.event_day) == ("Moving to Berlin", "plan", None)


# ------------------------------------------------------------------ work

@pytest.mark.parametrize("message, text", [
    ("I'm a nurse", "Is a nurse"),
    ("im a teacher lol", "Is a teacher"),
    ("honestly I'm a senior backend developer, it pays the bills", "Is a senior backend developer"),
    ("i'm a 3rd year med student at UCL", "Is a 3rd year med student at UCL"),
    ("I work at Spotify", "Works at Spotify"),
    ("I work remotely for a company in Berlin", "Works remotely for a company in Berlin"),
    ("I've been working for the city council since 2019", "Has been working for the city council"),
    ("I just started a new job at Shopify!", "Just started a new job at Shopify"),
    ("Started a new job at Mozilla this week, super excited", "Started a new job at Mozilla"),
    ("I got hired by Valve", "Got hired by Valve"),
    ("I work as a paramedic", "Works as a paramedic"),
    ("been working as a barista for 2 years now", "Has been working as a barista for 2 years"),
    ("I'm retired", "Is retired"),
])
def test_job(message, text):
    f = one(message)
    assert (f.text, f.category, f.key, f.global_safe) == (text, "skill/work", "job", False)


def test_not_a_job():
    assert facts("I'm a huge mess today", "I'm a bit tired", "I'm not a nurse", "I'm a fan of that") == []


def test_starting_a_job_later_is_a_plan():
    f = one("Next month I'm starting at Google")
    assert (f.text, f.category, f.key) == ("Starting at Google", "plan", None)


# ------------------------------------------------------------------ pets and family

@pytest.mark.parametrize("message, text, key", [
    ("my cat Miso knocked over my plant", "Has a cat named Miso", "pet miso"),
    ("My dog's name is Biscuit", "Has a dog named Biscuit", "pet biscuit"),
    ("we adopted him last year, my puppy is called Rex", "Has a puppy named Rex", "pet rex"),
    ("My cat, Biscuit, is sitting on my keyboard again", "Has a cat named Biscuit", "pet biscuit"),
    ("my two cats are called Salt and Pepper", "Has cats named Salt and Pepper", "pet salt and pepper"),
    ("I adopted a kitten named mochi", "Has a kitten named mochi", "pet mochi"),
    ("I have a golden retriever named Max", "Has a golden retriever named Max", "pet max"),
])
def test_pets(message, text, key):
    f = one(message)
    assert (f.text, f.category, f.key, f.global_safe) == (text, "other", key, False)


def test_a_lowercase_word_after_a_pet_is_no_name():
    assert facts("my cat knocked over my plant", "my dog barks at everything") == []


@pytest.mark.parametrize("message, text, key", [
    ("my sister Ana is visiting next week", "Has a sister named Ana", None),
    ("my girlfriend Maya is a doctor", "Has a girlfriend named Maya", None),
    ("I have three kids and a mortgage", "Has three kids", None),
    ("I'm married with two kids", "Is married", "relationship status"),
    ("I just got engaged!!", "Just got engaged", "relationship status"),
    ("I'm a dad now", "Is a dad", None),
    ("I became a dad last month", "Became a dad", None),
    ("My son's name is Leo", "Has a son named Leo", None),
])
def test_family(message, text, key):
    f = one(message)
    assert (f.text, f.category, f.key, f.global_safe) == (text, "relationship", key, False)


def test_someone_elses_facts_are_not_the_speakers():
    assert facts("my friend works at Google", "my boss lives in Paris", "He's from Spain", "You're from Spain right",
                 "they're flying to Rome next week", "her dog Bruno is so spoiled") == []
    # a dropped subject is carried over only after the speaker's own verb
    assert texts("my sister got married and moved to Paris") == ["Sister got married and moved to Paris"]


# ------------------------------------------------------------------ favourites and preferences

@pytest.mark.parametrize("message, text, key, safe", [
    ("my favourite game is Celeste", "Favourite game is Celeste", "favourite game", True),
    ("Hollow Knight is my favorite game", "Favourite game is Hollow Knight", "favourite game", True),
    ("my fave band is Radiohead tbh", "Favourite band is Radiohead", "favourite band", True),
    ("My favourite band is probably Radiohead", "Favourite band is Radiohead", "favourite band", True),
    ("My fav game of all time is Outer Wilds", "Favourite game is Outer Wilds", "favourite game", True),
    ("Outer Wilds is hands down my favorite game ever", "Favourite game is Outer Wilds", "favourite game", True),
    ("my favourite food has to be sushi", "Favourite food is sushi", "favourite food", True),
    ("my favourite place is my grandma's garden", "Favourite place is their grandma's garden", "favourite place",
     False),
])
def test_favourites(message, text, key, safe):
    f = one(message)
    assert (f.text, f.category, f.key, f.global_safe) == (text, "preference", key, safe)


def test_no_favourite_thing_without_a_thing():
    assert facts("my favorite thing about this server is the people", "this is my favourite song") == []


@pytest.mark.parametrize("message, text, safe", [
    ("I prefer Vim over Emacs", "Prefers Vim over Emacs", True),
    ("I prefer tabs over spaces fight me", "Prefers tabs over spaces", True),
    ("I use Arch btw", "Uses Arch", True),
    ("I daily drive Fedora", "Daily drives Fedora", True),
    ("I code in Rust mostly", "Codes in Rust", True),
    ("I really love hiking in the Alps", "Really loves hiking in the Alps", False),
    ("I hate cilantro", "Hates cilantro", False),
    ("I don't like horror movies at all", "Doesn't like horror movies at all", False),
    ("I'm really into bouldering these days", "Is really into bouldering", False),
    ("I'm a big fan of Studio Ghibli movies", "Is a big fan of Studio Ghibli movies", False),
    ("i like my coffee black", "Likes their coffee black", False),
    ("I main Mercy in Overwatch", "Mains Mercy in Overwatch", False),
    ("I love my wife", "Loves their wife", False),
])
def test_preferences(message, text, safe):
    f = one(message)
    assert (f.text, f.category, f.key, f.global_safe) == (text, "preference", None, safe)


def test_not_a_preference():
    assert facts("I love this", "I like that idea", "I love you guys", "I like how it turned out", "I love it here",
                 "I love when that happens", "I use a standing desk", "I like Sam's idea", "I prefer the first option",
                 "I love the new Spotify UI", "I play with friends on weekends", "I hate when Discord updates") == []


# ------------------------------------------------------------------ skills

@pytest.mark.parametrize("message, text, category", [
    ("I've been learning Rust", "Has been learning Rust", "skill/work"),
    ("I'm learning to code in Python", "Is learning to code in Python", "skill/work"),
    ("I'm studying computer science at MIT", "Is studying computer science at MIT", "skill/work"),
    ("I'm teaching myself Blender", "Is teaching themselves Blender", "skill/work"),
    ("I play guitar in a local band", "Plays guitar", "skill/work"),
    ("I've been playing the piano since I was 6", "Has been playing the piano", "skill/work"),
    ("I play Valorant every night", "Plays Valorant", "preference"),
    ("I'm doing a PhD in linguistics at Edinburgh", "Is doing a PhD in linguistics at Edinburgh", "skill/work"),
    ("I collect vinyl records", "Collects vinyl records", "preference"),
    ("I'm a cat person", "Is a cat person", "preference"),
])
def test_skills(message, text, category):
    f = one(message)
    assert (f.text, f.category, f.key) == (text, category, None)


# ------------------------------------------------------------------ languages, time zones, age, birthday

@pytest.mark.parametrize("message, text, key", [
    ("I speak Portuguese and English", "Speaks Portuguese and English", "language"),
    ("I speak fluent Spanish and a little bit of French", "Speaks fluent Spanish and a little bit of French",
     "language"),
    ("I'm a native German speaker", "Is a native German speaker", "language"),
    ("My first language is Portuguese", "First language is Portuguese", "language"),
    ("I'm in CET btw", "Is in CET", "timezone"),
    ("I'm in EST so it's 3am here", "Is in EST", "timezone"),
    ("I'm in UTC+2", "Is in UTC+2", "timezone"),
    ("my timezone is PST", "Is in PST", "timezone"),
    ("I live in UTC-5", "Lives in UTC-5", "timezone"),
    ("I can speak a bit of Korean", "Can speak a bit of Korean", "language"),
    ("I'm fluent in Mandarin", "Is fluent in Mandarin", "language"),
])
def test_language_and_time_zone_are_global(message, text, key):
    f = one(message)
    assert (f.text, f.category, f.key, f.global_safe) == (text, "identity", key, True)


@pytest.mark.parametrize("message, text", [
    ("I'm 29", "Is 29"), ("I'm 34 and still can't cook", "Is 34"), ("I'm 19 years old", "Is 19 years old"),
    ("I'm 25yo", "Is 25yo"), ("I turned 40 last week", "Turned 40"),
])
def test_age_is_never_global(message, text):
    f = one(message)
    assert (f.text, f.category, f.key, f.global_safe) == (text, "identity", "age", False)


def test_not_a_language_nor_a_hometown():
    assert facts("I speak for everyone when I say this", "I'm from the future lol") == []


@pytest.mark.parametrize("message, text, key", [
    ("I'm Canadian", "Is Canadian", None),
    ("I use she/her pronouns", "Uses she/her pronouns", "pronouns"),
    ("My pronouns are they/them", "Pronouns are they/them", "pronouns"),
    ("my name is Alex btw", "Name is Alex", "name"),
])
def test_who_they_are(message, text, key):
    f = one(message)
    assert (f.text, f.category, f.key, f.global_safe) == (text, "identity", key, False)


def test_numbers_that_are_no_age():
    assert facts("I'm 30 minutes late sorry", "I'm 6'2 lol", "I'm 5") == []


def test_birthday():
    f = one("My birthday is March 3rd!")
    assert (f.text, f.category, f.key, f.global_safe, f.event_day) == (
        "Birthday is March 3rd", "identity", "birthday", False, None)
    f = one("it's my birthday today!!")
    assert (f.text, f.category, f.event_day) == ("Birthday", "event", WED)
    f = one("my bday is tomorrow")
    assert (f.text, f.category, f.event_day) == ("Bday", "plan", D(2026, 3, 5))


# ------------------------------------------------------------------ trips, events, plans and their days

@pytest.mark.parametrize("message, day", [
    ("I'm flying to Tokyo next week", D(2026, 3, 11)),
    ("Tomorrow I'm flying to Tokyo", D(2026, 3, 5)),
    ("I'm flying to Tokyo tmrw", D(2026, 3, 5)),
    ("I'm flying to Tokyo the day after tomorrow", D(2026, 3, 6)),
    ("I'm flying to Tokyo on Friday", D(2026, 3, 6)),
    ("I'm flying to Tokyo next Monday", D(2026, 3, 9)),
    ("I'm flying to Tokyo this Saturday", D(2026, 3, 7)),
    ("I'm flying to Tokyo this weekend", D(2026, 3, 7)),
    ("I'm flying to Tokyo on the 20th", D(2026, 3, 20)),
    ("I'm flying to Tokyo on the 2nd", D(2026, 4, 2)),        # passed this month
    ("I'm flying to Tokyo on 3 March", D(2027, 3, 3)),        # passed this year
    ("I'm flying to Tokyo on March 10th", D(2026, 3, 10)),
    ("I'm flying to Tokyo on 10 Jan", D(2027, 1, 10)),
    ("I'm flying to Tokyo in 3 days", D(2026, 3, 7)),
    ("I'm flying to Tokyo in two weeks", D(2026, 3, 18)),
    ("I'm flying to Tokyo 2026-12-03", D(2026, 12, 3)),
])
def test_trip_days(message, day):
    f = one(message)
    assert (f.text, f.event_day, f.category, f.confidence) == ("Flying to Tokyo", day, "plan", 0.9)


def test_the_year_rolls_over_for_a_plan_in_december():
    f = one("I'm flying home to Sydney on Jan 5", day=D(2026, 12, 20))
    assert (f.text, f.event_day) == ("Flying home to Sydney", D(2027, 1, 5))
    f = one("I'm flying to Oslo on the 3rd", day=D(2026, 12, 20))
    assert f.event_day == D(2027, 1, 3)


@pytest.mark.parametrize("message, text, day", [
    ("I went to Porto last weekend", "Went to Porto", D(2026, 2, 28)),
    ("Last week I went to Prague", "Went to Prague", D(2026, 2, 25)),
    ("I flew back from Seoul yesterday", "Flew back from Seoul", D(2026, 3, 3)),
    ("I got back from a trip to Vietnam two days ago", "Got back from a trip to Vietnam", D(2026, 3, 2)),
    ("I was in Berlin last week for a conference", "Was in Berlin", D(2026, 2, 25)),
    ("I went to a Taylor Swift concert last night", "Went to a Taylor Swift concert", D(2026, 3, 3)),
    ("I visited my parents in Ohio on Sunday", "Visited their parents in Ohio", D(2026, 3, 1)),  # past: last Sunday
])
def test_past_trips_are_events(message, text, day):
    f = one(message)
    assert (f.text, f.category, f.event_day) == (text, "event", day)


@pytest.mark.parametrize("message, text, category, day", [
    ("I have a job interview at Google on Monday", "Has a job interview", "plan", D(2026, 3, 9)),
    ("my exam is on Thursday", "Has an exam", "plan", D(2026, 3, 5)),
    ("I have a dentist appointment tomorrow", "Has a dentist appointment", "plan", D(2026, 3, 5)),
    ("I've got a big presentation on Friday", "Has a big presentation", "plan", D(2026, 3, 6)),
    ("I've got a concert tonight", "Has a concert", "event", WED),
    ("I have exams all next week", "Has exams", "plan", D(2026, 3, 11)),
    ("Heading to Paris on Friday for my cousin's wedding", "Heading to Paris", "plan", D(2026, 3, 6)),
    ("I'm off to Lisbon tomorrow for a week", "Off to Lisbon", "plan", D(2026, 3, 5)),
])
def test_dated_events_and_plans(message, text, category, day):
    f = one(message)
    assert (f.text, f.category, f.event_day) == (text, category, day)


def test_an_undated_trip_needs_a_proper_noun_and_is_less_sure():
    f = one("I'm going to Japan in April")
    assert (f.text, f.category, f.event_day, f.confidence) == ("Going to Japan", "plan", None, 0.75)
    assert facts("I'm going to bed", "I'm off to the gym tomorrow", "I'm going to the store", "I was at work") == []


# ------------------------------------------------------------------ anything else said about oneself

@pytest.mark.parametrize("message, text, category, day", [
    ("I sold my bike for 200 euros yesterday", "Sold their bike for 200 euros", "event", D(2026, 3, 3)),
    ("I finally finished Elden Ring after 120 hours", "Finally finished Elden Ring after 120 hours", "other", None),
    ("I broke my leg skiing in Austria", "Broke their leg skiing in Austria", "other", None),
    ("I was diagnosed with ADHD last year", "Was diagnosed with ADHD", "other", None),
    ("I've been sober for 2 years", "Has been sober for 2 years", "other", None),
    ("I used to live in Madrid", "Used to live in Madrid", "other", None),
    ("my sister lives in Canada", "Sister lives in Canada", "relationship", None),
    ("My parents live in Lyon", "Parents live in Lyon", "relationship", None),
    ("I stream on Twitch every Friday", "Streams on Twitch every Friday", "other", None),  # no one day
    ("I drive a Tesla", "Drives a Tesla", "other", None),
    ("I'm on vacation in Greece until Sunday", "Is on vacation in Greece", "plan", D(2026, 3, 8)),
    ("I ran my first marathon on Sunday", "Ran their first marathon", "event", D(2026, 3, 1)),
])
def test_other_statements_with_a_name_a_number_or_a_date(message, text, category, day):
    f = one(message)
    assert (f.text, f.category, f.event_day, f.confidence, f.key, f.global_safe) == (
        text, category, day, 0.75, None, False)


def test_chatter_gives_nothing():
    assert facts("I'm so tired today", "my internet is being weird again", "I think the new map is way better",
                 "I got 3 hours of sleep", "I need 5 more minutes", "I went to bed at 3am", "I have no idea",
                 "I have a question about the bot", "I'm sorry to hear that", "I was in the shower lol",
                 "I tried the new ramen place downtown and it was amazing", "I'll send you the file on Monday",
                 "brb", "lol same", "gg") == []


def test_the_moment_gives_nothing():
    assert facts("I'm on page 200 of the book", "I got 2 kills in that round", "I have 5% battery left",
                 "I'm level 80 now", "I found a bug in version 2.3", "I fixed it in PR 451", "I'm at the airport",
                 "I'm using Python 3.12 for this", "I'm watching the F1 race", "I'll be back in 10",
                 "I missed the stream on Tuesday", "I uploaded the clip to YouTube", "My ping is 200 today",
                 "I'm playing Valorant rn, anyone want to join", "I was talking to Mike about it yesterday") == []


# ------------------------------------------------------------------ what is never a fact

@pytest.mark.parametrize("message", [
    "Do you live in Berlin?",
    "I live in Berlin?",
    "If I lived in Paris I would be so happy",
    "If I had money I'd move to Japan",
    "I wish I worked at Google",
    "I would love to visit Japan someday",
    "I could move to Berlin maybe",
    "I might be going to Paris next week",
    "I should learn Rust",
    "I want to learn Japanese",
    "I'm thinking about moving to Spain",
    "I'm a billionaire who lives on Mars jk",
    "I live in a castle /s",
    '"I live in Rome" is what she always says',
    "“I’m a nurse” lol that's what she told everyone",
    "> I moved to Berlin last year",
    "```\nI live in Rome\n```",
    "she said I'm a nurse",
    "I told him I live in Rome",
])
def test_nothing_from(message):
    assert facts(message) == []


def test_a_quote_does_not_hide_the_speakers_own_sentence():
    assert texts('> I moved to Berlin\nhaha no, I live in Lisbon') == ["Lives in Lisbon"]


# ------------------------------------------------------------------ who, where, how often

def test_a_fact_is_about_its_own_speaker_and_cites_its_line():
    found = facts((BO, "hey Ana how are you"), (ANA, "I just moved to Lisbon"), (BO, "nice! I live in Porto"),
                  (BO, "Ana said she's a nurse"))
    assert [(f.user_id, f.text, f.sources) for f in found] == [
        (ANA, "Just moved to Lisbon", (1,)), (BO, "Lives in Porto", (2,))]


def test_a_reply_about_someone_else_is_the_repliers_own():
    lines = (ChatLine(1, ANA, "Ana", "I'm a nurse", dt.datetime(2026, 3, 4, 9)),
             ChatLine(2, BO, "Bo", "I'm a nurse too!", dt.datetime(2026, 3, 4, 10), reply_to_name="Ana",
                      reply_to_user=ANA))
    found = extract_facts(PartitionDay("guild:1", WED, lines, {ANA: "Ana", BO: "Bo"}))
    assert [(f.user_id, f.text, f.sources) for f in found] == [(ANA, "Is a nurse", (0,)), (BO, "Is a nurse", (1,))]


def test_the_same_fact_twice_is_one_candidate_with_both_sources():
    found = facts("I live in Lisbon", (BO, "cool"), "i live in lisbon.", (BO, "I live in Lisbon"))
    assert [(f.user_id, f.text, f.sources) for f in found] == [(ANA, "Lives in Lisbon", (0, 2)),
                                                               (BO, "Lives in Lisbon", (3,))]


def test_a_later_date_fills_in_an_undated_restatement():
    found = facts("I'm moving to Berlin next month", "I'm moving to Berlin on March 20")
    assert [(f.text, f.sources, f.event_day) for f in found] == [("Moving to Berlin", (0, 1), D(2026, 3, 20))]


def test_several_facts_of_one_message_in_order():
    found = facts("I'm a Python dev but I'm learning Go. Also my cat Miso says hi")
    assert [(f.text, f.sources) for f in found] == [("Has a cat named Miso", (0,)), ("Is a Python dev", (0,)),
                                                    ("Is learning Go", (0,))]


def test_order_is_by_line_then_text():
    found = facts((BO, "I play the drums"), "I'm in CET", "I speak Greek", (BO, "I'm 31"))
    assert [(f.sources[0], f.text) for f in found] == [(0, "Plays the drums"), (1, "Is in CET"), (2, "Speaks Greek"),
                                                       (3, "Is 31")]


def test_a_long_sentence_is_cut_to_a_fact():
    message = "I finally moved to Lisbon " + "and it was a long and winding and complicated journey " * 10
    assert texts(message) == ["Finally moved to Lisbon"]
    message = "I bought a Raspberry Pi " + ", ".join(f"a sensor number {i}" for i in range(40))
    (f,) = facts(message)
    assert len(f.text) <= 200 and f.text.startswith("Bought a Raspberry Pi")


# ------------------------------------------------------------------ properties over all of the above

CORPUS = [m for m in """
I just moved to Lisbon and I work at Spotify as a backend dev
my cat Miso knocked over my plant again lol
Tomorrow I'm flying to Tokyo for a conference
I've been learning Rust, my favourite editor is Helix
Outer Wilds is hands down my favorite game ever
I sold my bike for 200 euros yesterday
I'm 29 and I speak Portuguese and English
I'm in CET btw
my sister Ana is visiting next week
I was diagnosed with ADHD last year
I have a job interview at Google on Monday
I'm vegetarian btw
I'm allergic to peanuts
Heading to Paris on Friday for my cousin's wedding
I love my wife
I got married in Porto last summer
I use Windows for gaming and Linux for work
I'm a huge fan of Studio Ghibli movies
my name is Alex btw
I'm teaching myself Blender and I play the drums in a metal band
""".strip().splitlines()]


def test_deterministic():
    msgs = [(ANA if i % 2 else BO, m) for i, m in enumerate(CORPUS)]
    a = facts(*msgs)
    assert a == facts(*msgs) and len(a) >= len(CORPUS)
    reordered = PartitionDay("guild:1", WED, pd_of(*msgs).lines, {BO: "Bo", ANA: "Ana"})
    assert extract_facts(reordered) == a


def test_every_fact_is_grounded_in_its_speakers_line_and_in_the_third_person():
    pd = pd_of(*[(ANA if i % 2 else BO, m) for i, m in enumerate(CORPUS)])
    found = extract_facts(pd)
    assert {f.sources[0] for f in found} == set(range(len(CORPUS)))  # every line gave something
    for f in found:
        cited = [pd.lines[s] for s in f.sources]
        assert all(line.user_id == f.user_id for line in cited)
        assert grounding(f.text, [line.text for line in cited], cited[0].name) >= MemorySettings().min_grounding, f
        assert not {"i", "i'm", "i've", "my", "me", "myself"} & set(tokens(f.text)), f
        assert f.text[:1].isupper() and len(f.text) <= 200 and not f.text.endswith(".")
        assert f.category in CATEGORIES and f.confidence in (0.9, 0.75)
        assert f.event_day is None or f.category in ("event", "plan")


def test_what_is_global_safe():
    found = {f.text: f.global_safe for f in facts(*CORPUS)}
    safe = {text for text, is_safe in found.items() if is_safe}
    assert safe == {"Favourite editor is Helix", "Favourite game is Outer Wilds", "Speaks Portuguese and English",
                    "Is in CET", "Uses Windows"}
