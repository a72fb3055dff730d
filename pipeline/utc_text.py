"""Times as SQLite stores them: fixed-width UTC text, "YYYY-MM-DDTHH:MM:SS.ffffffZ" (sorts as
it reads, compares as text). A module of its own, without SQLAlchemy, so that an import's reader
process (pipeline/ingest/reader.py) can make them without loading the database layer."""

from __future__ import annotations

import datetime as dt
from typing import Iterable

import msgspec

UTC = dt.timezone.utc


def to_utc_text(value: dt.datetime) -> str:
    """Fixed-width "YYYY-MM-DDTHH:MM:SS.ffffffZ" (isoformat is ~10x faster than strftime)."""
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _canonical_text(value):
    """A datetime subclass (freezegun's, pendulum's), which msgspec does not encode: as to_utc_text."""
    if isinstance(value, dt.datetime):
        return to_utc_text(value)
    raise NotImplementedError(f"cannot encode {type(value).__name__} as a time")


_TIMES_JSON = msgspec.json.Encoder(enc_hook=_canonical_text)
_TEXTS = msgspec.json.Decoder(list[str | None])


def utc_texts(values: Iterable[dt.datetime | None]) -> list[str | None]:
    """to_utc_text of many UTC datetimes at once (None stays None): msgspec writes RFC 3339 in C,
    "…SS.ffffffZ", or "…SSZ" at a whole second, which gets its zeros here. Per value, 0.06 µs
    against isoformat's 0.96 (300,000 distinct times of the bench's large corpus, best of 3)."""
    return [text if text is None or len(text) == 27 else text[:19] + ".000000Z"
            for text in _TEXTS.decode(_TIMES_JSON.encode(values))]
