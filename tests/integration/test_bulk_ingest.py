"""Bulk ingest on both databases (see conftest): 100,000-message imports, idempotence, edits,
all-or-nothing, and PostgreSQL's COPY path (COPY -> temporary staging table -> one
INSERT … SELECT … ON CONFLICT per batch) giving the same rows as SQLite's executemany upsert."""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import json
import math
import random
import re
from pathlib import Path

import pytest
import sqlalchemy as sa

from pipeline.calendar import partition_for
from pipeline.db.tables import chat_history
from pipeline.errors import InputError, StoreError
from pipeline.ingest import import_files
from pipeline.ingest.importer import BATCH_SIZE
from pipeline.store import Store
from pipeline.store.ingest import MESSAGE_COLUMNS

UTC = dt.timezone.utc
BIG = 100_000
STAGING = "mempipe_stg_chat"

# ------------------------------------------------------------------------------ test data

GUILDS = (1150000000000000001, 1150000000000000002, 1150000000000000003)
# (channel id, guild id or None for a DM, visibility, is_group, name)
CHANNELS = (
    (1170000000000000010, GUILDS[0], "public", False, "general"),
    (1170000000000000011, GUILDS[0], "public", False, "builds"),
    (1170000000000000012, GUILDS[0], "restricted", False, "mods"),
    (1170000000000000020, GUILDS[1], "public", False, "lobby"),
    (1170000000000000021, GUILDS[1], "restricted", False, "staff"),
    (1170000000000000030, GUILDS[2], "public", False, "chat"),
    (1170000000000000500, None, "dm", False, "ana.k"),
    (1170000000000000501, None, "dm", True, "raid group"),
)
USERS = tuple((1160000000000000001 + i, name) for i, name in enumerate(
    ("Ana", "Bo", "Cy", "Dee", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lía")))
OFFSETS = tuple(dt.timezone(dt.timedelta(minutes=m)) for m in (0, 60, -240, 330, -420, 120))
OPENERS = ("I think", "Honestly", "ok so", "Does anyone know if", "lol", "Reminder:", "Quick question —",
           "Tonight", "Update:", "btw", "Yesterday", "Not sure but")
SUBJECTS = ("the nether highway", "our storage system", "the raid on Friday", "the new shaders",
            "shulker shells", "the server restart", "my redstone clock", "the villager trading hall",
            "the café map", "patch 1.21", "the event calendar", "Bo's castle")
ENDINGS = ("is finally done.", "needs 12 more blocks.", "starts at 8pm.", "broke again 😅", "looks great!",
           "is on the wiki now.", "— who's in?", "was way faster than expected.", "needs a vote.",
           "got moved to Saturday.", "is lagging a lot.", "??")
FIRST_ID = 1190000000100000000
START = dt.datetime(2026, 10, 20, 6, 0, tzinfo=UTC)


def generate_rows(n: int, *, seed: int = 20261105, first_id: int = FIRST_ID) -> list[dict]:
    """n deterministic JSONL messages: a few guilds, channels (public, restricted, DMs) and
    users, short texts, ISO timestamps with various offsets, some replies and some edits."""
    rnd = random.Random(seed)
    rows, now = [], START
    for i in range(n):
        now += dt.timedelta(seconds=rnd.randint(1, 40), microseconds=rnd.choice((0, 0, 250000, 123456)))
        channel_id, guild_id, visibility, is_group, channel_name = rnd.choice(CHANNELS)
        user_id, user_name = rnd.choice(USERS)
        zone = rnd.choice(OFFSETS)
        message_id = first_id + i
        row = {
            "message_id": str(message_id), "guild_id": None if guild_id is None else str(guild_id),
            "channel_id": str(channel_id), "visibility": visibility, "user_id": str(user_id),
            "user_name": user_name,
            "text": f"{rnd.choice(OPENERS)} {rnd.choice(SUBJECTS)} {rnd.choice(ENDINGS)}"
                    + (f" ({rnd.randint(1, 999)})" if rnd.random() < 0.3 else ""),
            "ts": now.astimezone(zone).isoformat(),
            "channel_name": channel_name,
        }
        if is_group:
            row["is_group"] = True
        if i and rnd.random() < 0.1:
            row["reply_to"] = str(message_id - rnd.randint(1, min(i, 50)))
        if rnd.random() < 0.05:
            row["edited_ts"] = (now + dt.timedelta(minutes=rnd.randint(1, 90))).astimezone(rnd.choice(OFFSETS)).isoformat()
        rows.append(row)
    return rows


def write_jsonl(path: Path, rows) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n")
    return path


@pytest.fixture(scope="module")
def big_rows() -> list[dict]:
    return generate_rows(BIG)


@pytest.fixture(scope="module")
def big_file(big_rows, tmp_path_factory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("bulk") / "big.jsonl", big_rows)


# ------------------------------------------------------------------------------ reading back

def _utc(value: dt.datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat()


def normalized(store: Store, *, ingested_at: bool = True) -> list[tuple]:
    """Every chat_history row in message id order, timestamps as UTC ISO strings (through the
    table's types, so both databases read alike)."""
    q = sa.select(chat_history).order_by(chat_history.c.message_id)
    with store.engine.connect() as conn:
        rows = conn.execute(q).mappings().all()
    return [(r["message_id"], r["guild_id"], r["channel_id"], r["visibility"], r["partition"], r["user_id"],
             r["text"], _utc(r["ts"]), r["reply_to"], _utc(r["edited_ts"]))
            + ((_utc(r["ingested_at"]),) if ingested_at else ())
            for r in rows]


def fingerprint(store: Store) -> tuple[int, str]:
    """(count, md5 of every row, normalized, in order): equal means nothing changed."""
    rows = normalized(store)
    return len(rows), hashlib.md5(repr(rows).encode()).hexdigest()


def pg_row_versions(store: Store) -> str:
    """PostgreSQL: md5 of every row's xmin. An UPDATE (even to the same values) changes it."""
    with store.engine.connect() as conn:
        return conn.exec_driver_sql(
            "SELECT md5(string_agg(xmin::text, ',' ORDER BY message_id)) FROM chat_history").scalar_one()


def texts(store: Store) -> dict[int, tuple[str, str | None]]:
    """message_id -> (text, edited_ts as UTC ISO)."""
    q = sa.select(chat_history.c.message_id, chat_history.c.text, chat_history.c.edited_ts)
    with store.engine.connect() as conn:
        return {r.message_id: (r.text, _utc(r.edited_ts)) for r in conn.execute(q)}


class StatementLog:
    """Every statement SQLAlchemy sends on an engine (COPY data goes through psycopg directly
    and is not seen here)."""

    def __init__(self, engine: sa.engine.Engine):
        self.engine, self.statements = engine, []
        sa.event.listen(engine, "before_cursor_execute", self._record)

    def _record(self, conn, cursor, statement, parameters, context, executemany):
        self.statements.append((" ".join(statement.split()), executemany))

    def close(self):
        sa.event.remove(self.engine, "before_cursor_execute", self._record)

    def matching(self, pattern: str) -> list[tuple[str, bool]]:
        return [s for s in self.statements if re.search(pattern, s[0], re.IGNORECASE)]


# ------------------------------------------------------------------------------ tests


@pytest.mark.slow
def test_importing_100k_messages_twice_leaves_100k_unchanged_rows(store, settings, big_file):
    first = import_files(store, big_file, settings)
    assert (first.read, first.new, first.skipped, first.cut) == (BIG, BIG, 0, 0)
    assert store.count_messages() == BIG
    before = fingerprint(store)
    versions = pg_row_versions(store) if store.dialect == "postgresql" else None

    again = import_files(store, big_file, settings)

    assert (again.new, again.edited, again.unchanged) == (0, 0, BIG)  # read again, counted unchanged...
    assert store.count_messages() == BIG
    assert fingerprint(store) == before  # ...but no row changed, not even ingested_at
    if versions is not None:
        assert pg_row_versions(store) == versions  # and none was rewritten to the same values
    with store.engine.connect() as conn:
        stored = set(conn.execute(sa.select(chat_history.c.partition).distinct()).scalars())
    assert stored == {partition_for(vis, guild, channel) for channel, guild, vis, _, _ in CHANNELS}


def test_postgresql_ingest_goes_through_copy(store, settings, tmp_path, db_kind):
    if db_kind != "postgresql":
        pytest.skip("the COPY path is PostgreSQL's")
    n = 2 * BATCH_SIZE + 1234
    path = write_jsonl(tmp_path / "three-batches.jsonl", generate_rows(n))
    batches = math.ceil(n / BATCH_SIZE)
    log = StatementLog(store.engine)
    try:
        report = import_files(store, path, settings)
    finally:
        log.close()
    assert report.new == n and store.count_messages() == n
    # new messages are copied straight into chat_history: no row-by-row INSERT, no staging
    assert not log.matching(r"\bINSERT INTO chat_history\b")
    assert not log.matching(rf"^CREATE TEMPORARY TABLE {STAGING}")
    # no read of the stored keys: each batch is guessed new and copied (pipeline/ingest/writer.py)
    assert not log.matching(r"\bFROM json_array_elements\(")

    # the same file again: every key is stored, so each batch goes COPY -> staging -> one upsert
    log = StatementLog(store.engine)
    try:
        import_files(store, path, settings)
    finally:
        log.close()
    assert store.count_messages() == n
    # the first batch's guess fails on its stored keys; from then on each batch's are read first
    # (one read a batch; the COPY's split reuses its answer)
    assert len(log.matching(r"\bFROM json_array_elements\(")) == batches
    inserts = log.matching(r"^INSERT INTO chat_history\b")
    assert len(inserts) == batches
    for statement, executemany in inserts:  # one set-based statement per batch, no row values
        assert not executemany
        assert f"FROM {STAGING}" in statement and "ON CONFLICT (channel_id, message_id) DO UPDATE" in statement
        assert "VALUES" not in statement.upper()
    # the staging table: created once per transaction, emptied between batches, dropped at commit
    assert len(log.matching(rf"^CREATE TEMPORARY TABLE {STAGING} .*ON COMMIT DROP")) == 1
    assert len(log.matching(rf"^TRUNCATE {STAGING}")) == batches - 1
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql(f"SELECT to_regclass('pg_temp.{STAGING}')").scalar_one() is None


def test_postgresql_a_concurrent_copy_of_new_messages_goes_through_the_upsert(store, settings, tmp_path, db_kind):
    """A message stored before a batch makes the batch's guess (copy it all as new) fail: the
    batch is read, that message counted unchanged. A message another writer stores between that
    read and the COPY of the batch's new messages makes that COPY fail on the key too, and the
    batch is merged by the upsert."""
    if db_kind != "postgresql":
        pytest.skip("the COPY path is PostgreSQL's")
    from pipeline.store import ingest as store_ingest

    rows = generate_rows(50)
    import_files(store, write_jsonl(tmp_path / "first.jsonl", rows[:1]), settings)
    path = write_jsonl(tmp_path / "race.jsonl", rows)
    real = store_ingest._pg_copy
    copies: list[int] = []

    def raced(conn, name, records, *, savepoint):
        if name == "pg_copy_new":
            copies.append(len(records))
            if len(copies) == 2:  # as if another writer stored the first new one after the batch was read
                conn.execute(sa.insert(chat_history), [dict(zip(MESSAGE_COLUMNS, records[0]))])
        return real(conn, name, records, savepoint=savepoint)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(store_ingest, "_pg_copy", raced)
        report = import_files(store, path, settings)
    assert copies == [50, 49]  # the guess of all 50, then the 49 the read found new
    # counts of what the import read: the raced row was not stored when the batch was read
    assert (report.new, report.unchanged) == (49, 1)
    assert store.count_messages() == 50
    assert [r[0] for r in normalized(store)] == sorted(int(r["message_id"]) for r in rows)


def _edit_cases(base: list[dict]) -> tuple[list[dict], dict[int, str]]:
    """The base rows again, with edits on chosen messages spread over every batch. Returns the
    new rows and message id -> the case expected to replace the text ("new") or keep it ("old")."""
    later = lambda r, minutes: (dt.datetime.fromisoformat(r["edited_ts"]) + dt.timedelta(minutes=minutes))
    rows = [dict(r) for r in base]
    expect: dict[int, str] = {}
    edited = [r for r in rows if "edited_ts" in r]
    unedited = [r for r in rows if "edited_ts" not in r]
    for k, r in enumerate(edited):
        case = k % 5
        r["text"] = f"EDIT {k}: " + r["text"]
        if case == 0:    # newer edit, written in another offset: replaces
            r["edited_ts"] = later(r, 3).astimezone(OFFSETS[2]).isoformat()
        elif case == 1:  # older edit: ignored
            r["edited_ts"] = later(r, -1).isoformat()
        elif case == 2:  # the same instant written in another offset: not newer, ignored
            r["edited_ts"] = later(r, 0).astimezone(OFFSETS[3]).isoformat()
        elif case == 3:  # no edit time at all: ignored
            del r["edited_ts"]
        else:            # newer by a microsecond: replaces
            r["edited_ts"] = (later(r, 0) + dt.timedelta(microseconds=1)).isoformat()
        expect[int(r["message_id"])] = "new" if case in (0, 4) else "old"
    for k, r in enumerate(unedited[::97]):
        if k % 2:        # first edit of a message stored unedited: replaces
            r["edited_ts"] = dt.datetime.fromisoformat(r["ts"]).isoformat()
            r["text"] = "first edit: " + r["text"]
            expect[int(r["message_id"])] = "new"
        else:            # a different text without an edit time: ignored
            r["text"] = "silently changed: " + r["text"]
            expect[int(r["message_id"])] = "old"
    return rows, expect


def test_newer_edits_replace_text_and_older_ones_do_not(store, settings, tmp_path):
    n = 2 * BATCH_SIZE + 777
    base = generate_rows(n, seed=7)
    import_files(store, write_jsonl(tmp_path / "base.jsonl", base), settings)
    before = texts(store)
    edited, expect = _edit_cases(base)
    assert {"new", "old"} == set(expect.values()) and len(expect) > 100
    # and, within one file, the same message twice: the later edit wins whatever the line order
    twice = int(edited[-1]["message_id"])
    dup_new = dict(edited[-1], text="twice: newest", edited_ts="2030-01-01T00:00:00+09:00")
    dup_old = dict(edited[-1], text="twice: older", edited_ts="2029-12-31T23:00:00+10:00")  # 2 h earlier
    edited = [dup_new] + edited + [dup_old]

    report = import_files(store, write_jsonl(tmp_path / "edits.jsonl", edited), settings)
    # each row counted by what it did: the "new" cases and the first copy of `twice` (newer than
    # its stored text) replaced a text; its two later copies are older than that copy's edit
    replaced = sum(1 for m, case in expect.items() if case == "new" and m != twice) + 1
    assert (report.new, report.edited, report.unchanged) == (0, replaced, len(edited) - replaced)
    after = texts(store)
    assert len(after) == n
    by_id = {int(r["message_id"]): r for r in edited[1:-1]}
    for message_id, case in expect.items():
        if message_id == twice:
            continue
        if case == "new":
            row = by_id[message_id]
            assert after[message_id] == (row["text"], _utc(dt.datetime.fromisoformat(row["edited_ts"]))), message_id
        else:
            assert after[message_id] == before[message_id], message_id
    assert after[twice] == ("twice: newest", "2029-12-31T15:00:00+00:00")
    untouched = set(before) - set(expect) - {twice}
    assert {m: after[m] for m in untouched} == {m: before[m] for m in untouched}


def test_a_bad_line_late_in_a_big_file_writes_nothing(store, settings, tmp_path, big_rows):
    import_files(store, write_jsonl(tmp_path / "earlier.jsonl", generate_rows(500, seed=3, first_id=FIRST_ID - 1000)),
                 settings)
    before = fingerprint(store)
    late = 6 * BATCH_SIZE + 10  # six batches were written (and on PostgreSQL staged) before it
    bad = dict(big_rows[late], ts="yesterday")
    lines = list(itertools.islice(big_rows, late)) + [bad] + big_rows[late + 1: late + 100]
    path = write_jsonl(tmp_path / "late-error.jsonl", lines)

    with pytest.raises(InputError, match=rf"line {late + 1}\b.*ts"):
        import_files(store, path, settings)
    assert store.count_messages() == 500
    assert fingerprint(store) == before
    if store.dialect == "postgresql":
        with store.engine.connect() as conn:  # rolled back with the transaction
            assert conn.exec_driver_sql(f"SELECT to_regclass('pg_temp.{STAGING}')").scalar_one() is None

    # the same store (and pooled connection) imports fine afterwards
    fixed = write_jsonl(tmp_path / "fixed.jsonl", lines[:late] + lines[late + 1:])
    import_files(store, fixed, settings)
    assert store.count_messages() == 500 + len(lines) - 1


def test_a_database_error_in_a_batch_is_a_store_error_and_writes_nothing(store):
    now = dt.datetime(2026, 11, 2, 18, 0, tzinfo=UTC)
    good = {"message_id": 1, "guild_id": GUILDS[0], "channel_id": CHANNELS[0][0], "visibility": "public",
            "partition": f"guild:{GUILDS[0]}", "user_id": USERS[0][0], "text": "hi", "ts": now,
            "reply_to": None, "edited_ts": None, "ingested_at": now}
    with pytest.raises(StoreError):
        with store.transaction() as conn:
            store.write_messages(conn, [good])
            store.write_messages(conn, [dict(good, message_id=2, user_id=None)])  # NOT NULL
    assert store.count_messages() == 0
    with pytest.raises(StoreError, match="timezone-aware"):
        with store.transaction() as conn:
            store.write_messages(conn, [dict(good, ts=now.replace(tzinfo=None))])
    assert store.count_messages() == 0


def test_a_batch_stores_what_its_rows_written_one_at_a_time_store(store, sqlite_store):
    """SQLite writes ten rows a statement (pipeline/store/ingest.py `_sqlite_upsert`), PostgreSQL
    copies: either way a batch (each message once: the writer merges copies first) — new
    messages, then newer and older edits of them, a copy by another author, rows past the last
    whole ten — stores what its rows written one at a time into another database store."""
    now = dt.datetime(2026, 11, 2, 18, 0, tzinfo=UTC)
    later = now + dt.timedelta(hours=1)

    def row(i: int, **changes) -> dict:
        channel = CHANNELS[i % 3]
        return {"message_id": FIRST_ID + i, "guild_id": channel[1], "channel_id": channel[0],
                "visibility": channel[2], "partition": partition_for(channel[2], channel[1], channel[0]),
                "user_id": USERS[i % 5][0], "text": f"message {i}", "ts": now + dt.timedelta(minutes=i),
                "reply_to": None, "edited_ts": None, "ingested_at": now, "author_name": USERS[i % 5][1]} | changes

    first = [row(i, edited_ts=now if i % 4 == 0 else None) for i in range(23)]
    second = [row(i, text=f"edit of {i}", edited_ts=later) if i % 3 == 0 else row(i) for i in range(17, 40)]
    second[3] = row(20, text="an older edit", edited_ts=now - dt.timedelta(minutes=1))  # than its stored one
    second[2] = row(19, text="by someone else", user_id=USERS[0][0], edited_ts=later)  # not theirs: left alone
    for target, batches in ((store, [first, second]), (sqlite_store, [[r] for r in first + second])):
        for rows in batches:
            with target.transaction() as conn:
                target.write_messages(conn, rows)
    assert normalized(store) == normalized(sqlite_store)
    stored = texts(store)
    assert len(stored) == 40 and [stored[FIRST_ID + i][0] for i in (17, 18, 19, 20, 21, 39)] == \
        ["message 17", "edit of 18", "message 19", "message 20", "edit of 21", "edit of 39"]


@pytest.mark.slow
def test_postgresql_and_sqlite_store_the_same_rows(store, settings, tmp_path, db_kind, big_file, big_rows):
    if db_kind != "postgresql":
        pytest.skip("compares PostgreSQL with SQLite")
    lite = Store.open(f"sqlite:///{tmp_path}/same.db", check_schema=False)
    try:
        lite.upgrade()
        edits, _ = _edit_cases(big_rows[:3 * BATCH_SIZE])
        edits_file = write_jsonl(tmp_path / "edits.jsonl", edits)
        for target in (store, lite):
            import_files(target, big_file, settings)
            import_files(target, edits_file, settings)
        pg_rows, lite_rows = normalized(store, ingested_at=False), normalized(lite, ingested_at=False)
    finally:
        lite.close()
    assert len(pg_rows) == BIG
    assert pg_rows == lite_rows


def test_the_bulk_statements_list_chat_historys_columns_in_table_order():
    """SQLite's executemany and PostgreSQL's direct COPY take tuples in chat_history's column order."""
    from pipeline.db.queries import query

    for name in ("pg_copy_new", "sqlite_messages_upsert"):
        listed = re.search(r"chat_history \(([a-z_, ]+)\)", query(name)).group(1)
        assert [c.strip() for c in listed.split(",")] == list(MESSAGE_COLUMNS), name
