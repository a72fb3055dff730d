"""The typed JSONL path (a line decoded straight into model.JsonlRow, then Validator.typed) gives
every line the result the dict path (json, then Validator) gives it: the same MessageIn or
DeletionIn, or the same error naming the same problems. The typed path only skips checks msgspec
made already; anything else falls back to the dict path."""

from __future__ import annotations

import datetime as dt
import itertools
import json

import pytest

from pipeline.ingest.jsonl import read_jsonl
from pipeline.ingest.model import JsonlRow, RowError, Validator
from pipeline.store.ingest import utc_texts
from pipeline.db.types import to_utc_text

UTC = dt.timezone.utc
GOOD = {"message_id": "1190000000000000001", "guild_id": "1150000000000000001", "channel_id": "1170000000000000010",
        "visibility": "public", "user_id": "1160000000000000001", "user_name": "Ana", "text": "hello",
        "ts": "2026-11-02T18:22:10.5+01:00"}

# each a change to GOOD: a value; None leaves the key out, but for guild_id and reply_to, where it is null
CHANGES = [
    {}, {"message_id": 1190000000000000001}, {"guild_id": 1150000000000000001}, {"user_id": 1160000000000000001},
    {"message_id": "12.0"}, {"message_id": 12.0}, {"message_id": True}, {"message_id": -5}, {"message_id": "-5"},
    {"message_id": 2**63}, {"message_id": str(2**63 - 1)}, {"message_id": 10**30}, {"message_id": " 1"},
    {"message_id": "١٢"}, {"message_id": None}, {"guild_id": None}, {"guild_id": 0}, {"guild_id": "0"},
    {"channel_id": "x"}, {"visibility": "dm"}, {"visibility": "dm", "guild_id": None},
    {"visibility": "restricted"}, {"visibility": "secret"}, {"visibility": None}, {"visibility": 1},
    {"user_name": 5}, {"user_name": "A\x00na"}, {"user_name": "  Ana  "}, {"user_name": None},
    {"text": "nul\x00inside"}, {"text": ""}, {"text": ["a"]}, {"text": None},
    {"ts": "2026-11-02T18:22:10"}, {"ts": "2026-11-02 18:22:10Z"}, {"ts": "2026-11-02T18:22:10.1234567+00:00"},
    {"ts": "20261102T182210Z"}, {"ts": "yesterday"}, {"ts": 1762107730}, {"ts": "1969-12-31T23:59:59Z"},
    {"ts": "9999-01-01T00:00:00Z"}, {"ts": "0001-01-01T00:00:00+01:00"}, {"ts": None},
    {"reply_to": "1190000000000000000"}, {"reply_to": 5}, {"reply_to": 5.5}, {"reply_to": None},
    {"edited_ts": "2026-11-02T19:00:00Z"}, {"edited_ts": "2026-11-02T19:00:00"}, {"edited_ts": 3},
    {"is_group": True}, {"is_group": False}, {"is_group": "yes"}, {"is_group": 1}, {"is_group": 2},
    {"is_group": True, "visibility": "dm", "guild_id": None}, {"is_group": False, "visibility": "dm", "guild_id": None},
    {"channel_name": "general"}, {"channel_name": "gen\x00eral"}, {"channel_name": 7},
    {"deleted": False}, {"deleted": True}, {"deleted": None}, {"deleted": 1}, {"deleted": "true"},
    {"extra": {"nested": [1, 2]}},
]
ROWS = [{k: v for k, v in {**GOOD, **change}.items() if v is not None or k in ("guild_id", "reply_to")}
        for change in CHANGES]
ROWS += [{"message_id": "7", "channel_id": "1170000000000000010", "deleted": True},
         {"message_id": "7", "deleted": True}, {"message_id": "7"}, {}]
ROWS += [{k: v for k, v in GOOD.items() if k != left_out} for left_out in GOOD]


def _outcome(call):
    try:
        return call()
    except RowError as exc:
        return ("error", str(exc))


def _lines():
    for row in ROWS:
        yield json.dumps(row)
    # what json.dumps never writes: a lone surrogate escape, duplicate keys
    yield json.dumps(GOOD)[:-1] + ', "text": "x\\ud800y"}'
    yield json.dumps(GOOD)[:-1] + ', "user_id": "1160000000000000002"}'


@pytest.mark.parametrize("line", list(_lines()))
def test_a_line_reads_the_same_typed_or_as_a_dict(tmp_path, line):
    path = tmp_path / "rows.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    [(_, typed)] = list(read_jsonl(path, JsonlRow))
    [(_, plain)] = list(read_jsonl(path))
    assert type(plain) is dict
    expected = _outcome(lambda: Validator()(plain))
    got = _outcome(lambda: Validator().typed(typed) if type(typed) is JsonlRow else Validator()(typed))
    assert got == expected


def test_most_good_lines_take_the_typed_path(tmp_path):
    # the fast path is the one taken: otherwise the test above compares the dict path with itself
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({**GOOD, **change}) + "\n" for change in CHANGES[:4]), encoding="utf-8")
    assert [type(row) for _, row in read_jsonl(path, JsonlRow)] == [JsonlRow] * 4


def test_one_validator_remembers_ids_without_mixing_them():
    # ids are remembered by their text: a later row with the same text gets the same number
    validator = Validator()
    rows = [JsonlRow(**{**GOOD, "user_id": user}) for user in ("1", "01", "1", "2")]
    assert [validator.typed(r).user_id for r in rows] == [1, 1, 1, 2]


TIMES = [dt.datetime(2026, 11, 2, 18, 22, 10, tzinfo=UTC), dt.datetime(2026, 11, 2, 18, 22, 10, 1, tzinfo=UTC),
         dt.datetime(2026, 11, 2, 18, 22, 10, 500000, tzinfo=UTC), dt.datetime(1970, 1, 1, tzinfo=UTC),
         dt.datetime(9998, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)]


class SubclassedDatetime(dt.datetime):  # what freezegun's and pendulum's clocks hand out
    pass


def test_utc_texts_are_to_utc_text():
    values = [*TIMES, None, SubclassedDatetime(2026, 11, 2, 1, 2, 3, tzinfo=UTC),
              SubclassedDatetime(2026, 11, 2, 1, 2, 3, 4, tzinfo=UTC)]
    values += [t + dt.timedelta(microseconds=n * 37_013) for t, n in itertools.product(TIMES[:3], range(40))]
    assert utc_texts(values) == [None if v is None else to_utc_text(v) for v in values]
