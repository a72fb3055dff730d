"""A partition-day too big for one request is read in chunks: each within the input budget and
within one answer (the speakers' expected summaries and facts, budget.answer_tokens, within the
model's output limit); a chunk whose answer still comes back cut short is asked again in halves.
Each speaker then has several partial summaries: with `[summary] condense = "model"` the model
combines them (a map-reduce), with "cut" they are joined one part a line, each cut to fit
(summarize/text.join_within). A mixin of LLMSummarizer (pipeline/summarize/llm.py), whose ask,
rendering and budget it uses."""

from __future__ import annotations

import asyncio

from ..llm.errors import AnswerCutShort
from .base import ChatLine, PartitionDay, Usage
from .budget import AnswerBudget, answer_room, answer_tokens, chunk_lines, expected_answer, reduce_requests
from .prompts import render
from .schemas import DailyOut
from .text import join_within


class Chunked:
    def chunks(self, pd: PartitionDay) -> list[tuple[ChatLine, ...]]:
        """Split a prepared partition-day by time into pieces whose prompt fits the input budget."""
        return chunk_lines(pd.lines, lambda lines, part: self._render_daily(pd, lines, part), self.budget,
                           self.answer_budget())

    def answer_budget(self, rewrites: bool = False) -> AnswerBudget:
        """What one answer may hold; `rewrites`: each speaker's summary is written whole again (a
        model fold of a running summary), not only what the piece shows."""
        chars = self.lengths.daily_chars
        return (answer_room(self.cfg.output_limit(self.cfg.model_for("daily"))),
                lambda w: answer_tokens(max(w, chars) if rewrites else w, chars))

    async def _answers(self, pd: PartitionDay, piece: tuple[ChatLine, ...], part: int | None,
                       usage: Usage) -> list[tuple[tuple[ChatLine, ...], DailyOut]]:
        """The piece's answer; when it came back cut short at max_output_tokens (more speakers or
        facts than estimated), the piece's two halves by time, asked alike."""
        try:
            return [(piece, await self.ask("daily", self._render_daily(pd, piece, part), DailyOut, usage,
                                           split=len(piece) > 1, answer=expected_answer(piece, self.answer_budget()[1])))]
        except AnswerCutShort:
            if len(piece) < 2:
                raise
            mid = len(piece) // 2
            halves = await asyncio.gather(*(self._answers(pd, half, part or 1, usage) for half in (piece[:mid], piece[mid:])))
            return halves[0] + halves[1]

    async def _reduce(self, pd: PartitionDay, partials: dict[int, list[str]], usage: Usage) -> tuple[dict[int, str], int]:
        """Combine each speaker's partial summaries, in as many budget-sized calls as needed."""
        handles = self.handles(pd)
        dropped = 0

        def prompt_for(items: list[tuple[int, list[str]]]) -> str:
            return render("reduce", day=pd.day, target_chars=self.lengths.daily_chars, json_example=self.json_example,
                          speakers=[(handles[u], pd.speakers[u], texts) for u, texts in items])

        # partial summaries that together fit the target are joined, in time order, without a call;
        target = self.lengths.daily_chars  # with condense = "cut", always: each cut to fit (no summary read again)
        if self.lengths.condense == "cut":
            return {u: join_within(v, target) for u, v in partials.items() if v}, 0
        partials = {u: [" ".join(v)] if len(v) > 1 and sum(len(t) + 1 for t in v) - 1 <= target else v
                    for u, v in partials.items()}
        while any(len(v) > 1 for v in partials.values()):
            requests = reduce_requests(partials, prompt_for, self.budget)
            results = await asyncio.gather(*(self.ask("daily", prompt_for(r), DailyOut, usage) for r in requests))
            new: dict[int, list[str]] = {u: list(v) for u, v in partials.items() if len(v) <= 1}
            for items, answer in zip(requests, results):
                got, d = self._accept(pd, answer, handles)
                dropped += d
                for uid, texts in items:
                    # a speaker the model left out keeps its partials' first piece rather than vanish
                    new.setdefault(uid, []).append(got.get(uid) or texts[0])
            partials = new
        return {u: v[0] for u, v in partials.items() if v}, dropped

