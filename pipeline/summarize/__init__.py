"""The summarizer seam (ARCHITECTURE.md, "The summarizer seam"): one interface, an extractive and
an LLM implementation.

The implementations are imported when first asked for (`__getattr__`), not with the package: they
use pipeline/memory/, whose modules use this package's leaves (base.py, text.py) — imported
eagerly here, importing pipeline.memory.requests or .validate first was an import cycle
(tests/unit/test_import_cycles.py)."""

from .base import ChatLine, Outcome, PartitionDay, Summarizer, Usage


def __getattr__(name: str):
    if name == "ExtractiveSummarizer":
        from .extractive import ExtractiveSummarizer
        return ExtractiveSummarizer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_summarizer(settings, *, environ=None) -> Summarizer:
    if settings.summarizer == "extractive":
        from .extractive import ExtractiveSummarizer
        return ExtractiveSummarizer(settings.summary)
    import os

    from ..errors import ConfigError
    from ..llm.gemini import GeminiClient
    from .llm import LLMSummarizer

    env = os.environ if environ is None else environ
    key = env.get(settings.gemini.api_key_env, "")
    if not key:
        raise ConfigError(
            f"summarizer = \"gemini\" needs an API key in the environment variable "
            f"{settings.gemini.api_key_env} (or use summarizer = \"extractive\", which works offline)")
    client = GeminiClient(key, base_url=settings.gemini.base_url, api_version=settings.gemini.api_version,
                          timeout_s=settings.gemini.timeout_s, thinking_budget=settings.gemini.thinking_budget)
    return LLMSummarizer(settings, client)


__all__ = ["ChatLine", "Outcome", "PartitionDay", "Summarizer", "Usage", "ExtractiveSummarizer", "make_summarizer"]
