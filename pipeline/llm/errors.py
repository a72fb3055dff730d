"""What can go wrong with one model request, sorted by what to do about it."""

from __future__ import annotations

from ..errors import SummarizerError
from ..safety import redact


class LLMError(SummarizerError):
    """Its text is redacted when it is made: a server error may quote the request, key included,
    and this text becomes log lines, stored degraded reasons and run errors."""

    retryable = False

    def __init__(self, message: str = "", *args):
        super().__init__(redact(message), *args)


class RateLimited(LLMError):
    """HTTP 429. `retry_after` is the server's retryDelay in seconds when it gave one."""

    retryable = True

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class Transient(LLMError):
    """5xx, timeouts, connection errors: worth another try."""

    retryable = True


class BadOutput(LLMError):
    """A 200 answer we cannot use: malformed or truncated JSON, blocked, wrong shape."""

    retryable = True


class AnswerCutShort(BadOutput):
    """The answer reached max_output_tokens (finishReason MAX_TOKENS). The same request is likely
    cut short again, at full price: a daily or fold piece of several messages is asked in two
    halves instead (LLMSummarizer.daily); anything else is retried as a bad answer. `billed`:
    its (prompt, output) tokens, paid for all the same."""

    def __init__(self, message: str = "", billed: tuple[int, int] = (0, 0)):
        super().__init__(message)
        self.billed = billed


class QuotaExhausted(LLMError):
    """The configured daily request quota is spent: use the fallback without trying."""


class Permanent(LLMError):
    """4xx other than 429 (bad key, model unknown, request rejected): retrying will not help."""


def fallback_reason(exc: BaseException) -> str:
    """The degraded_reason stored when the extractive fallback replaced the model's answer."""
    return redact(f"fallback: {exc}")
