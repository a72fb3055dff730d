"""In-chat memory request phrases (pipeline/memory/requests.py), per language, with the negatives
that are chat, not requests to the bot, and the refusals of requests about someone else; and the
Gemini answer's `requests` (schemas.py, facts_out.py): bad entries dropped, not fatal."""

from __future__ import annotations

import datetime as dt

import pytest

from pipeline.memory.requests import OTHER_PERSON, find_requests, request_in
from pipeline.summarize.base import ChatLine, PartitionDay
from pipeline.summarize.facts_out import checked_requests, requests_of
from pipeline.summarize.schemas import DailyOut

TOMAS = ["Tomás"]


@pytest.mark.parametrize("text, kind, what", [
    ("Remember that I'm vegetarian when you order food on Saturday, please!", "remember",
     "Is vegetarian when you order food on Saturday"),
    ("please remember that my favourite game is Hades", "remember", "Favourite game is Hades"),
    ("Hey bot, remember that I live in Porto now.", "remember", "Lives in Porto now"),
    ("Please forget what I said about the hospital.", "forget", "the hospital"),
    ("forget everything I said about my exam", "forget", "my exam"),
    ("Don't remember that I was sick last week", "forget", "I was sick last week"),
    ("Please forget that I'm moving to Lisbon", "forget", "I'm moving to Lisbon"),
    ("Remember that time zones confuse me, I'm in UTC+9!", "remember", "Time zones confuse me, I'm in UTC+9"),
    # Portuguese
    ("Lembra que eu sou vegetariano, por favor", "remember", "Eu sou vegetariano"),
    ("Esquece o que eu disse sobre o hospital.", "forget", "o hospital"),
    # Spanish
    ("Recuerda que soy vegetariano.", "remember", "Soy vegetariano"),
    ("Olvida lo que dije sobre el hospital", "forget", "el hospital"),
    # French
    ("Souviens-toi que je suis végétarien, s'il te plaît", "remember", "Je suis végétarien"),
    ("Oublie ce que j'ai dit sur l'hôpital.", "forget", "l'hôpital"),
    # German
    ("Merk dir, dass ich Vegetarier bin.", "remember", "Ich Vegetarier bin"),
    ("Vergiss, was ich über das Krankenhaus gesagt habe.", "forget", "das Krankenhaus"),
])
def test_requests_per_language(text, kind, what):
    assert request_in(text, TOMAS) == (kind, what, None)


@pytest.mark.parametrize("text", [
    "I can't remember the rules",
    "don't forget the dice",
    "Do you remember that game we played?",
    "remember that the game starts at 8",      # a reminder to the group, nothing about the speaker
    "forget it",
    "I forgot what I said about the rules",
    "Não me lembro das regras",
    "No recuerdo las reglas",
    "Je ne me souviens pas des règles",
    "Ich habe die Würfel vergessen",
    # a bare "forget that/about …" that says nothing of the speaker is chat, not a request (taken,
    # it would delete the speaker's facts on the topic)
    "Forget that, let's play Catan tonight",
    "forget about the bus, the others will drive",
    "Don't remember that the game is at 8, it moved",
    "Esquece que o jogo é amanhã",
    "Oublie que la partie est demain",
    # a forget's topic ends at the first clause break: "it" is no topic (taken whole, "I'm fine"
    # would delete every fact of the speaker's with "fine")
    "Forget about it, I'm fine, thanks",
    "forget about it, I already booked the table",
    "Forget about it, my bad",
    "forget about it; I'm on it",
    "forget about it but I'm coming later",
    # questions and reminiscing: a confidence-1 fact each, if taken
    "Remember that time I fell off my bike?",
    "Remember that time I fell off my bike, lol",
    "remember that day I won the tournament",
    "Remember that night I got lost in Porto",
    "remember that when I lived in Lisbon we played every week",
    "remember that I told you about my surgery?",
    "Please forget what I said about my exam?",
    "lembra que eu te falei do show?",
    "Lembra daquela vez que eu caí da bicicleta",
    "lembra que daquela vez eu caí da bicicleta",
    "lembra quando eu morava em Lisboa",
    "lembra que quando eu morava em Lisboa eu era feliz",
    "¿Recuerdas cuando me caí de la bici?",
    "recuerda que cuando yo vivía en Madrid jugábamos",
    "Recuerda aquella vez que me caí",
])
def test_chat_that_is_not_a_request(text):
    assert request_in(text, TOMAS) is None


@pytest.mark.parametrize("text", [
    "Remember that Ana is allergic to peanuts.",
    "remember that she likes tea",
    "remember that my sister is a nurse",
    "remember that I think Ana is my best friend",   # a known member named
    "Lembra que ela é vegetariana",
    "Merk dir, dass er Vegetarier ist",
])
def test_requests_about_someone_else_are_refused(text):
    found = request_in(text, TOMAS, ["Ana", "Bob"])
    assert found is not None and found[0] == "remember" and found[2] == OTHER_PERSON


@pytest.mark.parametrize("text, topic", [
    ("Please forget what I said about the hospital, thanks", "the hospital"),
    ("forget what I said about my exam, I passed it", "my exam"),
    ("Forget that I'm moving, it fell through", "I'm moving"),
    ("forget what I said about the clinic but keep the rest", "the clinic"),
    ("Esquece o que eu disse sobre o hospital, já passou", "o hospital"),
    ("Olvida lo que dije sobre el hospital, pero gracias", "el hospital"),
])
def test_a_forget_topic_ends_at_the_first_clause_break(text, topic):
    assert request_in(text, TOMAS) == ("forget", topic, None)


