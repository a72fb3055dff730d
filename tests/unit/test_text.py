"""pipeline.summarize.text (sentences, salience, pick, fact matching, scrub). No database.
Mentions and other markup: test_markup.py."""

from __future__ import annotations

import pytest

from pipeline.summarize.text import (
    clean,
    content_tokens,
    mentions_fact,
    names_person,
    pick,
    salience,
    scrub,
    sentences,
    shorten,
    tokens,
)

CHATTER = ["lol", "ok", "haha yeah", "hi", "thanks!", "oh ok"]
INFORMATIVE = [
    "I'm moving to Lisbon in March for a new job at the harbour authority.",
    "My sister Marta runs a bakery in Porto and sells 300 pastries a day.",
    "I have been learning Rust for the compiler course at university.",
]


# ---------------------------------------------------------------- sentences

def test_sentences_split_on_terminal_punctuation_followed_by_space():
    assert sentences("Hello there. How are you? Fine! Great") == [
        "Hello there.", "How are you?", "Fine!", "Great"]


def test_sentences_split_on_newlines_and_middle_dot_separator():
    assert sentences("first line\n\nsecond line · third part") == ["first line", "second line", "third part"]


def test_sentences_do_not_split_inside_numbers_or_without_following_space():
    assert sentences("Version 3.5 is out.It works") == ["Version 3.5 is out.It works"]


def test_sentences_collapse_whitespace_strip_quotes_and_drop_empties():
    assert sentences("  “quoted   words”  ·  \n\n  \"plain\"  ") == ["quoted words", "plain"]
    assert sentences("") == []
    assert sentences("   \n · \n") == []


def test_clean_collapses_all_whitespace():
    assert clean("  a\t b\n\nc  ") == "a b c"


def test_tokens_lowercase_and_keep_apostrophes():
    assert tokens("I'm IN the Band, ok?") == ["i'm", "in", "the", "band", "ok"]
    assert tokens("Ana's band") == ["ana", "band"]  # a possessive is the name itself


@pytest.mark.parametrize("text", ["Ana's CAT's 's xs's", "It's ON, O'Neil!", "ALL_CAPS snake_case 42's",
                                  "İstanbul's Straße", "Ana’s cat", "ÉCOLE's élève", "plain words",
                                  "ANA'S BAND", "Bob's"])
def test_tokens_lower_the_text_whole_only_where_that_moves_no_word(text):
    import re
    one_by_one = [t[:-2] if t.endswith("'s") and len(t) > 2 else t
                  for t in (w.lower().replace("’", "'") for w in re.findall(r"[\w']+", text))]
    assert tokens(text) == one_by_one


def test_content_tokens_drop_stopwords_and_short_words_but_keep_numbers():
    assert content_tokens("I am in a band at 7 with my ox") == ["band", "7"]


# ---------------------------------------------------------------- salience

@pytest.mark.parametrize("chatter", CHATTER)
def test_chatter_has_no_salience(chatter):
    assert salience(chatter) == 0.0


@pytest.mark.parametrize("informative", INFORMATIVE)
def test_informative_sentences_outrank_every_chatter_line(informative):
    assert salience(informative) > max(salience(c) for c in CHATTER)


def test_salience_prefers_self_disclosure_with_numbers_over_generic_remark():
    generic = "That movie was pretty long and somewhat boring."
    disclosure = "I'm turning 30 next Friday and my parents visit."
    assert salience(disclosure) > salience(generic)


def test_salience_is_deterministic():
    assert [salience(s) for s in INFORMATIVE] == [salience(s) for s in INFORMATIVE]


# ---------------------------------------------------------------- shorten

def test_shorten_keeps_text_that_fits():
    assert shorten("short text", 10) == "short text"


@pytest.mark.parametrize("limit", [5, 12, 20, 33])
def test_shorten_cuts_at_a_word_boundary_within_the_limit(limit):
    text = "the quick brown fox jumps over the lazy dog again and again"
    out = shorten(text, limit)
    assert len(out) <= limit
    assert out.endswith("…")
    assert text.startswith(out[:-1])


