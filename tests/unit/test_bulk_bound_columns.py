"""The store's bulk writes bind a column at a time (pipeline/store/bulk.py `_bound_column`): the
values must be exactly what SQLAlchemy's processor binds value by value — the fixed-width UTC
text SQLite sorts by, a date's ISO text — and a value the processor refuses is refused alike."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from pipeline.db.engine import json_text
from pipeline.db.types import LocalDate, UtcDateTime
from pipeline.store.bulk import _bound_column

UTC = dt.timezone.utc
TIMES = [dt.datetime(2026, 11, 1, 10, 0, tzinfo=UTC),  # a whole second: msgspec writes no fraction
         dt.datetime(2026, 11, 1, 10, 0, 0, 5, tzinfo=UTC), None,
         dt.datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)]
DAYS = [dt.date(2026, 11, 1), None, dt.date(2026, 1, 9)]


def per_value(column_type, dialect, values):
    processor = column_type.dialect_impl(dialect).bind_processor(dialect)
    return processor, [processor(v) for v in values]


@pytest.mark.parametrize("dialect", [sqlite.dialect(), postgresql.dialect()], ids=["sqlite", "postgresql"])
@pytest.mark.parametrize("column_type, values", [
    (UtcDateTime(), TIMES),
    (UtcDateTime(), TIMES + [dt.datetime(2026, 11, 1, 12, 30, tzinfo=dt.timezone(dt.timedelta(hours=2)))]),
    (LocalDate(), DAYS),
    (LocalDate(), DAYS + [dt.datetime(2026, 11, 1, 1, 2, tzinfo=UTC)]),  # not a plain date: value by value
])
def test_a_column_binds_as_its_values_would_one_by_one(dialect, column_type, values):
    processor, expected = per_value(column_type, dialect, values)
    assert list(_bound_column(column_type, dialect, processor, values)) == expected
    if dialect.name == "sqlite" and isinstance(column_type, UtcDateTime):
        assert {len(v) for v in expected if v is not None} == {27}  # fixed width: text order is time order


def test_a_naive_time_is_refused_as_by_the_processor():
    dialect = sqlite.dialect()
    processor = UtcDateTime().dialect_impl(dialect).bind_processor(dialect)
    with pytest.raises(ValueError, match="timezone-aware"):
        _bound_column(UtcDateTime(), dialect, processor, TIMES + [dt.datetime(2026, 11, 1)])


def test_a_json_column_round_trips(tmp_path):
    """JSON columns are written by msgspec (json_text): what json.dumps would have written, read back."""
    value = {"sources": ["1170000000000000010:1190000000100000000", "manual"], "note": "café ✓", "n": 3, "x": None}
    engine = sa.create_engine(f"sqlite:///{tmp_path}/j.db", json_serializer=json_text)
    table = sa.Table("t", sa.MetaData(), sa.Column("doc", sa.JSON))
    table.create(engine)
    with engine.begin() as conn:
        conn.execute(table.insert(), [{"doc": value}])
        assert conn.execute(sa.select(table.c.doc)).scalar_one() == value
    assert json_text([dt.date(2026, 11, 1)]) == '["2026-11-01"]'
