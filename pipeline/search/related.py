"""Search hits as a short block after a stored context ("Related memories:"), within a token
budget — `get_context(..., query=...)` in pipeline/read.py. Pure text work: no database."""

from __future__ import annotations

from typing import Iterable

from ..llm.client import estimate_tokens
from .rank import Hit

HEADER = "Related memories:"


def _plain(text: str) -> str:
    """Text compared for "already there": case and runs of whitespace do not matter."""
    return " ".join(text.casefold().split())


def hit_line(hit: Hit) -> str:
    """One hit on one line: `- <text> (<day>)` (a summary's line breaks become spaces)."""
    return f"- {' '.join(hit.text.split())} ({hit.day.isoformat()})"


def add_related(stored: str | None, hits: Iterable[Hit], budget_tokens: int) -> tuple[str, tuple[Hit, ...]]:
    """`stored` (the context text, never cut; None: there is none) followed by the hits, best
    first, that it does not hold already (nor an earlier hit), each added only while the whole
    text's estimate_tokens stays within `budget_tokens` — a hit too long to fit is skipped, a
    shorter one after it may still fit. Returns the text and the hits it holds (none: `stored`
    as it was, or "" when there was none)."""
    base = stored or ""
    lead = (base + "\n\n" + HEADER) if base else HEADER
    seen = _plain(base)
    lines: list[str] = []
    kept: list[Hit] = []
    for hit in hits:
        plain = _plain(hit.text)
        if not plain or plain in seen:
            continue
        line = hit_line(hit)
        if estimate_tokens("\n".join([lead, *lines, line])) > budget_tokens:
            continue
        lines.append(line)
        kept.append(hit)
        seen += "\n" + plain
    if not kept:
        return base, ()
    return "\n".join([lead, *lines]), tuple(kept)
