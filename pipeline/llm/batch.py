"""Gemini Batch mode (`gemini.batch`): nightly requests go as Batch API jobs (half the price,
answers within hours) and their answers are used by exactly the code an interactive answer
goes through.

Requests are content-addressed: a request's key hashes everything the model sees (model, system
text, prompt, response schema, max_output_tokens, thinking budget). With a BatchBook attached to
the summarizer (a run with batch on, see `start_batch`), `LLMSummarizer.ask` first asks the book:

- an answered request: its text goes through the same validation and usage accounting as an
  interactive answer (its cost × gemini.batch_price_factor; no limiter slot);
- a request whose job failed, expired or was given up: None, the normal interactive path
  (limiter, retries, quota); its answer is kept with the request (`keep`), so that when the item
  waits for another answer (a chunked day's reduce) its next round does not ask again;
- otherwise the request is recorded as pending (llm_batch_requests) and `Deferred` is raised.
  Deferred is not an LLMError: no retry, no extractive fallback, no row, no error; refresh_item
  counts the item as deferred.

A retry of the same text within one item goes interactive (a batch answer that was blocked or
cut short is not asked for again by batch); a re-ask after bad JSON is another prompt, so another
request and another round. The requests an item used (`item_requests` collects them) are marked
once its row is written and deleted when a run ends with nothing deferred: until the night is
done, a deferred item's next round, or a forced one, finds them again.

After a stage with a deferred item the run stops (runner.bring_up_to_date) and `finish_batch`
submits every pending request, whichever process recorded it (pipeline/llm/batch_jobs.py). The
next run with batch on (or serve's poll, every gemini.batch_poll_s) collects the finished jobs
first. A night therefore takes rounds: daily chunks, their reduce, historical, merge.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
from typing import Iterator

from ..hashing import input_hash
from ..summarize.schemas import DailyOut, ForgetOut, HistoricalOut, MergeOut
from .client import LLMResponse
from .errors import AnswerCutShort, BadOutput
from .gemini import is_gemma

log = logging.getLogger(__name__)
# The response schemas a request may name (stored by name, resolved again at submission).
SCHEMAS = {cls.__name__: cls for cls in (DailyOut, HistoricalOut, MergeOut, ForgetOut)}
# Run kinds that never wait for a batch: the hourly refresh is there to be fresh.
INTERACTIVE_KINDS = ("refresh",)

_used: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("mempipe_batch_used", default=None)
_item: contextvars.ContextVar[str | None] = contextvars.ContextVar("mempipe_batch_item", default=None)


class Deferred(Exception):
    """This item's answer comes from a batch job: it waits for a later run. Never an error."""


@contextlib.contextmanager
def item_requests(item_key: str | None = None) -> Iterator[list[str]]:
    """The batch requests one item uses, collected while it computes (its child tasks share the
    list: a context copy keeps the same object); a request it records is marked with `item_key`."""
    token, item_token = _used.set([]), _item.set(item_key)
    try:
        yield _used.get()
    finally:
        _used.reset(token)
        _item.reset(item_token)


def request_key(model: str, system: str, prompt: str, schema: type | None, max_output_tokens: int,
                thinking_budget: int | None) -> str:
    """Everything the model sees, hashed: the same question finds the same answer."""
    shape = json.dumps(schema.model_json_schema(), sort_keys=True) if schema is not None else None
    return input_hash("batch-1", model, system, prompt, shape, max_output_tokens, thinking_budget)


class BatchBook:
    """A run's view of the batch requests (its store), consulted by LLMSummarizer.ask."""

    def __init__(self, store, settings, clock, *, thinking_budget: int | None):
        self.store, self.settings, self.clock = store, settings, clock
        self.thinking_budget = thinking_budget  # what the client sends (GeminiClient.thinking_budget)

    def _key(self, model: str, prompt: str, system: str, schema: type | None) -> str:
        return request_key(model, system, prompt, schema, self.settings.gemini.output_limit(model), self.thinking_budget)

    @staticmethod
    def _schema(model: str, schema: type | None) -> type | None:
        return None if is_gemma(model) else schema  # Gemma gets no JSON mode (pipeline/llm/gemini.py)

    def answer(self, model: str, prompt: str, system: str, schema: type | None) -> tuple[LLMResponse | None, float]:
        """(the batch answer of this request, its price factor), (None, 1.0) to send it
        interactively, or Deferred."""
        used = _used.get()
        if used is None:  # outside an item (a control's forget within the run): nothing waits for a
            return None, 1.0  # round there, and Deferred would fail the run: interactive
        schema = self._schema(model, schema)
        key = self._key(model, prompt, system, schema)
        if key in used:
            return None, 1.0  # a retry of the same text in this item: interactive, bounded by max_attempts
        row = self.store.batch_request(key)
        if row is None:
            request = {"prompt": prompt, "system": system, "schema": schema.__name__ if schema else None,
                       "max_output_tokens": self.settings.gemini.output_limit(model)}
            self.store.record_batch_request(key, model, request, self.clock(), item_key=_item.get())
            raise Deferred(key)
        if row["state"] in ("pending", "submitted"):
            raise Deferred(key)
        used.append(key)
        if row["state"] == "failed":
            return None, 1.0  # its job failed or was given up: the interactive path, within the quota
        if row["answer_error"]:  # read_response's text: a cut-short answer is split, not retried
            cut_short = "finishReason MAX_TOKENS" in row["answer_error"]
            raise (AnswerCutShort if cut_short else BadOutput)(row["answer_error"])
        factor = 1.0 if row["answered_by"] == "interactive" else self.settings.gemini.batch_price_factor
        return LLMResponse(row["answer"], row["prompt_tokens"], row["output_tokens"], "STOP"), factor

    def keep(self, model: str, prompt: str, system: str, schema: type | None, response: LLMResponse) -> None:
        """An interactive answer: kept with its request when that has a row (its job failed, or its
        batch answer was unusable), so that the item's next round does not ask again."""
        used = _used.get()
        key = self._key(model, prompt, system, self._schema(model, schema))
        if used is not None and key in used:
            self.store.keep_interactive_answer(key, response.text, response.prompt_tokens, response.output_tokens,
                                               self.clock())

    def done(self, keys: list[str]) -> None:
        """An item's row went to the writer: the answers it used are marked, and deleted (they hold
        chat text) when a run ends with nothing deferred — a forced round before then finds them."""
        if keys:
            self.store.use_batch_requests(keys, self.clock())


def batch_wanted(ctx, kind: str) -> bool:
    """Whether this run sends its requests as batch jobs: gemini.batch, a model with a batch
    client, not a dry run, not the hourly refresh, not a run handing its items to workers."""
    client = getattr(ctx.summarizer, "client", None)
    return (ctx.settings.gemini.batch and not ctx.dry_run and kind not in INTERACTIVE_KINDS
            and not ctx.settings.workers.enabled  # workers ask interactively (README, Batch mode)
            and hasattr(client, "batches"))


def item_done(summarizer, keys: list[str]) -> None:
    """refresh_item's hook after an item's row went to the writer."""
    book = getattr(summarizer, "batch", None)
    if book is not None:
        book.done(keys)
