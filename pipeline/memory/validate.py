"""The rules a proposed fact (`Candidate`) must pass before it is stored. Pure: no storage, no
clock, no model; the daily stage calls `rejection` for every candidate and counts the reasons.

Rules, in order (the first that fails names the rejection):

- `not_a_speaker`: the fact is about someone who did not speak in the partition-day.
- `low_confidence`: below `[memory] min_confidence`; NaN, infinities and non-numbers too.
- `unsafe`: `safety.refusal_reason` refuses the text (an instruction to the bot, or a secret).
- `raw_id`: the text carries a platform id, Discord markup or one of our prompt handles.
- `ungrounded`: no source, a source that is not a position of `pd.lines`, a cited line that is
  neither the subject's own message nor a reply to the subject, or too few of the fact's content
  words in the cited messages (`grounding` < `[memory] min_grounding`).

`forgotten` (the fact matches something the user asked to forget) is decided by the stage; it is
listed in REASONS so every `facts_rejected_<reason>` counter is named here.
"""

from __future__ import annotations

import functools
import math
import re

from pipeline.memory.model import Candidate
from pipeline.safety import reads_unsafe
from pipeline.summarize.base import ChatLine, PartitionDay
# plain and word_forms live with the forget path's matching (summarize/text.py), which uses them too
from pipeline.summarize.text import content_tokens, plain, tokens, word_forms  # noqa: F401  (word_forms: re-exported)

REASONS = ("low_confidence", "ungrounded", "unsafe", "raw_id", "not_a_speaker", "forgotten")
MAX_FACT_CHARS = 300

_SPACE = re.compile(r"\s+")


# ------------------------------------------------------------------ normalising a fact

# What may follow the subject's name at the start of a fact: "Ana ", "Ana's ", "Ana: ".
_AFTER_NAME = re.compile(r"(?:['’]s\b)?(?:\s*[:,\-–—]\s*|\s+)")


@functools.lru_cache(maxsize=8192)
def _name_forms(subject_name: str) -> tuple[str, ...]:
    """The subject's name, whole and by its first word, lower-cased."""
    name = _SPACE.sub(" ", subject_name).strip()
    if not name:
        return ()
    first = name.split(" ")[0]
    return (name.lower(),) if first == name else (name.lower(), first.lower())


def _after_leading_name(text: str, subject_name: str) -> str | None:
    """`text` without the subject's name (whole, or its first word) at its start, as "Ana ",
    "Ana's " or "Ana: " ("Ana is …" keeps its verb); None when it does not start so. Compared
    without a pattern per name: compiling one per subject cost more than the whole check."""
    for form in _name_forms(subject_name):
        head = text[:len(form)]
        if len(head) == len(form) and (head == form or head.lower() == form):
            m = _AFTER_NAME.match(text, len(form))
            if m:
                return text[m.end():]
    return None


def normalise_fact(text: str, subject_name: str) -> str:
    """Whitespace collapsed, a leading subject name ("Ana ", "Ana's ", "Ana is" -> "Is")
    removed, the first letter capitalised (unless the first word is cased like "iPhone"), a
    trailing period dropped; bounded to MAX_FACT_CHARS by cutting at a word."""
    out = _SPACE.sub(" ", text or "").strip()
    rest = _after_leading_name(out, subject_name)
    if rest is not None and rest.strip():
        out = rest.strip()
    first = out.split(" ", 1)[0]
    if first[:1].islower() and first[1:] == first[1:].lower():
        out = out[:1].upper() + out[1:]
    if len(out) > MAX_FACT_CHARS:
        cut = out[:MAX_FACT_CHARS]
        if out[MAX_FACT_CHARS] != " " and " " in cut:
            cut = cut.rsplit(" ", 1)[0]
        out = cut.rstrip(" ,;:-–—")
    return re.sub(r"\s*\.+$", "", out).strip()


# ------------------------------------------------------------------ grounding

def grounding(text: str, cited: list[str], subject_name: str = "") -> float:
    """Share of the fact's distinct content words (text.content_tokens, minus the words of the
    subject's name) found among the words of the cited messages, compared by `word_forms`.
    0.0 when the fact has no content word left: there is nothing to ground."""
    wanted = wanted_words(text, subject_name)
    if not wanted:
        return 0.0
    # A word the cited lines hold as it is is found (its forms and theirs both hold it): the
    # lines' forms, most of the cost, are made only for a word they do not hold as it is.
    said = frozenset().union(*map(line_words, cited))
    missing = [w for w in wanted if w not in said]
    if not missing:
        return 1.0
    found = frozenset().union(*map(line_forms, cited))
    return (len(wanted) - len(missing) + sum(1 for w in missing if forms_of(w) & found)) / len(wanted)


