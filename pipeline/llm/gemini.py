"""Gemini and Gemma through the real google-genai async client.

- Gemini models: system instruction + JSON mode with the pydantic schema, sent without its
  titles, descriptions, defaults and length bounds (`response_schema`: the schema is part of every
  request body, and we validate `response.text` with pydantic ourselves anyway —
  `response.parsed` silently becomes None on a mismatch).
- Gemma models (`gemma-*`): the API rejects system instructions and JSON mode, so the
  instructions go in the user turn and the JSON is asked for in the prompt (the summarizer
  strips fences, validates and re-asks once).
- Thinking: Gemini 2.5+ models think by default; thinking tokens are billed as output and count
  against `max_output_tokens`, so a long day's answer can be cut short by the model's own thoughts.
  Summarising needs none: `gemini.thinking_budget` (default 0; -1 lets the model decide) is sent to models that think
  (`thinking_config`), never to Gemma or Gemini 1.x/2.0 (which reject it); a Pro model cannot turn
  thinking off and gets at least its minimum (128).
- The client's own retries stay off (no `retry_options`): retries, backoff and fallback are
  ours (`LLMSummarizer.ask` in pipeline/summarize/llm.py), so that a 429 storm is bounded by one
  budget, not two.
"""

from __future__ import annotations

import asyncio
import functools
import re

import httpx2
from google import genai
from google.genai import _transformers as genai_transformers
from google.genai import errors as genai_errors
from google.genai import types

from ..safety import register_secret
from .client import LLMResponse
from .errors import AnswerCutShort, BadOutput, Permanent, RateLimited, Transient

_BLOCKING = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "OTHER", "LANGUAGE",
             "IMAGE_SAFETY", "MALFORMED_FUNCTION_CALL"}


def is_gemma(model: str) -> bool:
    return model.split("/")[-1].lower().startswith("gemma-")


_NO_THINKING = re.compile(r"^(?:gemma-|gemini-(?:1\.|2\.0))")
PRO_MIN_THINKING = 128  # Gemini 2.5 Pro's smallest thinking budget (it cannot be turned off)


def thinking_config(model: str, budget: int | None) -> types.ThinkingConfig | None:
    """What to send for `gemini.thinking_budget` (-1: the model decides, the API's own value;
    None: send nothing)."""
    name = model.split("/")[-1].lower()
    if budget is None or _NO_THINKING.match(name):
        return None
    if "-pro" in name and budget >= 0:
        budget = max(budget, PRO_MIN_THINKING)
    return types.ThinkingConfig(thinking_budget=budget)


# Schema keys that only document or repeat what pydantic checks on the answer.
_SCHEMA_NOTES = frozenset({"title", "description", "default", "min_length", "max_length"})


def _without_notes(node):
    if isinstance(node, dict):
        return {k: ({name: _without_notes(v) for name, v in value.items()} if k == "properties"
                    else _without_notes(value))
                for k, value in node.items() if k not in _SCHEMA_NOTES}
    if isinstance(node, list):
        return [_without_notes(v) for v in node]
    return node


@functools.cache
def response_schema(model: type) -> types.Schema:
    """The response schema of a pydantic model as the API takes it (google-genai's own
    conversion), without the keys that only document it: about a third of the bytes."""
    full = genai_transformers.t_schema(None, model)
    return types.Schema.model_validate(_without_notes(full.model_dump(exclude_none=True)))


def retry_delay_of(exc: genai_errors.APIError) -> float | None:
    """The server's google.rpc.RetryInfo retryDelay ("2s", "1.5s"), if any."""
    details = exc.details if isinstance(exc.details, dict) else {}
    for item in (details.get("error") or {}).get("details") or []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("RetryInfo"):
            m = re.fullmatch(r"\s*([\d.]+)s\s*", str(item.get("retryDelay", "")))
            if m:
                return float(m.group(1))
    return None


