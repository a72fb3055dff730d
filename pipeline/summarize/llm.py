"""The LLM summarizer: renders prompts/, calls an LLMClient (Gemini/Gemma), validates every
answer with pydantic, and falls back to the extractive summarizer per item when the model
fails after bounded retries or the quota is spent (the row is then marked degraded).

Big partition-days are map-reduced: split by time into chunks whose prompts fit the input
budget, summarised per chunk, then each speaker's partial summaries are combined in further
calls, each also within the budget. Every other request is held to the budget too (budget.py).
The daily and fold answers also carry facts per speaker (facts_out.py): no extra request."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import re
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from ..clock import Clock, system_clock
from ..hashing import input_hash
from ..llm.client import LLMClient, estimate_tokens
from ..llm.errors import AnswerCutShort, BadOutput, LLMError, RateLimited, fallback_reason
from ..llm.gemini import is_gemma
from ..llm.limiter import RateLimiter
from ..llm.shared_limiter import SharedQuota, SharedRateLimiter
from ..safety import safe_name
from .base import PASSED_FITS, ChatLine, Outcome, PartitionDay, Usage
from .budget import Budget, chunk_lines, expected_answer, fit_texts, short_name
from .estimates import LLMEstimates
from .chunked import Chunked
from .extractive import ExtractiveSummarizer
from .facts_out import candidates, checked_requests, messages, of_users, prepared, requests_of
from .prompts import PROMPTS_DIR, render, template_hash
from .schemas import DailyOut, ForgetOut, HistoricalOut, MergeOut
from .text import join_within, newest_within

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)
# 2: names clipped, texts cut to budget; 3: facts in daily/fold, handles; 4: a line a message, no JSON example
SCHEMA_VERSION = "llm-4"
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)
REASK = ("\n\nYour previous answer was not valid JSON of the requested shape. Answer again with "
         "only the JSON object, no prose and no code fences.")


def system_text(directory: Path = PROMPTS_DIR) -> str:
    return (directory / "system.txt").read_text(encoding="utf-8").strip()


def strip_fences(text: str) -> str:
    m = _FENCE.match(text)
    return m.group(1) if m else text.strip()


class LLMSummarizer(LLMEstimates, Chunked):
    kind = "gemini"

    def __init__(self, settings, client: LLMClient, *, sleep=asyncio.sleep, monotonic=None,
                 clock: Clock = system_clock):
        self.cfg, self.batch_priced = settings.gemini, settings.gemini.batch and not settings.workers.enabled
        self.lengths = settings.summary
        self.client = client
        self.fallback = ExtractiveSummarizer(settings.summary)
        self._sleep = sleep
        self._monotonic = monotonic
        self._clock = clock  # the limiters' daily request count follows its UTC day
        self._limiters: dict[str, RateLimiter | SharedRateLimiter] = {}
        self._shared_quota = SharedQuota.for_settings(settings)  # None: this process counts alone
        self._semaphore: asyncio.Semaphore | None = None
        self.retry_budget = self.cfg.run_retry_budget
        self.system = system_text()
        self.batch = None  # a run with gemini.batch attaches a BatchBook (pipeline/llm/batch.py)
        self.planned_cost = 0.0  # a dry run's estimates, priced (_planned)

    # ------------------------------------------------------------------ identity

    def fingerprint(self, operation: str) -> str:
        templates = [template_hash(operation)] + (
            [template_hash("reduce"), template_hash("fold")] if operation == "daily" else [])
        return input_hash(SCHEMA_VERSION, self.kind, self.cfg.model_for(operation), templates,
                          input_hash(self.system), self.lengths.text_key(chunks=True), self.cfg.input_budget)[:24]

    # ------------------------------------------------------------------ one request

    def _limiter(self, model: str) -> RateLimiter | SharedRateLimiter:
        if model not in self._limiters:
            lim = self.cfg.limits.get(model)
            limits = (lim.rpm, lim.tpm, lim.rpd) if lim else (None, None, None)
            if self._shared_quota is not None:  # one count in the database for every process
                self._limiters[model] = self._shared_quota.limiter(model, *limits, sleep=self._sleep)
                return self._limiters[model]
            kwargs = {"sleep": self._sleep, "window_s": self.cfg.rate_window_s, "clock": self._clock}
            if self._monotonic is not None:
                kwargs["monotonic"] = self._monotonic
            self._limiters[model] = RateLimiter(*limits, **kwargs)
        return self._limiters[model]

    @property
    def json_example(self) -> bool:
        """Whether the daily, fold and reduce prompts show the answer's JSON: only for a model
        without JSON mode (Gemma); Gemini gets the schema itself (pipeline/llm/gemini.py)."""
        return is_gemma(self.cfg.model_for("daily"))

    def prompt_tokens(self, operation: str, prompt: str) -> int:
        return estimate_tokens(prompt + "\n\n" + self.system)

    @property
    def budget(self) -> Budget:
        """Measured with the re-ask appended: a request sent again after a bad answer fits too."""
        return Budget(self.cfg.input_budget, lambda prompt: self.prompt_tokens("", prompt + REASK))

    def _wait(self, retry_state) -> float:
        exc = retry_state.outcome.exception()
        if isinstance(exc, RateLimited) and exc.retry_after is not None:
            return 0.0  # the limiter already holds every request to this model for retry_after
        return wait_exponential_jitter(initial=self.cfg.backoff_initial_s, max=self.cfg.backoff_max_s)(retry_state)

    def _should_retry(self, exc: BaseException) -> bool:
        return isinstance(exc, LLMError) and exc.retryable and self.retry_budget > 0

    async def ask(self, operation: str, prompt: str, schema: type[M], usage: Usage, *, split: bool = False,
                  answer: int = 0) -> M:
        """One validated answer, with bounded retries. Raises LLMError when it gives up. `split`:
        the caller asks in halves an answer cut short (AnswerCutShort is raised, not retried);
        `answer`: the output tokens expected, which the request is given the time to write."""
        model = self.cfg.model_for(operation)
        limiter = self._limiter(model)
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.cfg.concurrency)
        reask = False

        async def attempt() -> M:
            nonlocal reask
            text = prompt + (REASK if reask else "")
            # batch mode: a batch job's answer (or Deferred: the item waits for one); None: interactive
            response, price_factor = self.batch.answer(model, text, self.system, schema) if self.batch else (None, 1.0)
            if response is None:
                async with self._semaphore:
                    slot = await limiter.acquire(self.prompt_tokens(operation, text))
                    try:
                        response = await self.client.generate(
                            model, text, system=self.system, json_schema=None if is_gemma(model) else schema,
                            max_output_tokens=self.cfg.output_limit(model),
                            timeout_s=self.cfg.timeout_s + answer / self.cfg.answer_tokens_per_s if answer else None)
                    except LLMError as exc:
                        usage.llm_calls += 1
                        if isinstance(exc, AnswerCutShort):  # a whole answer's worth, billed
                            usage.prompt_tokens += exc.billed[0]
                            usage.output_tokens += exc.billed[1]
                            usage.cost += self._price(model, *exc.billed)
                        if isinstance(exc, RateLimited) and exc.retry_after:
                            limiter.penalize(min(exc.retry_after, self.cfg.backoff_max_s))
                        raise
                    finally:
                        limiter.release(slot)
                if self.batch is not None:  # kept for the item's next round (a failed batch job's request)
                    self.batch.keep(model, text, self.system, schema, response)
            usage.llm_calls += 1
            usage.prompt_tokens += response.prompt_tokens
            usage.output_tokens += response.output_tokens
            usage.cost += self._price(model, response.prompt_tokens, response.output_tokens) * price_factor
            try:
                return schema.model_validate_json(strip_fences(response.text))
            except ValidationError as exc:
                reask = True
                raise BadOutput(f"{model}: answer does not match {schema.__name__}: "
                                f"{exc.errors()[0]['msg'] if exc.errors() else exc}") from exc

        def before_sleep(_state) -> None:
            usage.retries += 1
            self.retry_budget -= 1

        retrying = AsyncRetrying(stop=stop_after_attempt(self.cfg.max_attempts), wait=self._wait,
                                 retry=retry_if_exception(lambda e: self._should_retry(e) and not (
                                     split and isinstance(e, AnswerCutShort))), sleep=self._sleep,
                                 before_sleep=before_sleep, reraise=True)
        return await retrying(attempt)

    # ------------------------------------------------------------------ daily (map-reduce)

    @staticmethod
    def handles(pd: PartitionDay) -> dict[int, str]:
        return {uid: f"p{i + 1}" for i, uid in enumerate(sorted(pd.speakers))}

    def _render_daily(self, pd: PartitionDay, lines: tuple[ChatLine, ...], part: int | None) -> str:
        handles = self.handles(pd)
        speakers = sorted({ln.user_id for ln in lines})
        return render("daily", day=pd.day, speakers=[(handles[u], pd.speakers[u]) for u in speakers],
                      messages=messages(lines, handles), target_chars=self.lengths.daily_chars, part=part,
                      json_example=self.json_example)

    def _accept(self, pd: PartitionDay, answer: DailyOut, handles: dict[int, str]) -> tuple[dict[int, str], int]:
        by_handle = {h: uid for uid, h in handles.items()}
        out: dict[int, str] = {}
        dropped = 0
        for item in answer.summaries:
            uid = by_handle.get(item.speaker.strip())
            if uid is None:  # a speaker that was not in the input: never trusted
                dropped += 1
                continue
            out[uid] = item.summary.strip()
        return out, dropped

    # Text within its length target is kept (quoted whole by the extractive summarizer; passthrough).

    def _fits_daily(self, pd: PartitionDay, previous: dict[int, str] | None = None) -> bool:
        written: dict[int, int] = {}
        for ln in pd.lines:
            written[ln.user_id] = written.get(ln.user_id, 0) + len(ln.text) + 4
        budget = self.lengths.daily_chars
        return all(n + len((previous or {}).get(u, "")) + len(pd.speakers[u]) + 2 <= budget
                   for u, n in written.items())

    async def daily(self, partition_day: PartitionDay, *, ask: bool = False) -> Outcome[dict[int, str]]:
        if not ask and self._fits_daily(partition_day):
            return replace(await self.fallback.daily(partition_day), passthrough=PASSED_FITS)  # quoted whole
        usage = Usage(calls=1)
        handles = self.handles(partition_day)
        pd = prepared(partition_day)
        try:
            chunks = self.chunks(pd)
            answered = [a for got in await asyncio.gather(*(
                self._answers(pd, piece, (i + 1) if len(chunks) > 1 else None, usage) for i, piece in enumerate(chunks)))
                for a in got]
            dropped = 0
            partials: dict[int, list[str]] = {}
            facts, asked = [], []  # from the chunks' answers (whole-day positions); a reduce's are not read
            for piece, answer in answered:
                got, d = self._accept(partition_day, answer, handles)
                dropped += d
                for uid, text in got.items():
                    partials.setdefault(uid, []).append(text)
                facts += candidates(answer, handles, piece)
                asked += requests_of(answer, handles, piece)
            if len(answered) > 1:
                summaries, d = await self._reduce(pd, partials, usage)
                dropped += d
            else:
                summaries = {u: v[0] for u, v in partials.items()}
        except LLMError as exc:
            return await self._fallback_daily(partition_day, usage, exc)
        missing = set(partition_day.speakers) - set(summaries)
        if missing:  # the model skipped someone who spoke: fill from the extractive summary
            extractive = await self.fallback.daily(partition_day)
            summaries.update({u: extractive.value[u] for u in missing})
            facts += of_users(extractive.facts, missing)
        return Outcome(summaries, usage, None, dropped, facts, requests=checked_requests(asked, partition_day))

    async def _fallback_daily(self, pd, usage, exc) -> Outcome[dict[int, str]]:
        log.warning("daily %s %s: falling back to extractive: %s", pd.partition, pd.day, exc)
        usage.fallbacks += 1
        extractive = await self.fallback.daily(pd)
        return Outcome(extractive.value, usage, fallback_reason(exc), facts=extractive.facts,
                       requests=extractive.requests)

    # ------------------------------------------------------------------ fold (hourly refresh)

    def _render_fold(self, pd: PartitionDay, lines: tuple[ChatLine, ...], previous: dict[int, str]) -> str:
        handles = self.handles(pd)
        speakers = sorted({ln.user_id for ln in lines})
        return render("fold", day=pd.day, speakers=[(handles[u], pd.speakers[u]) for u in speakers],
                      previous=[(handles[u], previous[u]) for u in speakers if u in previous],
                      messages=messages(lines, handles), target_chars=self.lengths.daily_chars,
                      json_example=self.json_example)

    async def _fold_quoted(self, new: PartitionDay, previous: dict[int, str]) -> Outcome[dict[int, str]]:
        """The extractive fold of `new` into the running summaries; one it did not write (a model's,
        not "Name: “…”") is kept whole with the new quotes on a line after it (`join_within`)."""
        own = {u: p for u, p in previous.items()
               if u in new.speakers and p.startswith(f"{safe_name(new.speakers[u])}: ")}
        out = await self.fallback.fold(new, own)
        kept = {u: t if u in own or not previous.get(u, "").strip()
                else join_within([*previous[u].split("\n"), t], self.lengths.daily_chars)
                for u, t in out.value.items()}
        return replace(out, value=kept)

    def fold_is_free(self, new: PartitionDay, previous: dict[int, str]) -> bool:
        """`fold(new, previous)` would pass through without a request (stages/daily.py: such a
        fold never waits)."""
        return self._fits_daily(new, previous)

    async def fold(self, new: PartitionDay, previous: dict[int, str]) -> Outcome[dict[int, str]]:
        """One call per chunk of new messages (usually one): each message is read once, plus the
        running summaries of the people who wrote them — with condense = "cut", not those: the new
        messages are summarised as a part of the day, one more line of each running summary."""
        if self._fits_daily(new, previous):  # the running summaries and the new text fit together: as written
            return replace(await self._fold_quoted(new, previous), passthrough=PASSED_FITS)
        if self.lengths.condense == "cut":
            out = await self.daily(new, ask=True)
            return replace(out, value={u: join_within([*previous.get(u, "").split("\n"), t], self.lengths.daily_chars)
                                       for u, t in out.value.items()})
        usage = Usage(calls=1)
        handles = self.handles(new)
        current = dict(previous)
        dropped = 0
        facts, asked = [], []  # from the new messages only
        pd = prepared(new)
        # chunked with each running summary held to a quarter of the room, so a long one leaves
        # room for the messages; cut again at sending if the summaries grew since
        cap = self.budget.room(self._render_fold(pd, (), {})) // 4
        held = {u: newest_within([t], cap) for u, t in previous.items()}
        try:
            pieces = chunk_lines(pd.lines, lambda lines, _part: self._render_fold(pd, lines, held), self.budget,
                                 self.answer_budget(rewrites=True))[::-1]
            while pieces:  # sequential: each folds into the last
                piece = pieces.pop()
                speakers = sorted({ln.user_id for ln in piece} & set(current))

                def prompt_for(texts: list[str]) -> str:
                    return self._render_fold(pd, piece, current | dict(zip(speakers, texts)))
                prompt = prompt_for(fit_texts([current[u] for u in speakers], prompt_for, self.budget))
                try:
                    answer = await self.ask("daily", prompt, DailyOut, usage, split=len(piece) > 1,
                                            answer=expected_answer(piece, self.answer_budget(rewrites=True)[1]))
                except AnswerCutShort:  # more than estimated: its halves, in time order
                    if len(piece) < 2:
                        raise
                    pieces += [piece[len(piece) // 2:], piece[:len(piece) // 2]]
                    continue
                got, d = self._accept(new, answer, handles)
                dropped += d
                current.update(got)
                facts += candidates(answer, handles, piece)
                asked += requests_of(answer, handles, piece)
        except LLMError as exc:
            log.warning("fold %s %s: falling back to extractive: %s", new.partition, new.day, exc)
            usage.fallbacks += 1
            extractive = await self._fold_quoted(new, previous)
            return Outcome(extractive.value, usage, fallback_reason(exc), facts=extractive.facts,
                           requests=extractive.requests)
        out = {u: current[u] for u in new.speakers if u in current}
        missing = set(new.speakers) - set(out)
        if missing:
            extractive = await self._fold_quoted(new, previous)
            out.update({u: extractive.value[u] for u in missing})
            facts += of_users(extractive.facts, missing)
        return Outcome(out, usage, None, dropped, facts, requests=checked_requests(asked, new))

    # ------------------------------------------------------------------ the small operations

    async def _small(self, operation: str, prompt: str, schema, fallback_coro_factory):
        usage = Usage(calls=1)
        try:
            answer = await self.ask(operation, prompt, schema, usage)
            return answer, usage, None
        except LLMError as exc:
            log.warning("%s: falling back to extractive: %s", operation, exc)
            usage.fallbacks += 1
            return (await fallback_coro_factory()).value, usage, fallback_reason(exc)

    # historical and merge are asked only for text that exceeds its budget: the stages decide
    # that, for every summarizer alike (pipeline/stages/recent.py), so there is no check here.

    def _historical_prompt(self, name: str, dailies: list[tuple[dt.date, str]]) -> str:
        days = [d for d, _t in dailies]

        def prompt_for(texts: list[str]) -> str:
            return render("historical", name=short_name(name), dailies=list(zip(days, texts)),
                          target_chars=self.lengths.historical_chars)
        return prompt_for(fit_texts([t for _d, t in dailies], prompt_for, self.budget))

    async def historical(self, name: str, dailies: list[tuple[dt.date, str]]) -> Outcome[str]:
        prompt = self._historical_prompt(name, dailies)
        answer, usage, reason = await self._small("historical", prompt, HistoricalOut,
                                                  lambda: self.fallback.historical(name, dailies))
        return Outcome(answer if reason else answer.summary.strip(), usage, reason)

    def _merge_prompt(self, name: str, day1: str, historical: str) -> str:
        def prompt_for(texts: list[str]) -> str:
            return render("merge", name=short_name(name), day1=texts[0], historical=texts[1],
                          target_chars=self.lengths.context_chars)
        return prompt_for(fit_texts([day1, historical], prompt_for, self.budget))

    async def merge(self, name: str, day1: str, historical: str) -> Outcome[str]:
        """Today, then the past week, within context_chars (the merge stage puts the profile first)."""
        prompt = self._merge_prompt(name, day1, historical)
        answer, usage, reason = await self._small("merge", prompt, MergeOut,
                                                  lambda: self.fallback.merge(name, day1, historical))
        return Outcome(answer if reason else answer.context.strip(), usage, reason)

    async def forget(self, facts: list[str], fact: str, subject: str = "") -> Outcome[list[int]]:
        """The positions of the facts that state `fact` (the model answers 1-based numbers)."""
        prompt = render("forget", facts=facts, fact=fact)
        if not facts or not self.budget.fits(prompt):  # cutting would drop facts never asked about
            return await self.fallback.forget(facts, fact, subject)
        answer, usage, reason = await self._small("forget", prompt, ForgetOut,
                                                  lambda: self.fallback.forget(facts, fact, subject))
        return Outcome(answer if reason else answer.positions(len(facts)), usage, reason)

    async def aclose(self) -> None:
        try:
            await self.client.aclose()
        finally:
            if self._shared_quota is not None:  # the last releases written, its connections closed
                await self._shared_quota.aclose(self._limiters.values())
