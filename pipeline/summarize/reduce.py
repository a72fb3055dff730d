"""A big day read in chunks gives each speaker several partial summaries; with
`[summary] condense = "model"` the model combines them (a map-reduce), with "cut" they are joined
one part a line, each cut to fit (summarize/text.join_within). A mixin of LLMSummarizer
(pipeline/summarize/llm.py), whose ask, rendering and budget it uses."""

from __future__ import annotations

import asyncio

from .base import PartitionDay, Usage
from .budget import reduce_requests
from .prompts import render
from .schemas import DailyOut
from .text import join_within


class ModelReduce:
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