def test_a_forget_is_always_about_the_speakers_own_memory():
    assert request_in("Please forget what I said about Ana", TOMAS, ["Ana"]) == ("forget", "Ana", None)


def _pd(*texts_by_user) -> PartitionDay:
    ts = dt.datetime(2026, 11, 3, 9, tzinfo=dt.timezone.utc)
    lines = tuple(ChatLine(100 + i, u, {1: "Tomás", 2: "Bob"}[u], t, ts, channel_id=7)
                  for i, (u, t) in enumerate(texts_by_user))
    return PartitionDay("guild:1", ts.date(), lines, {1: "Tomás", 2: "Bob"})


def test_find_requests_gives_positions_and_speakers():
    pd = _pd((2, "hello"), (1, "Remember that I'm vegetarian"), (2, "Remember that Tomás is a chef"))
    found = find_requests(pd)
    assert [(r.user_id, r.position, r.kind, r.refused) for r in found] == [
        (1, 1, "remember", None), (2, 2, "remember", OTHER_PERSON)]


def test_model_requests_validated_and_checked():
    pd = _pd((1, "Remember that I'm vegetarian"), (2, "Remember that Tomás is a chef"), (2, "nice"))
    answer = DailyOut.model_validate({"summaries": [
        {"speaker": "p1", "summary": "x", "requests": [
            {"kind": "remember", "text": "Is vegetarian", "about_self": True, "source": "1"},
            {"kind": "remember", "text": "Is a chef", "about_self": True, "source": "m2"},  # Bob's message: dropped
            {"kind": "explode", "text": "x", "source": "m1"},                             # bad kind: dropped
            {"kind": "forget", "source": "m1"}]},                                          # no text: dropped
        {"speaker": "p2", "summary": "y", "requests": "not a list"}]})
    handles = {1: "p1", 2: "p2"}
    numbered = PartitionDay(pd.partition, pd.day, tuple(
        ChatLine(i, ln.user_id, ln.name, ln.text, ln.ts) for i, ln in enumerate(pd.lines)), pd.speakers)
    got = requests_of(answer, handles, numbered.lines)
    assert [(r.user_id, r.position, r.kind, r.text) for r in got] == [(1, 0, "remember", "Is vegetarian")]
    # the phrase the model left out is still found, and refused: it is about Tomás, not Bob
    checked = checked_requests(got, pd)
    assert [(r.user_id, r.position, r.refused) for r in checked] == [(1, 0, None), (2, 1, OTHER_PERSON)]


def test_model_saying_not_about_self_is_refused():
    pd = _pd((2, "Please remember this: Tomás moved to Porto"))
    answer = DailyOut.model_validate({"summaries": [{"speaker": "p2", "summary": "y", "requests": [
        {"kind": "remember", "text": "Tomás moved to Porto", "about_self": False, "source": "m1"}]}]})
    numbered = (ChatLine(0, 2, "Bob", pd.lines[0].text, pd.lines[0].ts),)
    assert [r.refused for r in checked_requests(requests_of(answer, {2: "p2"}, numbered), pd)] == [OTHER_PERSON]


def test_model_forget_not_about_self_is_still_applied():
    # a forget only ever removes the speaker's own facts: the model's about_self (for a remember)
    # never refuses it, whatever its topic
    pd = _pd((1, "Please forget what I said about my sister's surgery"))
    answer = DailyOut.model_validate({"summaries": [{"speaker": "p1", "summary": "x", "requests": [
        {"kind": "forget", "text": "sister's surgery", "about_self": False, "source": "m1"}]}]})
    numbered = (ChatLine(0, 1, "Tomás", pd.lines[0].text, pd.lines[0].ts),)
    got = checked_requests(requests_of(answer, {1: "p1"}, numbered), pd)
    assert [(r.kind, r.text, r.refused) for r in got] == [("forget", "sister's surgery", None)]


def test_model_remember_of_a_reminder_to_the_group_is_refused():
    # the rules read "remember that …" in the message and find it not about its speaker (Ana did
    # not speak that day, so no member's name refuses it): the model's about_self=true is not trusted
    pd = _pd((2, "remember that Ana's pregnant"))
    answer = DailyOut.model_validate({"summaries": [{"speaker": "p2", "summary": "y", "requests": [
        {"kind": "remember", "text": "Is pregnant", "about_self": True, "source": "m1"}]}]})
    numbered = (ChatLine(0, 2, "Bob", pd.lines[0].text, pd.lines[0].ts),)
    got = checked_requests(requests_of(answer, {2: "p2"}, numbered), pd)
    assert [(r.kind, r.refused) for r in got] == [("remember", OTHER_PERSON)]
    # a message with no phrase the rules read is the model's to judge
    pd = _pd((1, "btw I'm vegetarian now, keep that in mind"))
    answer = DailyOut.model_validate({"summaries": [{"speaker": "p1", "summary": "y", "requests": [
        {"kind": "remember", "text": "Is vegetarian", "about_self": True, "source": "m1"}]}]})
    numbered = (ChatLine(0, 1, "Tomás", pd.lines[0].text, pd.lines[0].ts),)
    assert [r.refused for r in checked_requests(requests_of(answer, {1: "p1"}, numbered), pd)] == [None]