# ---------------------------------------------------------------- pick

def test_pick_prefers_informative_over_chatter_and_returns_input_order():
    candidates = ["lol", INFORMATIVE[1], "ok", INFORMATIVE[0]]
    assert pick(candidates, budget=1000) == [1, 3]


def test_pick_never_picks_chatter_even_with_room_left():
    assert pick(CHATTER, budget=1000) == []


@pytest.mark.parametrize("budget", [0, 10, 60, 80, 140, 250, 1000])
def test_pick_respects_the_budget_including_separators(budget):
    sep_len = 3
    chosen = pick(INFORMATIVE + CHATTER, budget, sep_len=sep_len)
    used = sum(len((INFORMATIVE + CHATTER)[i]) for i in chosen) + sep_len * max(len(chosen) - 1, 0)
    assert used <= budget
    assert chosen == sorted(chosen)


def test_pick_takes_the_most_salient_that_fits_when_not_all_fit():
    # Only one of the informative sentences fits; it must be the most salient one that fits.
    budget = max(len(s) for s in INFORMATIVE)
    chosen = pick(INFORMATIVE, budget)
    assert len(chosen) == 1
    best = max(range(len(INFORMATIVE)), key=lambda i: (salience(INFORMATIVE[i]), -i))
    assert chosen == [best]


def test_pick_skips_duplicates_by_content():
    candidates = [INFORMATIVE[0], "lol", INFORMATIVE[0].upper(), clean(" " + INFORMATIVE[0] + " ")]
    chosen = pick(candidates, budget=10_000)
    assert len(chosen) == 1 and chosen[0] != 1


# ---------------------------------------------------------------- mentions_fact

def test_mentions_fact_matches_whole_words_only():
    assert mentions_fact("they got a ban today", "ban")
    assert not mentions_fact("I play in a band", "ban")
    assert not mentions_fact("bandana weather", "ban")


def test_mentions_fact_needs_every_content_word():
    assert mentions_fact("Ana works at the harbour in Lisbon", "Ana works in Lisbon")
    assert not mentions_fact("Ana works at the harbour", "Ana works in Lisbon")


def test_mentions_fact_ignores_the_subjects_own_name():
    assert mentions_fact("I'm in CET", "Ana is in CET", subject="Ana")
    assert not mentions_fact("I'm in CET", "Ana is in CET")  # without the subject, "ana" is required
    # Every word of a multi-word name is dropped; the rest must still match as whole words.
    assert mentions_fact("she lives in Porto now", "Ana Maria lives in Porto", subject="Ana Maria")
    assert not mentions_fact("I live in Lisbon", "Ana Maria lives in Porto", subject="Ana Maria")


def test_mentions_fact_reads_every_form_of_a_word_and_plain_letters():
    # a fact is stored in the third person, the chat quoted in the first, and typed any which way
    assert mentions_fact("I live in Porto", "Lives in Porto")
    assert mentions_fact("Ana: “I'm living in Porto”", "she lives in porto!")
    assert mentions_fact("studied maths at uni", "Studies maths")
    assert mentions_fact("I moved to São Paulo", "moved to sao paulo")
    assert mentions_fact("I moved to Sao Paulo", "MOVED TO ＳＡＯ PAULO")
    assert not mentions_fact("I play in a band", "bans")  # still whole words
    assert not mentions_fact("I live in Porto", "Lives in Lisbon")


def test_mentions_fact_is_case_insensitive_and_matches_equal_text():
    assert mentions_fact("ANA IS IN CET", "ana is in cet")
    assert mentions_fact("I am ok", "i am  ok")  # stopwords only: equal text still matches


def test_mentions_fact_of_only_the_subjects_name_still_requires_the_name():
    assert mentions_fact("Ana was here", "Ana", subject="Ana")
    assert not mentions_fact("someone was here", "Ana", subject="Ana")


def test_mentions_fact_with_an_empty_fact_matches_nothing():
    assert not mentions_fact("anything at all", "")
    assert not mentions_fact("anything at all", "   ")


# ---------------------------------------------------------------- scrub

