"""Sentence splitting, salience, and fact matching shared by the extractive summarizer and the
forget path. Deterministic: same input, same output, on every machine."""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Callable

STOPWORDS = frozenset("""
a about after again all also am an and any are as at be because been before being but by can
could did do does doing don't for from had has have having he her here hers him his how i i'm if
in into is it it's its just me more most my no not now of off on once only or other our out over
own same she so some such than that the their them then there these they this those through to
too under until up very was we were what when where which while who why will with would you your
yes yeah ok okay lol haha hey hi hello thanks thank oh um uh gonna wanna got get
""".split())

# The labels a context's lines start with (pipeline/stages/recent.py): when, and in a DM scope where.
_KNOWN_LABELS = re.compile(r"^((?:(?:Facts|Today(?:, \d{4}-\d{2}-\d{2})?|Past week(?: \([^)]*\))?|"
                           r"\d{4}-\d{2}-\d{2}(?:–\d{4}-\d{2}-\d{2})?)(?: \[[^\]\n]{1,40}\])?:\s+)+)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+|\s+·\s+")
WORD = re.compile(r"[\w']+", re.UNICODE)  # a word as `tokens` finds it
_SPACE = re.compile(r"\s+")


def clean(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def sentences(text: str) -> list[str]:
    out = []
    for part in _SENTENCE_END.split(text):
        part = clean(part).strip("“”\"")
        part = clean(part)
        if part:
            out.append(part)
    return out


def tokens(text: str) -> list[str]:
    """Lower-case words; a possessive "'s" is dropped so "Ana's" is the word "ana"."""
    if text.isascii():  # lower-casing ASCII moves no word boundary: the whole text at once
        lowered = text.lower()
        # no word can end in one: no pass over the words (none of the large bench corpus's texts
        # has an "'s"; chat's "it's" and "Ana's" take the pass, as before)
        if "'s" not in lowered:
            return WORD.findall(lowered)
        return [t[:-2] if t.endswith("'s") and len(t) > 2 else t for t in WORD.findall(lowered)]
    out = []
    for t in WORD.findall(text):
        t = t.lower().replace("’", "'")
        out.append(t[:-2] if t.endswith("'s") and len(t) > 2 else t)
    return out


def plain(text: str) -> str:
    """NFKC, format characters and accents removed, curly apostrophes straightened (plain ASCII
    already is so)."""
    if text.isascii():
        return text
    text = unicodedata.normalize("NFKC", text)
    text = "".join(c for c in unicodedata.normalize("NFKD", text)
                   if unicodedata.category(c) not in ("Cf", "Mn"))
    return text.replace("’", "'").replace("‘", "'")


def word_forms(word: str) -> set[str]:
    """The word and its light suffix stems (plural, -'s, -es, -ies/-ied, -ed, -ing, with and
    without a final e or a doubled consonant): "plays", "played", "playing" meet at "play";
    "uses", "used", "using" at "use"; "studies", "studied" at "study"; "running" reaches "run".
    Two words match when their forms meet. Not a linguist's stemmer: loose on purpose, and the
    grounding threshold is a share of words, not a proof."""
    w = word.lower()
    out = {w}

    def add(base: str, *ends: str, guessed: bool = True) -> None:
        # a guessed stem (a removed -ing, -ed, -es) that is a stopword is no stem: "thing" is
        # not "the", "shed" not "she"; a plain plural keeps its word ("owns" is "own")
        if len(base) < 2:
            return
        forms = {base + e for e in ends}
        if len(base) > 2 and base[-1] == base[-2] and base[-1] not in "aeiouy":
            forms.add(base[:-1])
        out.update(f for f in forms if not (guessed and f in STOPWORDS))

    if w.endswith("'s"):
        add(w[:-2], "", guessed=False)
    if w.endswith(("ies", "ied")):
        add(w[:-3], "y")
    if w.endswith("ing"):
        add(w[:-3], "", "e")
    if w.endswith("ed"):
        add(w[:-2], "", "e")
    if w.endswith("es"):
        add(w[:-2], "")
    if w.endswith("s") and not w.endswith("ss"):
        add(w[:-1], "", guessed=False)
    return out


def content_tokens(text: str) -> list[str]:
    return [t for t in tokens(text) if t not in STOPWORDS and (len(t) > 2 or t.isdigit())]


def salience(sentence: str) -> float:
    """Rough information content: distinct content words, plus a bonus for what a memory wants
    (self-disclosure, numbers, names), minus chatter."""
    words = content_tokens(sentence)
    if not words:
        return 0.0
    score = len(set(words)) * 1.0
    lowered = sentence.lower()
    if re.search(r"\b(i'm|i am|i've|my|i will|i'll|i was)\b", lowered):
        score += 2.0
    if re.search(r"\d", sentence):
        score += 1.0
    score += 0.5 * sum(1 for w in sentence.split()[1:] if w[:1].isupper())
    if len(words) < 3:
        score *= 0.5
    return score


def shorten(sentence: str, limit: int) -> str:
    if len(sentence) <= limit:
        return sentence
    cut = sentence[: max(limit - 1, 1)].rsplit(" ", 1)[0]
    return (cut or sentence[: limit - 1]) + "…"


_CUT_AT = re.compile(r"[.!?…](?=\s)")  # a sentence end to cut after


def cut_text(text: str, limit: int) -> str:
    """`text` within `limit` characters: whole when it fits, else up to its last sentence end in
    the second half of the limit (a summary leads with what matters), else cut at a word ("…")."""
    if len(text) <= limit:
        return text
    ends = [m.end() for m in _CUT_AT.finditer(text, 0, limit)]
    if ends and ends[-1] >= limit // 2:
        return text[:ends[-1]]
    return shorten(text, limit)


SHORTEST_CUT = 24  # characters: a piece cut shorter than this says nothing


def common_cut(texts: list[str], fits: Callable[[list[str]], bool], cut: Callable[[str, int], str] = shorten,
               shortest: int = 0) -> list[str] | None:
    """`texts` unchanged when `fits(texts)`, else each cut by `cut` to one common length, the
    largest for which `fits` holds (short texts stay whole); None when that length is under
    `shortest`. The one binary search behind every "cut to fit" (budget.fit_texts,
    stages/recent.py, join_within)."""
    if not texts or fits(texts):
        return texts
    lo, hi = 0, max(len(t) for t in texts)
    while lo < hi:  # the largest length that fits
        mid = (lo + hi + 1) // 2
        if fits([cut(t, mid) for t in texts]):
            lo = mid
        else:
            hi = mid - 1
    return [cut(t, lo) for t in texts] if lo >= shortest else None


def join_within(texts: list[str], limit: int, sep: str = "\n") -> str:
    """`texts` (a day's partial summaries in time order) joined by `sep` within `limit`
    characters: each cut (`cut_text`) to the largest common length that fits, so every piece keeps
    its lead; whole when they fit. When that length would be under SHORTEST_CUT, the oldest pieces
    are left out until it is not (the newest stays). One piece a line: a later fold splits the
    text into its pieces again and cuts each (never the whole text, which would drop the middle)."""
    texts = [t.strip() for t in texts if t.strip()]
    if len(sep.join(texts)) <= limit:
        return sep.join(texts)
    while len(texts) > 1 and (limit - (len(texts) - 1) * len(sep)) // len(texts) < SHORTEST_CUT:
        texts = texts[1:]
    joined = sep.join(common_cut(texts, lambda ts: len(sep.join(ts)) <= limit, cut_text))
    return joined if len(joined) <= limit else shorten(joined, limit)


def newest_within(lines: list[str], budget: int) -> str:
    """The newest (last) non-blank lines whose joined text fits `budget`: the oldest go first.
    The newest line is kept even alone, shortened to the budget."""
    kept: list[str] = []
    used = -1  # no newline before the first line
    for line in reversed([ln.strip() for ln in lines if ln.strip()]):
        if kept and used + 1 + len(line) > budget:
            break
        kept.append(line if kept else shorten(line, budget))
        used += 1 + len(kept[-1])
    return "\n".join(reversed(kept))


def pick(candidates: list[str], budget: int, *, sep_len: int = 3, min_score: float = 0.0) -> list[int]:
    """Indices of the most salient candidates whose total length fits the budget, in input order."""
    ranked = sorted(range(len(candidates)), key=lambda i: (-salience(candidates[i]), i))
    chosen, used, seen = [], 0, set()
    for i in ranked:
        key = " ".join(content_tokens(candidates[i]))
        if key in seen or salience(candidates[i]) <= min_score:
            continue
        cost = len(candidates[i]) + (sep_len if chosen else 0)
        if used + cost > budget:
            continue
        chosen.append(i)
        seen.add(key)
        used += cost
    return sorted(chosen)


def mentions_fact(sentence: str, fact: str, subject: str = "") -> bool:
    """True when the sentence states the fact: every content word of the fact appears in the
    sentence as a whole word in one of its forms (`word_forms`: "lives" is "I live", "ban" never
    matches "band"), compared without case, accents or lookalike letters (`plain`), or the texts
    are equal. Words of the subject's own name are not required: "Ana is in CET" matches Ana's
    "I'm in CET". The fact is stored in the third person and the chat quoted in the first, and a
    user types it their own way: forgetting errs towards removing."""
    fact_words = _fact_words(fact, subject)
    if not fact_words:
        return False
    if clean(sentence).lower() == clean(fact).lower():
        return True
    said = set(tokens(plain(sentence)))
    if fact_words <= said:
        return True
    forms = {f for w in said for f in _forms(w)}
    return all(_forms(w) & forms for w in fact_words)


@functools.lru_cache(maxsize=4096)
def _fact_words(fact: str, subject: str) -> frozenset[str]:
    """The words `mentions_fact` looks for (a forgotten fact is matched against many texts)."""
    fact, subject = plain(fact), plain(subject)
    words = set(content_tokens(fact)) or set(tokens(fact))
    return frozenset(words - set(tokens(subject)) or words)


@functools.lru_cache(maxsize=1 << 16)
def _forms(word: str) -> frozenset[str]:
    return frozenset(word_forms(word))


def names_person(text: str | set[str], names) -> bool:
    """True when the text (or its set of tokens) names the person by any word of any of their
    names ("Ana" for "Ana Maria"); a name of stopwords only counts by all its words."""
    words = text if isinstance(text, set) else set(tokens(text))
    for name in names:
        own = set(tokens(name))
        significant = own - STOPWORDS
        if (significant and significant & words) or (own and not significant and own <= words):
            return True
    return False


def scrub(text: str, facts: list[str], subject: str = "", about=()) -> str:
    """Remove every sentence of `text` that states one of `facts`, keeping the rest's layout.
    `about`: the names of the person the facts are about, when the text is someone else's: a
    sentence goes only when it also names them ("Ana told me …" in Bo's summary)."""
    if not facts or not text:
        return text

    def states(piece: str) -> bool:
        return any(mentions_fact(piece, f, subject) for f in facts) and (not about or names_person(piece, about))
    lines = []
    removed = False
    for line in text.split("\n"):
        if not line.strip():  # layout (a profile's blank lines) is kept as it is
            lines.append(line)
            continue
        # A leading label ("Ana: ", "Today, 2026-11-07: ") is kept even when its first sentence goes.
        # Labels are the "Name: " prefixes our summaries put before quoted text and the when
        # (and where) labels of a context's lines (pipeline/stages/recent.py); a clause that
        # states a forgotten fact is never kept as a label.
        label_match = re.match(r"^((?:[^:“\n]{1,80}:\s+)+)(?=“)", line) or _KNOWN_LABELS.match(line)
        label = label_match.group(1) if label_match else ""
        if label and states(label):
            label, removed = "", True
        line = line[len(label):]
        parts = re.split(r"((?<=[.!?])\s+|\s+·\s+)", line)
        kept: list[str] = []
        for i in range(0, len(parts), 2):
            piece = parts[i]
            if piece and states(piece):
                removed = True
                continue
            if kept and i > 0:
                kept.append(parts[i - 1])
            kept.append(piece)
        new = "".join(kept).strip()
        new = re.sub(r"^(·\s*)+|(\s*·)+$", "", new).strip()
        if new:
            lines.append(label + new)
    if not removed:
        return text
    return re.sub(r"\n{3,}", "\n\n", "\n".join(_without_emptied_sections(lines))).strip("\n")


@functools.lru_cache(maxsize=1)
def _profile_headings() -> tuple[re.Pattern, re.Pattern]:
    """A profile's title and section headings, as prompts/profile.md.j2 writes them (and no
    other line: a summary may quote a chat line that starts with "#")."""
    from ..memory.profile import SECTIONS  # (imported late: memory imports this module)

    titles = "|".join(re.escape(title) for _category, title in SECTIONS)
    return re.compile(r"^# .+: long-term memory$"), re.compile(rf"^## (?:{titles})$")


def _without_emptied_sections(lines: list[str]) -> list[str]:
    """The lines without a profile section heading left with nothing under it — a section's lines
    follow its heading with no blank line between (prompts/profile.md.j2) — so that a profile's
    "## Preferences" whose one fact was forgotten does not stay, saying that something was there;
    the profile's title stays while one of its sections does."""
    title, section = _profile_headings()

    def level(i: int) -> int:
        line = lines[i].rstrip() if i < len(lines) else ""
        return 1 if title.match(line) else 2 if section.match(line) else 0

    def filled(i: int) -> bool:  # a line of text right below the heading
        return i + 1 < len(lines) and bool(lines[i + 1].strip()) and not level(i + 1)

    def kept(i: int) -> bool:
        if not level(i) or filled(i):
            return True
        for j in range(i + 1, len(lines)):  # a title: any filled section of its own below it
            if level(j) and level(j) <= level(i):
                return False
            if level(j) and filled(j):
                return True
        return False

    return [line for i, line in enumerate(lines) if kept(i)]
