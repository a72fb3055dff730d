"""Text a bot pastes into its own prompt (issue 15): every context passes here before it is
stored, and so does every summary text a context is rendered from.

- A sentence that reads as an instruction to the reading bot or carries a secret — the rule of
  `pipeline.safety.refusal_reason`, behind its fast screen `reads_unsafe` — is left out, with the
  quotation it is in: quoted chat is never cut inside its quotation marks.
- Markup-like sequences are made plain (`safety.defang`): no tag, code fence or role marker can
  open or close a section of the prompt the text is pasted into.
- A line keeps its shape: its markdown prefix ("# ", "- ") and its leading labels
  ("Today, 2026-11-07 [server]: ", "Ana: ") stay in front of what they label. A line whose label
  reads as an instruction is left out whole, and so is one that still reads as one once its
  sentences have been checked one by one (a pattern across two quotations).

`clean` is idempotent, so a stage may apply it at every step (a summary, its render, the whole
context) and a cleaned text never changes again.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from ..safety import defang, may_refuse, reads_unsafe
from .text import clean as single_spaced
from .text import sentences

# In the input hash of every context (pipeline/stages/merge.py): a change to these rules makes
# each context again once, without a model call where only this changed.
SAFE_TEXT = "safe-text-1"
_PREFIX = re.compile(r"[ \t]*(?:#{1,6}[ \t]+|[-*][ \t]+)?")
# One label: up to 80 characters before ": ", no quotation mark and no sentence end inside.
_LABEL = re.compile(r"(?:[^:“”\n.!?]|[.!?](?!\s)){1,80}:[ \t]+")
# Where a line's body may be cut: a quotation mark (tracked), a sentence end, our " · " separator.
_BOUNDARY = re.compile(r"[“”]|(?:(?<=[.!?])|(?<=[.!?][”\"]))[ \t]+|[ \t]+·[ \t]+")
_ODD_SPACE = re.compile(r"\s\s|[^\S ]")  # what text.clean would change inside a line
_QUOTED = re.compile(r"“([^“”]*)”|\"([^\"]*)\"")
# What the cuts of a line could leave out: white space that is not a space or tab (a piece of
# it alone is blank; at the start of the text after the prefix and labels it is stripped, as
# neither swallows it), or our " · " (a line ending in one has a blank last piece, left out
# with its separator). A line the screen clears that has neither is kept as it is.
_MAY_BE_CUT = re.compile(r"[^\S \t]|·")


class Cleaned(NamedTuple):
    text: str
    dropped: int  # sentences (and whole lines) left out


def piece_unsafe(piece: str, *, screen: bool = True) -> bool:
    """Does this sentence (or quotation) read as an instruction or carry a secret: itself, without
    its quotation marks, or any sentence quoted inside it? (`screen`: see `_screened_clear`.)"""
    if screen and _screened_clear(piece):
        return False
    core = piece.strip().strip("“”\"' ")
    if piece.strip() == f"“{core}”" and "“" not in core and "”" not in core:  # one quotation: its words
        return any(reads_unsafe(f) for f in {core, *sentences(core)} if f)
    forms = {piece, core, *sentences(core)}
    for m in _QUOTED.finditer(piece):
        inner = m.group(1) if m.group(1) is not None else m.group(2)
        forms.update((inner, *sentences(inner)))
    return any(reads_unsafe(f) for f in forms if f)


def _pieces(body: str) -> tuple[list[str], list[str]]:
    """The body's sentences and the separators between them, never cut inside a quotation (an
    unclosed one runs to the end of the line)."""
    parts, seps, depth, start = [], [], 0, 0
    for m in _BOUNDARY.finditer(body):
        token = m.group()
        if token == "“":
            depth += 1
        elif token == "”":
            depth = max(depth - 1, 0)
        elif depth == 0:
            parts.append(body[start:m.start()])
            seps.append(token)
            start = m.end()
    parts.append(body[start:])
    return parts, seps


def _screened_clear(line: str) -> bool:
    """Whether the screen (`safety.may_refuse`) clears every text `clean_line` would check in
    this line, from the line alone. Each of them — a label, a sentence, a quotation, with or
    without its quotation marks — is a piece of the line cut where the line has a space, a
    quotation mark or a sentence end (no word is cut), with its runs of white space made one
    space (text.clean) or left as they are. What the screen looks for only grows with the text
    around it (it reads letters alone, or literals that need the characters around them to be
    no word characters, which a cut there keeps), so a line that passes it, both as it is and
    with its white space made single spaces, has no piece that would not pass it: none is
    refused (`reads_unsafe` is the screen first), and the per-piece checks can be skipped. Most
    lines pass: a line of a rendered context took ~26 µs with those checks, ~17 µs without
    (timed over the 115,875 distinct lines a cold replay of a tenth of the large bench
    corpus cleaned). Holds while every pattern of `may_refuse` keeps to that rule (safety.py)."""
    if may_refuse(line):
        return False
    # white space already single but at the ends: the single-spaced line is a piece of this one
    return not _ODD_SPACE.search(line) or not may_refuse(single_spaced(line))


@functools.lru_cache(maxsize=1 << 15)
def clean_line(line: str) -> Cleaned:
    """One line made safe to paste (its text "" when it is left out whole)."""
    return _clean_line(line, screen=True)


def _clean_line(line: str, *, screen: bool) -> Cleaned:
    """`screen`: skip the per-piece checks of a line `_screened_clear` clears (the same result:
    tests/unit/test_safe_text_screen.py compares the two on lines made to break it)."""
    if not line.strip():
        return Cleaned(line, 0)
    clear = screen and _screened_clear(line)
    if clear and not _MAY_BE_CUT.search(line):
        # Nothing is checked and no piece is blank, so the cuts below would join every piece
        # back as it was: the line less its trailing white space (the prefix and each label end
        # in all the spaces and tabs after them, and so does every cut). ~11 -> ~7 µs a line (the
        # large bench corpus's: 77,558 of 77,593 lines a cold replay cleaned took this way).
        return Cleaned(defang(line.rstrip()), 0)
    prefix = _PREFIX.match(line).group()
    rest = line[len(prefix):]
    labels = []
    while len(labels) < 4 and (m := _LABEL.match(rest)):
        labels.append(m.group())
        rest = rest[m.end():]
    if not clear and any(reads_unsafe(label.strip()) for label in labels):
        return Cleaned("", 1)
    parts, seps = _pieces(rest)
    kept: list[str] = []
    dropped = 0
    for i, part in enumerate(parts):
        if not part.strip():
            continue
        if not clear and piece_unsafe(part, screen=screen):
            dropped += 1
            continue
        if kept:
            kept.append(seps[i - 1])
        kept.append(part)
    body = "".join(kept).strip()
    if not body and dropped:
        return Cleaned("", dropped)
    out = (prefix + "".join(labels) + body).rstrip()
    # a line kept as it was (but trailing space) is one the screen cleared; one that lost an
    # empty piece between two separators is checked again as it now reads
    if not (clear and line.startswith(out)) and reads_unsafe(out):
        return Cleaned("", dropped + 1)
    return Cleaned(defang(out), dropped)


def clean(text: str) -> Cleaned:
    """`text` safe to paste into a prompt, line by line (a line left out whole goes with its line
    break; blank lines are kept as they are)."""
    lines, dropped = [], 0
    for line in text.split("\n"):
        made = clean_line(line)
        dropped += made.dropped
        if made.text or not line.strip():
            lines.append(made.text)
    return Cleaned("\n".join(lines), dropped)


def as_data(sentence: str) -> str:
    """A chat sentence ready to be quoted: defanged, and its own curly quotation marks made
    straight, so that the only “ ” on a line are the delimiters of quoted chat."""
    return defang(sentence).replace("“", '"').replace("”", '"')
