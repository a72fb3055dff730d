"""The interface the LLM summarizer calls. One request in, text and usage out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class LLMResponse:
    text: str
    prompt_tokens: int
    output_tokens: int
    finish_reason: str | None = None


class LLMClient(Protocol):
    async def generate(self, model: str, prompt: str, *, system: str | None, json_schema: type | None,
                       max_output_tokens: int, timeout_s: float | None = None) -> LLMResponse:
        """Send one request. Raises RateLimited, Transient, BadOutput or Permanent. `timeout_s`:
        this request's deadline when it is not the client's (a long answer expected)."""

    async def aclose(self) -> None: ...


def estimate_tokens(text: str) -> int:
    """Documented estimate used for rate limiting and budgets: ~4 characters per token
    (Gemini's own rule of thumb for English). Counting through the countTokens endpoint would
    spend a request per prompt against the same per-minute quota."""
    return len(text) // 4 + 1
