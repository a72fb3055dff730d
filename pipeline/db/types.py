"""Column types that store the same values on SQLite and PostgreSQL.

SQLite has no timezone-aware timestamp: we store ISO-8601 UTC text with a fixed width so that
text order is time order. PostgreSQL gets real timestamptz / date columns.
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import TypeDecorator

from ..utc_text import to_utc_text

UTC = dt.timezone.utc


class UtcDateTime(TypeDecorator):
    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect):
        if dialect.name == "sqlite":
            return dialect.type_descriptor(sa.String())
        return dialect.type_descriptor(sa.DateTime(timezone=True))

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if not isinstance(value, dt.datetime) or value.tzinfo is None:
            raise ValueError(f"timestamps must be timezone-aware datetimes, got {value!r}")
        if dialect.name == "sqlite":
            return to_utc_text(value)
        return value.astimezone(UTC)

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        if isinstance(value, str):
            return dt.datetime.fromisoformat(value)  # our fixed "…Z" format; ~10x faster than strptime
        return value.astimezone(UTC)


class LocalDate(TypeDecorator):
    impl = sa.Date
    cache_ok = True

    def load_dialect_impl(self, dialect):
        if dialect.name == "sqlite":
            return dialect.type_descriptor(sa.String())
        return dialect.type_descriptor(sa.Date())

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if dialect.name == "sqlite":
            return value.isoformat()
        return value

    def process_result_value(self, value, dialect):
        if value is None or isinstance(value, dt.date):
            return value
        return dt.date.fromisoformat(value)


JsonDocument = sa.JSON().with_variant(JSONB(), "postgresql")
