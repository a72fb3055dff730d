"""The LLM's output contract: every answer is validated against one of these."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore")


class SpeakerSummary(_Out):
    speaker: str = Field(min_length=1)
    summary: str = Field(min_length=1)


class DailyOut(_Out):
    summaries: list[SpeakerSummary]


class HistoricalOut(_Out):
    summary: str = Field(min_length=1)


class MergeOut(_Out):
    context: str = Field(min_length=1)


class RememberOut(_Out):
    facts: str


class ForgetOut(_Out):
    facts: str
    found: bool