def test_scrub_removes_only_matching_sentences():
    text = "Ana likes green tea. Ana is in CET. Ana plays chess."
    assert scrub(text, ["Ana is in CET"], "Ana") == "Ana likes green tea. Ana plays chess."


def test_scrub_keeps_the_label_when_the_first_sentence_goes():
    text = "Ana: “I'm in CET” · “I like green tea”"
    assert scrub(text, ["Ana is in CET"], "Ana") == "Ana: “I like green tea”"


@pytest.mark.parametrize("position", [0, 1, 2])
def test_scrub_keeps_separators_tidy_wherever_the_sentence_was(position):
    others = ["“I like green tea”", "“my band plays on Friday”"]
    parts = list(others)
    parts.insert(position, "“I'm in CET”")
    text = "Ana: " + " · ".join(parts)
    assert scrub(text, ["Ana is in CET"], "Ana") == "Ana: " + " · ".join(others)


def test_scrub_does_not_touch_similar_words():
    text = "Ana: “my band got a gig” · “the band ban is lifted”"
    # "ban" appears as a whole word only in the second sentence.
    assert scrub(text, ["ban"], "Ana") == "Ana: “my band got a gig”"


def test_scrub_works_line_by_line_and_drops_emptied_lines():
    text = "Facts: Ana is in CET.\nToday: Ana: “I'm in CET” · “I bought a bike”\nPast week (2 active days): “I'm in CET”"
    assert scrub(text, ["Ana is in CET"], "Ana") == "Today: Ana: “I bought a bike”"


def test_scrub_keeps_the_facts_label_of_a_merged_context():
    text = "Facts: Ana is in CET. Ana likes tea.\nToday: Ana: “I bought a bike”"
    assert scrub(text, ["Ana is in CET"], "Ana") == "Facts: Ana likes tea.\nToday: Ana: “I bought a bike”"


def test_scrub_without_facts_or_text_returns_input_unchanged():
    text = "Ana: “I'm in CET”  ·  “odd   spacing”"
    assert scrub(text, [], "Ana") == text
    assert scrub("", ["Ana is in CET"], "Ana") == ""


def test_scrub_with_unrelated_facts_keeps_everything():
    text = "Ana: “I'm in CET” · “I like green tea”"
    assert scrub(text, ["Ana owns a boat", "ban"], "Ana") == text


def test_scrub_removes_a_fact_stated_before_a_colon():
    # Found while writing these tests: any first clause ending in ": " used to be kept as a label.
    out = scrub("Ana moved to Berlin: she loves it there.", ["Ana moved to Berlin"], "Ana")
    assert "Berlin" not in out
    out = scrub("Ana moved to Berlin: “it is great” · “I like tea”", ["Ana moved to Berlin"], "Ana")
    assert "Berlin" not in out and "“I like tea”" in out


def test_scrub_ignores_the_subjects_possessive_name():
    # Found while writing these tests: "ana's" used to be a word of its own.
    out = scrub("Ana: “my cat is called Rex” · “I like green tea”", ["Ana's cat is called Rex"], "Ana")
    assert out == "Ana: “I like green tea”"


# ---------------------------------------------------------------- someone else's sentences about a person

def test_names_person_by_any_word_of_any_name():
    assert names_person("Ana told me she moved", ["Ana Maria"])
    assert names_person("Maria's new flat", ["Ana Maria", "Zed"])
    assert not names_person("Bo moved to Porto", ["Ana Maria"])
    assert not names_person("Anabel moved", ["Ana"])  # whole words only
    assert names_person("I met the best today", ["The Best"]) and not names_person("the best day", ["The Bestest"])


def test_scrub_about_a_person_keeps_sentences_that_do_not_name_them():
    text = "Bo: “Ana told me her balcony beehive gave honey.” · “My uncle keeps a balcony beehive.”"
    out = scrub(text, ["balcony beehive"], "Ana", about=["Ana"])
    assert out == "Bo: “My uncle keeps a balcony beehive.”"
    assert scrub(text, ["balcony beehive"], "Ana") == ""  # without `about`: every sentence stating it
