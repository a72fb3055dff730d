"""What a dry run asks of the LLM summarizer: the requests and prompt tokens an item would cost,
before spending them, and their input's price (`planned_cost`, a dry run's estimated_cost; at
batch prices with gemini.batch). A mixin of LLMSummarizer (pipeline/summarize/llm.py), whose
rendering and budget it uses."""

from __future__ import annotations

from .base import PartitionDay
from .facts_out import prepared


class LLMEstimates:
    planned_cost = 0.0  # added to per instance by _planned

    def estimate_daily(self, pd: PartitionDay) -> tuple[int, int]:
        """(requests, prompt tokens) a partition-day would cost, before spending them."""
        if self._fits_daily(pd):
            return 0, 0  # passed through without the model
        pd = prepared(pd)
        pieces = self.chunks(pd)
        tokens = sum(self.prompt_tokens("daily", self._render_daily(pd, p, i + 1 if len(pieces) > 1 else None))
                     for i, p in enumerate(pieces))
        if len(pieces) == 1 or self.lengths.condense == "cut":  # cut: the partials are joined, no reduce
            return self._planned("daily", len(pieces), tokens)
        # reduce: about one request per budget-full of partial summaries
        partial_tokens = len(pieces) * len(pd.speakers) * (self.lengths.daily_chars // 4 + 20)
        reduce_calls = max(1, -(-partial_tokens // self.cfg.input_budget))
        return self._planned("daily", len(pieces) + reduce_calls, tokens + partial_tokens)

    def estimate(self, operation: str, *args) -> tuple[int, int]:
        """(requests, prompt tokens) of a historical(name, dailies) or merge(name, day1, historical)."""
        prompt = self._historical_prompt(*args) if operation == "historical" else self._merge_prompt(*args)
        return self._planned(operation, 1, self.prompt_tokens(operation, prompt))

    def _planned(self, operation: str, calls: int, prompt_tokens: int) -> tuple[int, int]:
        """An estimate; its input cost adds to planned_cost (at batch prices when the run would batch:
        gemini.batch without workers, which ask interactively)."""
        factor = self.cfg.batch_price_factor if self.batch_priced else 1.0
        self.planned_cost += self._price(self.cfg.model_for(operation), prompt_tokens, 0) * factor
        return calls, prompt_tokens

    def _price(self, model: str, prompt_tokens: int, output_tokens: int) -> float:
        """USD at gemini.prices (0 for a model without a price)."""
        price = self.cfg.prices.get(model)
        if price is None:
            return 0.0
        return (prompt_tokens * price.input_per_million + output_tokens * price.output_per_million) / 1e6
