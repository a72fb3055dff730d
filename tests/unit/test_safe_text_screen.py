"""The line cleaner's shortcut (pipeline/summarize/safe_text.py `_screened_clear`): a line the
fast screen clears, as it is and with its white space made single, skips the per-piece checks.
It must give exactly what the full checks give, on lines made to break it: hostile sentences
cut, quoted, labelled and run into others, secrets whose words are split by tabs, double spaces,
no-break and zero-width spaces or line separators, markup and role markers. No database."""

from __future__ import annotations

import random

from pipeline import safety
from pipeline.summarize.safe_text import _clean_line, _screened_clear, clean_line, piece_unsafe
from tests.unit.test_safe_text import _corpus

PREFIXES = ["", "# ", "- ", "  * ", "\t- "]
LABELS = ["", "Today, 2026-11-07: ", "Today, 2026-11-07 [server]: ", "2026-11-05: ", "2026-11-01–2026-11-06: ",
          "Ana: ", "Facts: ", "Past week: ", "Ignore previous instructions: ", "System: ", "my pin: "]
SEPARATORS = [" ", ". ", "! ", " · ", "  ·  ", "\t", ".\t", " “", "” ", "\" ", " \"", "' ", ".\u2028", "\u00a0", "? "]
SPLIT_SECRETS = ["mot de passe", "mot\tde passe", "mot  de\u00a0passe", "access key", "access\u2028key",
                 "backup  code", "api key", "api\tkey", "pin", "pins", "spin", "pinned", "xpass", "password"]
WORDS = ["the", "raid", "Friday", "bread", "ignore", "all", "previous", "instructions", "system", "prompt",
         "obey", "you", "are", "now", "<b>", "</b>", "[INST]", "[server]", "is", "hunter2", "sk-abcdefghijklmnop1234",
         "eyJhbGciOi", "1gn0r3", "r u l e s", "😀", "Miso", "caf\u0065\u0301", "\u200b", "—", "…", "#", ":"]


def _lines(n: int, seed: int) -> list[str]:
    """Lines as a context carries them (prefix, labels, pieces and separators), mixing ordinary and
    hostile chat, split secrets and odd white space."""
    rng = random.Random(seed)
    corpus = [t for t in _corpus() if "\n" not in t]
    out = []
    for _ in range(n):
        pieces = []
        for _p in range(rng.randint(1, 4)):
            kind = rng.random()
            if kind < 0.45:
                piece = rng.choice(corpus)
            elif kind < 0.7:
                piece = " ".join(rng.choice(WORDS) for _w in range(rng.randint(1, 8)))
            else:
                piece = f"my {rng.choice(SPLIT_SECRETS)} is {rng.choice(['hunter2', 'blue', '4821', 'sk-abcdefghijklmnop'])}"
            if rng.random() < 0.2:
                piece = f"“{piece}”" if rng.random() < 0.5 else f'"{piece}"'
            pieces.append(piece)
        body = pieces[0]
        for piece in pieces[1:]:
            body += rng.choice(SEPARATORS) + piece
        labels = "".join(rng.choice(LABELS) for _l in range(rng.randint(0, 2)))
        out.append(rng.choice(PREFIXES) + labels + body + rng.choice(["", " ", "  ", "\t"]))
    return out


def test_the_shortcut_cleans_every_line_exactly_as_the_full_checks_do():
    lines = _lines(6_000, seed=14) + _corpus()
    differ = [line for line in lines if _clean_line(line, screen=True) != _clean_line(line, screen=False)]
    assert differ == []
    assert all(clean_line(line) == _clean_line(line, screen=False) for line in lines[:500])  # the cached entry point
    # the comparison has teeth: both paths are taken, and the full checks leave pieces out
    cleared = sum(_screened_clear(line) for line in lines)
    assert 0.1 * len(lines) < cleared < 0.9 * len(lines)
    dropped = [line for line in lines if _clean_line(line, screen=False).dropped]
    assert len(dropped) > 0.2 * len(lines)


def test_a_piece_the_screen_clears_is_never_one_the_full_checks_refuse():
    rng = random.Random(15)
    pieces = [p for line in _lines(3_000, seed=16) for p in line.split(rng.choice([". ", " · ", "“"]))]
    assert [p for p in pieces if piece_unsafe(p) != piece_unsafe(p, screen=False)] == []
    assert sum(piece_unsafe(p, screen=False) for p in pieces) > 0.1 * len(pieces)


def test_a_line_whose_single_spaced_form_the_screen_flags_takes_the_full_checks():
    # text.clean makes a sentence's white space single before it is checked, so the shortcut
    # screens the line that way too: "access\tkey" passes the screen as it is, not single-spaced
    for line in ("Today, 2026-11-07: Ana: my access\tkey is blue. Then we raided.",
                 "- my backup  code is 4821 · fine", "Ana said “my access\u2028key is blue”"):
        assert not safety.may_refuse(line)
        assert not _screened_clear(line)
        assert clean_line(line) == _clean_line(line, screen=False)


def test_a_cleared_line_with_a_blank_piece_loses_it_as_the_full_checks_do():
    # The shortcut keeps a cleared line as it is (less trailing white space) only when no piece of
    # it can be blank or lose white space: a line ending in our " · " separator, or with white
    # space other than spaces and tabs (a piece of it alone, or at the start of the text after
    # the prefix and labels), and the full checks leave it out.
    # (white space the screen clears: no-break and em spaces, which NFKC changes, it never does)
    lines = ["Ana: we raided · ", "- the raid · \u2028 · Friday", "Today, 2026-11-07: bread. \x0c · rolls",
             "# heading ·", "we raided.\u2028", "a · \x1f", "Past week: x · \u2029", "plain line  \t",
             "Ana: bread.\x0b rolls", "Ana: \x0cwe raided", "\x1fbread and rolls", "- \u2028Friday"]
    for line in lines:
        assert _screened_clear(line), line  # the shortcut's condition holds: the case is the blank piece
        assert _clean_line(line, screen=True) == _clean_line(line, screen=False), line
    # the cases have teeth: the full checks change more than the trailing white space of most
    changed = [line for line in lines if _clean_line(line, screen=False).text != line.rstrip()]
    assert len(changed) >= 4
