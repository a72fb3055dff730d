"""The LLM's output contract: every answer is validated against one of these."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..memory.model import CATEGORIES


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore")


class FactOut(_Out):
    """A durable fact the speaker stated about themselves."""

    # Lenient where a model is sloppy (the stages validate what matters): confidence clamped to
    # [0, 1], an unknown category is "other", a date that is not YYYY-MM-DD is None, a source that
    # is not a message handle is dropped (handles not in the request: when the answer is read).
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    text: str = Field(min_length=1)
    category: Literal[CATEGORIES] = "other"  # type: ignore[valid-type]
    confidence: float = 0.0
    global_safe: bool = False
    sources: list[str] = []   # message handles: "m3"
    date: str | None = None   # YYYY-MM-DD (a string in the schema: the API's schema has no date type)
    key: str | None = None

    @field_validator("category", mode="before")
    @classmethod
    def _category(cls, v: Any) -> str:
        v = str(v or "").strip().lower()
        return v if v in CATEGORIES else {"skill": "skill/work", "work": "skill/work"}.get(v, "other")

    @field_validator("confidence", mode="before")
    @classmethod
    def _confidence(cls, v: Any) -> float:
        try:
            v = float(v)
        except (TypeError, ValueError):
            return 0.0
        return 0.0 if math.isnan(v) else min(max(v, 0.0), 1.0)

    @field_validator("global_safe", mode="before")
    @classmethod
    def _global_safe(cls, v: Any) -> bool:
        return v is True or (isinstance(v, str) and v.strip().lower() == "true")

    @field_validator("sources", mode="before")
    @classmethod
    def _sources(cls, v: Any) -> list[str]:
        if isinstance(v, (str, int)) and not isinstance(v, bool):
            v = [v]
        if not isinstance(v, list):
            return []
        out = []
        for item in v:
            text = str(item).strip() if isinstance(item, (str, int)) and not isinstance(item, bool) else ""
            if text.isdigit():
                text = f"m{text}"
            if len(text) > 1 and text[0] == "m" and text[1:].isdigit() and text not in out:
                out.append(text)
        return out

    @field_validator("date", mode="before")
    @classmethod
    def _date(cls, v: Any) -> str | None:
        try:
            return dt.date.fromisoformat(v.strip()[:10]).isoformat() if isinstance(v, str) else None
        except ValueError:
            return None

    @field_validator("key", mode="before")
    @classmethod
    def _key(cls, v: Any) -> str | None:
        return (v.strip().lower() or None) if isinstance(v, str) else None

    @property
    def day(self) -> dt.date | None:
        return dt.date.fromisoformat(self.date) if self.date else None


class RequestOut(_Out):
    """An in-chat memory request of the speaker to the bot (pipeline/memory/requests.py): remember
    a fact about themselves, or forget a topic; about_self false when a "remember" is about someone
    else (a forget is never refused: facts_out.requests_of)."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    kind: Literal["remember", "forget"]
    text: str = Field(min_length=1)  # remember: the fact, third person without the name; forget: the topic
    about_self: bool = False
    source: str                      # the message handle: "m3"

    @field_validator("kind", mode="before")
    @classmethod
    def _kind(cls, v: Any) -> str:
        return str(v or "").strip().lower()

    @field_validator("about_self", mode="before")
    @classmethod
    def _about_self(cls, v: Any) -> bool:
        return v is True or (isinstance(v, str) and v.strip().lower() == "true")

    @field_validator("source", mode="before")
    @classmethod
    def _source(cls, v: Any) -> str:
        text = str(v).strip() if isinstance(v, (str, int)) and not isinstance(v, bool) else ""
        return f"m{text}" if text.isdigit() else text


def _valid(model: type[BaseModel], v: Any) -> list:
    """The items of a list that validate; the others are dropped, not the whole answer."""
    if not isinstance(v, list):
        return []
    out = []
    for item in v:
        try:
            out.append(model.model_validate(item))
        except ValidationError:
            continue
    return out


class SpeakerSummary(_Out):
    speaker: str = Field(min_length=1)
    summary: str = Field(min_length=1)
    facts: list[FactOut] = []
    requests: list[RequestOut] = []

    @field_validator("requests", mode="before")
    @classmethod
    def _requests(cls, v: Any) -> list:
        return _valid(RequestOut, v)

    @field_validator("facts", mode="before")
    @classmethod
    def _facts(cls, v: Any) -> list:
        """A fact that does not validate (no text) is dropped, not the whole answer."""
        return _valid(FactOut, v)


class DailyOut(_Out):
    summaries: list[SpeakerSummary]


class HistoricalOut(_Out):
    summary: str = Field(min_length=1)


class MergeOut(_Out):
    context: str = Field(min_length=1)


class ForgetOut(_Out):
    forget: list[int]  # 1-based numbers of the listed facts that state the fact to forget

    def positions(self, count: int) -> list[int]:
        """0-based positions among `count` listed facts; a number out of range is dropped."""
        return sorted({n - 1 for n in self.forget if 1 <= n <= count})
