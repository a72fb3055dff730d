"""LLM clients: an interface the summarizer calls, the Gemini/Gemma implementation over
google-genai, a per-model rate limiter and the retry policy."""

from .client import LLMClient, LLMResponse
from .errors import BadOutput, LLMError, QuotaExhausted, RateLimited, Transient

__all__ = ["LLMClient", "LLMResponse", "LLMError", "BadOutput", "QuotaExhausted", "RateLimited", "Transient"]
