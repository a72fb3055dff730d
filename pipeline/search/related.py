"""Search hits as a short block after a stored context ("Related memories:"), within a token
budget — `get_context(..., query=...)` in pipeline/read.py. Pure text work: no database."""

from __future__ import annotations

import re
from typing import Iterable

from ..llm.client import estimate_tokens
from ..summarize.safe_text import clean
from .rank import Hit
from .terms import WORD

HEADER = "Related memories:"
SHINGLE = 3  # words per shingle
ALREADY_THERE = 0.8  # share of a hit's shingles the text holds already for the hit to add nothing


_LABEL = re.compile(r"^\s*[^\W\d_][^:\n]{0,30}:\s")  # "Ana: …", "Past week: …"


def _words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def _hit_words(text: str) -> list[str]:
    """A hit's words without its leading label (a speaker, "Past week"): the label is how the
    summary was written, not what it says."""
    return _words(_LABEL.sub("", text, count=1))


def _shingles(words: list[str]) -> set[tuple[str, ...]]:
    """Runs of SHINGLE words (a shorter text: itself, whole)."""
    if len(words) <= SHINGLE:
        return {tuple(words)} if words else set()
    return {tuple(words[i:i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def _held(hit_words: list[str], text_shingles: set, text_words: list[str]) -> bool:
    """Does the text say this already? Most of the hit's word runs are in it — punctuation,
    quoting and a speaker's label around them aside ('Ana: "I have a cat named Miso"' is held
    by a context quoting "I have a cat named Miso"). A hit of SHINGLE words or fewer: held when
    its words appear in the text in a row."""
    if not hit_words:
        return True
    if len(hit_words) <= SHINGLE:
        n = len(hit_words)
        return any(text_words[i:i + n] == hit_words for i in range(len(text_words) - n + 1))
    own = _shingles(hit_words)
    return len(own & text_shingles) >= ALREADY_THERE * len(own)


def hit_line(hit: Hit) -> str:
    """One hit on one line: `- <text> (<day>)` (a summary's line breaks become spaces), made safe
    to paste like every context line (summarize/safe_text.py: a stored summary may hold a model's
    or a member's instruction-like sentence); "" when nothing of it is."""
    text = clean(" ".join(hit.text.split())).text
    return f"- {text} ({hit.day.isoformat()})" if text else ""


def add_related(stored: str | None, hits: Iterable[Hit], budget_tokens: int,
                max_hits: int | None = None) -> tuple[str, tuple[Hit, ...]]:
    """`stored` (the context text, never cut; None: there is none) followed by the hits, best
    first, that it does not hold already (nor an earlier hit; `_held`), each added only while the whole
    text's estimate_tokens stays within `budget_tokens` — a hit too long to fit is skipped, a
    shorter one after it may still fit; at most `max_hits` of them. Returns the text and the hits it holds (none: `stored`
    as it was, or "" when there was none)."""
    base = stored or ""
    lead = (base + "\n\n" + HEADER) if base else HEADER
    seen_words = _words(base)
    seen = _shingles(seen_words)
    lines: list[str] = []
    kept: list[Hit] = []
    for hit in hits:
        if max_hits is not None and len(kept) >= max_hits:
            break
        words = _hit_words(hit.text)
        if _held(words, seen, seen_words):
            continue
        line = hit_line(hit)
        if not line:
            continue
        if estimate_tokens("\n".join([lead, *lines, line])) > budget_tokens:
            continue
        lines.append(line)
        kept.append(hit)
        seen_words += words
        seen |= _shingles(words)
    if not kept:
        return base, ()
    return "\n".join([lead, *lines]), tuple(kept)
