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

Every line says when it is from (issue 15): "Today, 2026-11-07: …" (each partition's own day 1), a
rendered week's "2026-11-06: …", a condensed week's "2026-11-01–2026-11-06: …", a merge's lines
the days it covers (`dated`); and in a DM scope that reads other partitions, where: a label by
kind ("this DM", "server", "private channel", "other DM", numbered when there are several),
never a channel's or a guild's name (`where_labels`). Each line is made safe to paste into a
bot's prompt (pipeline/summarize/safe_text.py) before its length is measured.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections import Counter
from typing import Iterable, Mapping

from ..summarize.safe_text import clean, clean_line
from ..summarize.text import SHORTEST_CUT, common_cut, content_tokens, cut_text, shorten

# In the input hash of a rendered historical row or recent part (2: dated "Today, <day>" lines,
# partition labels in DM scopes, text made safe to paste).
RENDER = "render-2"
RENDER_CUT = "render-cut-2"  # a same-day refresh's render cut to fit (never taken for a model's merge)
# [summary] condense = "cut": a week or recent part over its budget cut to fit, no model (the
# budget it was cut to goes into the hash with it)
RENDER_FIT = "render-fit-1"
# A same-day refresh re-merges once this share of today's distinct content words is new since the
# stored recent part was made (a quarter: a day summary of ~300 characters has 25-40 such words,
# so about one new sentence's worth).
REMERGE_NOVEL_SHARE = 0.25
_WEEK_LABEL = re.compile(r"^Past week[^:\n]{0,40}:\s*")
_DATED = re.compile(r"^(\d{4}-\d{2}-\d{2}(?:–\d{4}-\d{2}-\d{2})?): ")  # a line's own "<day>: " or "<day>–<day>: "
_WHEN = re.compile(r"^(?:Today, |Past week: )?\d{4}-\d{2}-\d{2}")  # a line that says when it is from
_KINDS = {"guild": "server", "channel": "private channel", "dm": "other DM"}
Entry = tuple[dt.date, str, str]  # (the row's day 1, its text, where: a partition label or "")


def week_room(lengths) -> int:
    """The characters a historical row may pass through whole: a context of one partition whose
    day 1 is within `daily_chars` then renders within `context_chars` (labels included)."""
    labels = len(today_line(dt.date(2000, 1, 1), "x")) - len("x") + 1  # "Today, <day>: ", a newline
    return max(lengths.historical_chars, lengths.context_chars - lengths.daily_chars - labels)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _at(when: str, where: str) -> str:
    return f"{when} [{where}]" if where else when


def where_labels(scope: str, partitions: Iterable[str]) -> dict[str, str]:
    """Each partition's label in a context of `scope`: none outside DM scopes, nor in a DM context
    that reads only its own DM; otherwise "this DM" for the scope's own, and the kind of any other
    ("server", "private channel", "other DM", numbered in partition order when a context reads
    several of a kind). Never a name: a restricted channel's or another DM's is for its own
    audience, and the reader may have left it since."""
    parts = sorted(set(partitions))
    if not scope.startswith("dm:") or set(parts) <= {scope}:
        return {p: "" for p in parts}
    kind_of = {p: p.partition(":")[0] for p in parts if p != scope}
    many = Counter(kind_of.values())
    seen: Counter = Counter()
    labels = {scope: "this DM"} if scope in parts else {}
    for p, kind in kind_of.items():
        seen[kind] += 1
        labels[p] = _KINDS.get(kind, kind) + (f" {seen[kind]}" if many[kind] > 1 else "")
    return labels


def render_week(dailies: Iterable[tuple[dt.date, str]]) -> str:
    """"Past week: <date>: <daily>" one line a day, newest first (the day's own absolute date:
    the text stays true on any later day 1, as the historical input hash requires), each line
    made safe to paste (a line left with nothing is left out)."""
    days = sorted(dailies, key=lambda d: d[0], reverse=True)
    lines = [line for day, text in days if _one_line(text)
             and (line := clean_line(f"{day.isoformat()}: {_one_line(text)}").text)]
    if not lines:
        return "Past week: active on " + ", ".join(day.isoformat() for day, _t in days)
    return "Past week: " + "\n".join(lines)


def today_line(day: dt.date, text: str, where: str = "") -> str:
    """"Today, <day>[ [where]]: <summary>" on one line, made safe to paste ("" when nothing is left)."""
    return clean_line(f"{_at('Today, ' + day.isoformat(), where)}: {_one_line(text)}").text if text.strip() else ""


def week_lines(day1: dt.date, text: str, where: str = "") -> str:
    """A historical row's text as a context shows it: a rendered week's dated lines (each with
    `where`), or a condensed week on one line under the days it covers, "<day 7>–<day 2>: …";
    its own "Past week…:" label dropped, every line made safe to paste."""
    body = _WEEK_LABEL.sub("", text.strip(), count=1)
    lines = [ln for ln in body.split("\n") if ln.strip()]
    if lines and all(_DATED.match(ln) for ln in lines):
        lines = [_DATED.sub(lambda m: _at(m.group(1), where) + ": ", ln, count=1) for ln in lines]
    elif lines:
        covered = f"{(day1 - dt.timedelta(days=6)).isoformat()}–{(day1 - dt.timedelta(days=1)).isoformat()}"
        lines = [f"{_at(covered, where)}: {_one_line(body)}"]
    return "\n".join(made for ln in lines if (made := clean_line(ln).text))


def recent_parts(day1: Iterable[Entry], weeks: Iterable[Entry]) -> tuple[list[str], list[str]]:
    """Today's lines (one a source partition, the scope's own first) and the past week's texts,
    labelled and made safe: what a render shows and a merge is given."""
    today = [line for day, text, where in day1 if (line := today_line(day, text, where))]
    week = [block for day, text, where in weeks if (block := week_lines(day, text, where))]
    return today, week


def join_recent(today: list[str], week: list[str]) -> str:
    """Today's lines, then the past week's under one "Past week: " label."""
    return "\n".join(today + (["Past week: " + "\n".join(week)] if week else []))


def render_recent(day1: Iterable[Entry], weeks: Iterable[Entry]) -> str:
    """The recent part of a context without a model: `join_recent` of `recent_parts`."""
    return join_recent(*recent_parts(day1, weeks))


def dated(text: str, first: dt.date, last: dt.date, where: str = "") -> str:
    """A summarizer's merge of today and the past week with every line saying when: a line that
    starts with its day is kept; the others, joined into one line, are labelled with the days
    the merge covers, "<first>–<last>[ [where]]: …". Idempotent."""
    out: list[str] = []
    loose: list[str] = []
    label = _at(f"{first.isoformat()}–{last.isoformat()}", where) + ": "

    def flush() -> None:
        if loose:
            out.append(label + " ".join(loose))
            loose.clear()
    for line in (ln.strip() for ln in text.split("\n")):
        if _WHEN.match(line):
            flush()
            out.append(line)
        elif line:
            loose.append(_one_line(line))
    flush()
    return "\n".join(out)


def _common_cut(texts: list[str], fits, cut=shorten) -> list[str]:
    """`texts` cut (at a word, "…") to the longest common length that `fits`; all left out when
    that is under SHORTEST_CUT characters (a text cut shorter says nothing)."""
    return common_cut(texts, fits, cut, SHORTEST_CUT) or []


def render_week_within(dailies: Iterable[tuple[dt.date, str]], limit: int) -> str:
    """`render_week` within `limit` characters without a model ([summary] condense = "cut"):
    every day keeps a line, each day's summary cut to one common length (at a sentence end when
    one is near, else at a word), so a busy week shows the lead of each day rather than its newest
    days whole; when even that leaves too little of each, the oldest days go first."""
    days = sorted(((day, _one_line(text)) for day, text in dailies), key=lambda d: d[0], reverse=True)
    whole = render_week(days)
    if len(whole) <= limit:
        return whole
    while days:
        texts = _common_cut([t for _d, t in days], lambda ts: len(render_week(zip([d for d, _t in days], ts))) <= limit,
                            cut=cut_text)
        if texts:
            return render_week(zip([d for d, _t in days], texts))
        days = days[:-1]  # the oldest day goes
    return shorten(whole, limit)


def render_recent_within(today: list[str], week: list[str], limit: int) -> str:
    """`join_recent` of `recent_parts` within `limit` characters without a model: the past week's
    texts are cut first (to one common length, each at a word, newest lines first in a rendered
    week), then, if today alone is too long, today's lines. What a same-day refresh shows between
    the model's merges (made safe again: a cut may end anywhere)."""
    week = _common_cut(week, lambda ws: len(join_recent(today, ws)) <= limit)
    if len(join_recent(today, week)) > limit:
        today = _common_cut(today, lambda ts: len(join_recent(ts, [])) <= limit)
    return clean(join_recent(today, week)).text


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