# Pure, so cached: a day's lines are cited by many candidate facts, and chat repeats its words.
@functools.lru_cache(maxsize=4096)
def line_words(text: str) -> frozenset[str]:
    """The words of a chat line, as `grounding` reads them."""
    return frozenset(tokens(plain(text)))


@functools.lru_cache(maxsize=4096)
def line_forms(text: str) -> frozenset[str]:
    """Every `word_forms` of a chat line's words."""
    return frozenset(f for word in line_words(text) for f in word_forms(word))


@functools.lru_cache(maxsize=16384)
def wanted_words(text: str, subject_name: str) -> frozenset[str]:
    """A fact's content words that `grounding` looks for: without the subject's name."""
    return frozenset(set(content_tokens(plain(text))) - set(tokens(plain(subject_name))))


@functools.lru_cache(maxsize=16384)
def forms_of(word: str) -> frozenset[str]:
    return frozenset(word_forms(word))


# ------------------------------------------------------------------ raw ids

# Any platform id is ≥ 15 digits (Discord snowflakes have 17–19; so does a phone number in full
# E.164 form, 15, which is no fact for a bot either). A disguise spaces, dots or dashes the
# digits ("1234 5678-9012.3456"); NFKC turns fullwidth, mathematical, circled and superscript
# digits into ASCII ones, `\d` also matches other scripts' digits, format characters are dropped.
_SEP = r"[\s.\-_/\\|,:·•'()\[\]]{0,3}"
_DIGIT_RUN = re.compile(rf"\d(?:{_SEP}\d){{14,}}")
# Discord markup: user, nickname and role mentions, channels, custom emoji, timestamps, slash
# commands (<@1>, <@!1>, <@&1>, <#1>, <:name:1>, <a:name:1>, <t:1:R>, </cmd:1>), also escaped.
_MARKUP = re.compile(r"(?:<|&lt;)\s*(?:@[!&]?|#|a?:[\w~]{1,64}:|t:|/[^<>:]{1,64}:)\s*\d+")
# Our prompt handles: speakers are "p1", "p2" …, messages "m1", "m2" … Whole words, any case
# (normalise_fact capitalises "p3 likes" to "P3 likes"). Not handles: Apple's M1–M4 chips and
# M.2 drives ("M2 MacBook Air", "M2 SSD"), the p5.js library.
_HANDLE = re.compile(r"(?<![^\W_])(?:p\d{1,4}(?!\.?js\b)|m\d{1,4}(?!\s*(?:pro|max|ultra|chips?|macs?|macbook|"
                     r"air|imac|ipad|mini|ssds?|nvme|slots?|drives?)\b))(?![^\W_])", re.IGNORECASE)
# Cyrillic and Greek letters that look like p and m ("р3"); folded for the handle check only.
_HANDLE_LOOKALIKES = str.maketrans({"р": "p", "Р": "p", "ρ": "p", "Ρ": "p", "м": "m", "М": "m", "Μ": "m"})


def raw_id_kind(text: str) -> str | None:
    """Which kind of raw id the text carries ("a long number", "Discord markup", "a prompt
    handle"), or None."""
    flat = plain(text)
    if _DIGIT_RUN.search(flat):
        return "a long number"
    if _MARKUP.search(flat):
        return "Discord markup"
    if _HANDLE.search(flat.translate(_HANDLE_LOOKALIKES)):
        return "a prompt handle"
    return None


# ------------------------------------------------------------------ the rules

def _valid_position(source, size: int) -> bool:
    # bool is an int; a negative position would silently index from the end
    return isinstance(source, int) and not isinstance(source, bool) and 0 <= source < size


def _about_subject(line: ChatLine, user_id: int) -> bool:
    return line.user_id == user_id or line.reply_to_user == user_id


def rejection(c: Candidate, pd: PartitionDay, *, subject_name: str, settings) -> str | None:
    """The first failing rule's reason (one of REASONS), else None. `settings` is
    MemorySettings (min_confidence, min_grounding)."""
    if c.user_id not in pd.speakers:
        return "not_a_speaker"
    try:
        confidence = float(c.confidence)
    except (TypeError, ValueError):
        return "low_confidence"
    if not math.isfinite(confidence) or not confidence >= settings.min_confidence:
        return "low_confidence"
    texts = {c.text or "", normalise_fact(c.text or "", subject_name)}
    if any(reads_unsafe(t) for t in texts):
        return "unsafe"
    if any(raw_id_kind(t) is not None for t in texts):
        return "raw_id"
    sources = c.sources or ()
    if not sources or not all(_valid_position(s, len(pd.lines)) for s in sources):
        return "ungrounded"
    cited = [pd.lines[s] for s in dict.fromkeys(sources)]
    if not all(_about_subject(line, c.user_id) for line in cited):
        return "ungrounded"
    if grounding(c.text or "", [line.text for line in cited], subject_name) < settings.min_grounding:
        return "ungrounded"
    return None