def read_response(model: str, response: types.GenerateContentResponse) -> LLMResponse:
    """The text and usage of an answer, or BadOutput when it cannot be used (blocked, cut short,
    empty): the same for an interactive answer and a batch job's."""
    usage = response.usage_metadata
    prompt_tokens = (usage.prompt_token_count or 0) if usage else 0
    output_tokens = (usage.candidates_token_count or 0) if usage else 0
    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason:
        raise BadOutput(f"{model}: prompt blocked ({feedback.block_reason})")
    if not response.candidates:
        raise BadOutput(f"{model}: no candidates in the answer")
    finish = response.candidates[0].finish_reason
    finish_name = getattr(finish, "name", None) or (str(finish) if finish else None)
    if finish_name == "MAX_TOKENS":
        raise AnswerCutShort(f"{model}: answer truncated (finishReason MAX_TOKENS)", (prompt_tokens, output_tokens))
    if finish_name in _BLOCKING:
        raise BadOutput(f"{model}: answer blocked (finishReason {finish_name})")
    text = response.text
    if not text:
        raise BadOutput(f"{model}: empty answer")
    return LLMResponse(text, prompt_tokens, output_tokens, finish_name)


class GeminiClient:
    def __init__(self, api_key: str, *, base_url: str | None = None, api_version: str | None = None,
                 timeout_s: float = 60.0, thinking_budget: int | None = None):
        options = types.HttpOptions(timeout=int(timeout_s * 1000), base_url=base_url or None,
                                    api_version=api_version or None)
        register_secret(api_key)  # redacted from every error, log line and stored reason from now on
        self._client = genai.Client(api_key=api_key, http_options=options)
        self.timeout_s = timeout_s
        self.thinking_budget = thinking_budget

    def __repr__(self) -> str:  # never show the key
        return "GeminiClient(api_key=***)"

    @property
    def batches(self):
        """google-genai's async Batch API (pipeline/llm/batch_jobs.py submits and collects with it)."""
        return self._client.aio.batches

    def request(self, model: str, prompt: str, *, system: str | None, json_schema: type | None,
                max_output_tokens: int) -> tuple[str, types.GenerateContentConfig]:
        """The contents and config of one request, the same whether it goes alone or in a batch job."""
        gemma = is_gemma(model)
        if gemma and system:
            prompt = f"{system}\n\n{prompt}"
        config = types.GenerateContentConfig(
            temperature=0,
            max_output_tokens=max_output_tokens,
            system_instruction=None if gemma else system,
            response_mime_type=None if gemma or json_schema is None else "application/json",
            response_schema=None if gemma or json_schema is None else response_schema(json_schema),
            thinking_config=thinking_config(model, self.thinking_budget),
        )
        return prompt, config

    async def generate(self, model: str, prompt: str, *, system: str | None, json_schema: type | None,
                       max_output_tokens: int, timeout_s: float | None = None) -> LLMResponse:
        prompt, config = self.request(model, prompt, system=system, json_schema=json_schema,
                                      max_output_tokens=max_output_tokens)
        timeout_s = timeout_s or self.timeout_s
        if timeout_s != self.timeout_s:  # this request's own deadline (the client's options patched)
            config.http_options = types.HttpOptions(timeout=int(timeout_s * 1000))
        try:
            # Our own deadline too: a server that accepts the connection and then stalls must
            # not hang a run, whatever the transport does.
            response = await asyncio.wait_for(
                self._client.aio.models.generate_content(model=model, contents=prompt, config=config),
                timeout=timeout_s + 5,
            )
        # `from None` for the server's errors: google-genai's exception text is the whole error
        # JSON, which may quote the request (key included); ours keeps its code, status and message.
        except genai_errors.ClientError as exc:
            if exc.code == 429:
                raise RateLimited(f"{model}: rate limited (429 {exc.status})", retry_delay_of(exc)) from None
            if exc.code in (408,):
                raise Transient(f"{model}: request timeout (408)") from None
            raise Permanent(f"{model}: rejected with {exc.code} {exc.status}: {exc.message}") from None
        except genai_errors.ServerError as exc:
            raise Transient(f"{model}: server error {exc.code} {exc.status}") from None
        except (httpx2.TimeoutException, asyncio.TimeoutError) as exc:
            raise Transient(f"{model}: timed out after {timeout_s:g}s") from exc
        except httpx2.TransportError as exc:
            raise Transient(f"{model}: connection failed: {exc.__class__.__name__}") from exc
        return read_response(model, response)

    async def aclose(self) -> None:
        close = getattr(self._client.aio, "aclose", None)
        if close is not None:
            await close()
        closer = getattr(self._client, "close", None)
        if closer is not None:
            closer()
