"""Every request within gemini.input_budget_tokens, whatever the input: names are clipped, a day
too long for one request is split by time into chunks, and a text too long for any request (one
message, a summary, a facts list) is cut, never sent whole. The prompt as rendered (escaped) is
what is measured, so the check is the one the limiter applies."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from .base import ChatLine, PartitionDay
from .text import common_cut, shorten

# Discord display names are at most 32 characters: a longer name is input nobody typed in a
# client, and a few words are all a summary needs.
NAME_CHARS = 64
Lines = tuple[ChatLine, ...]


@dataclass(frozen=True)
class Budget:
    limit: int                     # tokens
    measure: Callable[[str], int]  # a prompt's estimated tokens, as it would be sent (re-ask included)

    def fits(self, prompt: str) -> bool:
        return self.measure(prompt) <= self.limit

    def room(self, prompt: str) -> int:
        """Characters still free after this prompt (4 per token, the estimate's own rule)."""
        return max(self.limit - self.measure(prompt), 0) * 4


def short_name(name: str) -> str:
    return shorten(name, NAME_CHARS)


def clip_names(pd: PartitionDay) -> PartitionDay:
    """The partition-day with every speaker and reply name within NAME_CHARS."""
    if all(len(n) <= NAME_CHARS for n in pd.speakers.values()) and \
            all(len(ln.reply_to_name or "") <= NAME_CHARS for ln in pd.lines):
        return pd
    lines = tuple(dataclasses.replace(ln, name=short_name(ln.name),
                                      reply_to_name=ln.reply_to_name and short_name(ln.reply_to_name))
                  for ln in pd.lines)
    return dataclasses.replace(pd, lines=lines, speakers={u: short_name(n) for u, n in pd.speakers.items()})


def _cut(text: str, cap: int) -> str:
    return text if len(text) <= cap else (shorten(text, cap) if cap > 1 else "")


def fit_texts(texts: Sequence[str], render: Callable[[list[str]], str], budget: Budget,
              cut: Callable[[str, int], str] = _cut) -> list[str]:
    """`texts` with the longest cut to one common length, the largest that makes `render(texts)`
    fit (short texts stay whole); unchanged when they already fit."""
    return common_cut(list(texts), lambda ts: budget.fits(render(ts)), cut)


def answer_tokens(written_chars: int, daily_chars: int) -> int:
    """What one speaker's part of a daily or fold answer is expected to take, in output tokens: a
    summary of at most about `daily_chars` characters, shorter for who said little (the prompt
    asks a sentence of them: what they wrote and a sentence's worth more at most), its JSON, and
    facts restating at most half of what they wrote (up to 800 characters). 4 characters a token,
    a quarter over. An estimate, not a bound: an answer longer still is split (LLMSummarizer.daily)."""
    summary = min(daily_chars, written_chars + 60)
    return (summary + 60 + min(written_chars // 2, 800)) * 5 // 16


def answer_room(max_output_tokens: int) -> int:
    """The output tokens a chunk's answers may be estimated at: nine tenths of the limit. An answer
    past the limit is cut short (finishReason MAX_TOKENS); the piece is then asked in two halves
    (LLMSummarizer.daily)."""
    return max_output_tokens * 9 // 10


def with_text(line: ChatLine, text: str) -> ChatLine:
    return dataclasses.replace(line, text=text)


AnswerBudget = tuple[int, Callable[[int], int]]  # output tokens; a speaker's tokens by characters written


def expected_answer(lines: Iterable[ChatLine], speaker_tokens: Callable[[int], int]) -> int:
    """The output tokens an answer about `lines` is expected to take: each speaker's by what they wrote."""
    written: dict[int, int] = {}
    for ln in lines:
        written[ln.user_id] = written.get(ln.user_id, 0) + len(ln.text)
    return sum(map(speaker_tokens, written.values()))


def chunk_lines(lines: Lines, render: Callable[[Lines, int | None], str], budget: Budget,
                answer: AnswerBudget | None = None) -> list[Lines]:
    """Split a day by time into pieces whose prompt `render(piece, part)` fits and whose answer
    is expected to fit too: `answer` = (output tokens, speaker_tokens), the piece's speakers'
    `speaker_tokens(characters written)` summed within them. Packed by an estimate, then checked
    by rendering, a piece that does not fit split in two, a single message that does not fit alone cut."""
    if budget.fits(render(lines, None)) and (answer is None or expected_answer(lines, answer[1]) <= answer[0]):
        return [lines]
    room = max(budget.room(render((), 1)) - 400, 200)
    lines = tuple(ln if len(ln.text) <= room // 2 else with_text(ln, shorten(ln.text, room // 2)) for ln in lines)
    out: list[list[ChatLine]] = []
    used = answered = 0
    written: dict[int, int] = {}
    for ln in lines:
        # its line ("12 p3>…: " and an hour line now and then) and a speaker line; rendering checks
        cost = len(ln.text) + len(ln.reply_to_name or "") + len(ln.name) + 24
        before = written.get(ln.user_id)
        more = answer[1]((before or 0) + len(ln.text)) - (answer[1](before) if before is not None else 0) if answer else 0
        if out and out[-1] and used + cost <= room and (answer is None or answered + more <= answer[0]):
            out[-1].append(ln)
            used += cost
            answered += more
            written[ln.user_id] = (before or 0) + len(ln.text)
        else:
            out.append([ln])
            used = cost
            answered = answer[1](len(ln.text)) if answer else 0
            written = {ln.user_id: len(ln.text)}
    final: list[Lines] = []
    stack = [tuple(p) for p in reversed(out)]
    while stack:
        piece = stack.pop()
        if budget.fits(render(piece, len(final) + 1)):
            final.append(piece)
        elif len(piece) > 1:
            mid = len(piece) // 2
            stack.extend([piece[mid:], piece[:mid]])
        else:  # one message too long even alone (escaping, a long summary next to it): cut it
            (text,) = fit_texts([piece[0].text], lambda t: render((with_text(piece[0], t[0]),), len(final) + 1), budget)
            final.append((with_text(piece[0], text),))
    return final


Item = tuple[int, list[str]]  # a speaker and the partial summaries one request combines


def reduce_requests(partials: dict[int, list[str]], prompt_for: Callable[[list[Item]], str],
                    budget: Budget) -> list[list[Item]]:
    """One round of a map-reduce: each speaker with several partial summaries gets them combined,
    at least two at a time, as many speakers in one request as fit."""
    requests: list[list[Item]] = []
    current: list[Item] = []
    for uid in sorted(u for u, v in partials.items() if len(v) > 1):
        texts = partials[uid]
        start = 0
        while start < len(texts):
            end = start + 2
            while end < len(texts) and budget.measure(prompt_for([(uid, texts[start:end + 1])])) <= budget.limit // 2:
                end += 1
            piece = fit_texts(texts[start:end], lambda ts: prompt_for([(uid, ts)]), budget)
            if current and not budget.fits(prompt_for(current + [(uid, piece)])):
                requests.append(current)
                current = []
            current.append((uid, piece))
            start = end
    if current:
        requests.append(current)
    return requests
