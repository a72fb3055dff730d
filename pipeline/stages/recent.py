"""The past week and the recent part of a context without a model when they fit (issue 14, item 3).

Budgets ([summary] in config/default.toml, characters):

- the recent part of a context (today, then the past week) gets `context_chars`;
- a historical row (one partition's past week of one user) may pass its dated daily summaries
  through whole when they fit `week_room`: what a context leaves for the past week after one
  partition's day 1 (`context_chars - daily_chars` less the labels, never less than
  `historical_chars`). Beyond it the model condenses them to about `historical_chars`.

When the render fits, it is the text: dated lines (`render_week`), and "Today: …" / "Past week: …"
(`render_recent`), deterministic, no summarizer call, identified in input hashes by `RENDER`
instead of the summarizer's fingerprint (a model or prompt change leaves a render alone). Only
what exceeds its budget is sent to the summarizer.

A same-day hourly refresh re-merges a context that needs the model only when its inputs changed
materially (`keeps_stored`, the rule is in ARCHITECTURE.md, "Merge without a model when it fits").
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from typing import Iterable, Mapping

from ..summarize.text import content_tokens, shorten

RENDER = "render-1"  # in the input hash of a rendered historical row or recent part
RENDER_CUT = "render-cut-1"  # a same-day refresh's render cut to fit (never taken for a model's merge)
# A same-day refresh re-merges once this share of today's distinct content words is new since the
# stored recent part was made (a quarter: a day summary of ~300 characters has 25-40 such words,
# so about one new sentence's worth).
REMERGE_NOVEL_SHARE = 0.25
_WEEK_LABEL = re.compile(r"^Past week[^:\n]{0,40}:\s*")


def week_room(lengths) -> int:
    """The characters a historical row may pass through whole: a context of one partition whose
    day 1 is within `daily_chars` then renders within `context_chars` (labels included)."""
    labels = len(render_recent(["x"], ["Past week: y"])) - len("x") - len("Past week: y")  # "Today: ", a newline
    return max(lengths.historical_chars, lengths.context_chars - lengths.daily_chars - labels)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def render_week(dailies: Iterable[tuple[dt.date, str]]) -> str:
    """"Past week: <date>: <daily>" one line a day, newest first (the day's own absolute date:
    the text stays true on any later day 1, as the historical input hash requires)."""
    days = sorted(dailies, key=lambda d: d[0], reverse=True)
    lines = [f"{day.isoformat()}: {_one_line(text)}" for day, text in days if _one_line(text)]
    if not lines:
        return "Past week: active on " + ", ".join(day.isoformat() for day, _t in days)
    return "Past week: " + "\n".join(lines)


def render_recent(day1: Iterable[str], weeks: Iterable[str]) -> str:
    """Today's summaries (one line a source partition, the scope's own first), then the past
    week's texts, each under one label (a historical text's own "Past week…:" label is dropped)."""
    today = [line for text in day1 if (line := _one_line(text))]
    week = [_WEEK_LABEL.sub("", text.strip(), count=1) for text in weeks if text.strip()]
    parts = (["Today: " + "\n".join(today)] if today else []) + (["Past week: " + "\n".join(week)] if week else [])
    return "\n".join(parts)


_SHORTEST_CUT = 24  # characters: a text cut shorter than this says nothing, it is left out


def _common_cut(texts: list[str], fits) -> list[str]:
    """`texts` with the longest cut (at a word, "…") to one common length, the largest for which
    `fits(texts)` holds; all left out when that is under _SHORTEST_CUT."""
    if fits(texts):
        return texts
    lo, hi = 0, max((len(t) for t in texts), default=0)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits([shorten(t, mid) for t in texts]):
            lo = mid
        else:
            hi = mid - 1
    return [shorten(t, lo) for t in texts] if lo >= _SHORTEST_CUT else []


def render_recent_within(day1: list[str], weeks: list[str], limit: int) -> str:
    """`render_recent` within `limit` characters without a model: the past week's texts are cut
    first (to one common length, each at a word, newest lines first in a rendered week), then, if
    today alone is too long, today's. What a same-day refresh shows between the model's merges."""
    day1 = [_one_line(t) for t in day1 if t.strip()]
    weeks = [w for w in weeks if w.strip()]
    weeks = _common_cut(weeks, lambda ws: len(render_recent(day1, ws)) <= limit)
    if len(render_recent(day1, weeks)) > limit:
        day1 = _common_cut(day1, lambda ts: len(render_recent(ts, [])) <= limit)
    return render_recent(day1, weeks)


def word_marks(text: str) -> list[str]:
    """The distinct content words of a text as 16-bit marks (4 hex digits), sorted: enough to
    tell new words from known ones (a new word is taken for a known one with odds of about
    1 in 1,300 against a day's ~50 marks), too coarse to read the words back."""
    return sorted({hashlib.blake2s(w.encode(), digest_size=2).hexdigest() for w in content_tokens(text)})


def novel_share(day1: str, basis: Iterable[str]) -> float:
    """The share of `day1`'s distinct content words whose mark is not in `basis`."""
    marks = word_marks(day1)
    if not marks:
        return 0.0
    known = set(basis)
    return sum(1 for m in marks if m not in known) / len(marks)


def keeps_stored(stored: Mapping | None, *, as_of: dt.date, terms: str, day1_rows: list[dict],
                 folds: Mapping[tuple[str, dt.date], str], day1: str) -> bool:
    """In a same-day hourly refresh, may the stored recent part stand for inputs that no longer
    fit (so would need a model call)? Only when the change is growth of day 1 and small:

    - the stored row is as of this day 1 and has a recent part;
    - the same name, merge fingerprint, forgotten facts and past week (`terms`);
    - the same source partitions with a day-1 summary, and each changed day-1 summary was
      changed in this run by a fold of the very row the stored context saw (`folds`: partition-day
      -> the input hash folded from). A day recomputed in full (a deleted or edited message, an
      exclusion, a crash after the fold) is not growth;
    - fewer than REMERGE_NOVEL_SHARE of today's content words are new since the recent part was
      made (its `day1_words` marks, else the words of the stored recent part itself)."""
    if stored is None or stored["as_of_day"] != as_of or not stored.get("recent"):
        return False
    inputs = stored.get("inputs") or {}
    if inputs.get("terms") != terms:
        return False
    seen = {p: h for p, _d, h in inputs.get("day1", ())}
    if set(seen) != {r["partition"] for r in day1_rows}:
        return False
    for r in day1_rows:
        if r["input_hash"] != seen[r["partition"]] and folds.get((r["partition"], r["day"])) != seen[r["partition"]]:
            return False
    basis = inputs.get("day1_words")
    return novel_share(day1, basis if basis is not None else word_marks(stored["recent"])) < REMERGE_NOVEL_SHARE
