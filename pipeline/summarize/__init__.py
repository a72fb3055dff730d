"""The summarizer seam (DESIGN.md): one interface, an extractive and (later) an LLM implementation."""

from .base import ChatLine, Outcome, PartitionDay, Summarizer, Usage
from .extractive import ExtractiveSummarizer


def make_summarizer(settings) -> Summarizer:
    if settings.summarizer == "extractive":
        return ExtractiveSummarizer(settings.summary)
    from ..errors import ConfigError

    raise ConfigError(
        f"summarizer {settings.summarizer!r} is not available in this build; use summarizer = \"extractive\""
    )


__all__ = ["ChatLine", "Outcome", "PartitionDay", "Summarizer", "Usage", "ExtractiveSummarizer", "make_summarizer"]
