"""A forget scrubs a profile's facts line by line (pipeline/summarize/text.py `scrub`): a section
whose every fact went loses its heading too — "## Preferences" left alone would still say that
something was there — while sections with facts left, and the title over them, stay. The
profile is rendered by the real template (prompts/profile.md.j2)."""

from __future__ import annotations

import datetime as dt

from pipeline.memory.profile import render
from pipeline.summarize.text import scrub

DAY = dt.date(2026, 11, 2)


def _fact(i: int, text: str, category: str) -> dict:
    return {"id": i, "text": text, "category": category, "confidence": 0.9, "event_day": None, "first_seen": DAY,
            "last_seen": DAY, "partition": "guild:1", "level": "guild_public"}


PROFILE = render("Ana", [_fact(1, "Favourite game is Hades", "preference"),
                         _fact(2, "Has a cat named Miso", "other")], max_words=200, same_fact=0.85).text
CONTEXT = PROFILE + "\n\nToday, 2026-11-02: She said hi to the server."


def test_the_rendered_profile_has_the_sections_the_test_removes():
    assert "## Preferences" in PROFILE and "## Other" in PROFILE and PROFILE.startswith("# ")


def test_a_section_whose_only_fact_is_forgotten_loses_its_heading():
    left = scrub(CONTEXT, ["favourite game is Hades"], "Ana")
    assert "Hades" not in left and "## Preferences" not in left
    assert "## Other\n- Has a cat named Miso" in left and left.startswith("# ")
    assert left.endswith("Today, 2026-11-02: She said hi to the server.")


def test_a_profile_left_with_no_section_loses_its_title():
    left = scrub(CONTEXT, ["favourite game is Hades", "has a cat named Miso"], "Ana")
    assert left == "Today, 2026-11-02: She said hi to the server."


def test_a_scrub_that_removes_no_fact_keeps_every_heading():
    assert scrub(CONTEXT, ["said hi to the server"], "Ana") == PROFILE
    assert scrub(CONTEXT, ["plays the cello"], "Ana") == CONTEXT


def test_a_line_of_chat_that_looks_like_a_heading_is_not_a_section():
    """Only the profile's own headings: a summary may quote a chat line that starts with "#"."""
    summary = "Ana said her favourite game is Hades.\n# Big news: we won the cup"
    assert scrub(summary, ["favourite game is Hades"], "Ana") == "# Big news: we won the cup"
