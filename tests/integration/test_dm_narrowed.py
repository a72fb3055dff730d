"""A one-to-one DM's context reads its writer's other partitions (a restricted channel here). The
moment the DM stops being one-to-one — a second person writes in it, or an input says it is a
group — what was made for it as one-to-one must not be read by the bot any more (it reads the
stored row by key and asks nothing about the audience): its contexts and profiles go in that
same transaction (migration 0025), and a run that made them before the change does not write
them after it (store.write_batch `wider`). The next run makes them from the DM alone. On both
databases; the in-memory store does the same (pipeline/testing.py)."""

from __future__ import annotations

import asyncio

import sqlalchemy as sa

from pipeline import read
from pipeline.db.tables import memory_context, memory_profiles
from pipeline.ingest import ingest_messages
from pipeline.stages.facts import remember
from pipeline.testing import InMemoryStageStore
from tests.helpers import make_context
from tests.integration.test_dm_kinds import ANA, BO, DM, NOW, RES, _dm_context, _rows, _run

SCOPE = f"dm:{DM}"
BO_WRITES = {"message_id": 1190000000000000898, "user_id": BO, "user_name": "Bo",
             "text": "hi all, Bo joined this chat", "ts": "2026-11-02T21:00:00+00:00"}


def _rows_of(store, table) -> list:
    with store.engine.connect() as conn:
        return conn.execute(sa.select(table.c.user_id).where(table.c.scope == SCOPE)).all()


def _one_to_one_context(store, settings) -> None:
    ingest_messages(store, _rows(is_group=False), settings)
    asyncio.run(remember(make_context(store, settings, now=NOW), f"channel:{RES}", ANA,
                         "Moderates the castle raids", refresh=False))
    _run(store, settings)
    assert "ZQXRESTRICTED" in _dm_context(store)  # one-to-one: her restricted channel is hers to see
    assert _rows_of(store, memory_profiles)


def test_a_second_writer_takes_the_one_to_one_context_away_at_once(store, settings):
    _one_to_one_context(store, settings)
    ingest_messages(store, [_rows(is_group=False)[1] | BO_WRITES], settings)
    got = read.get_context(SCOPE, ANA, store=store)
    assert got is None or "ZQXRESTRICTED" not in got.text
    assert _rows_of(store, memory_context) == [] and _rows_of(store, memory_profiles) == []
    _run(store, settings)  # the next run: from the DM alone
    assert "ZQXDM" in _dm_context(store) and "ZQXRESTRICTED" not in _dm_context(store)


def test_an_input_that_says_group_takes_it_away_too(store, settings):
    _one_to_one_context(store, settings)
    ingest_messages(store, [_rows(is_group=True)[1] | {"message_id": 1190000000000000899}], settings)
    assert _rows_of(store, memory_context) == [] and _rows_of(store, memory_profiles) == []


def test_a_group_dms_own_context_stays_when_its_members_write(store, settings):
    """Only the change from one-to-one removes rows: a group DM's context (from the DM alone) is
    not made again for every message."""
    ingest_messages(store, _rows(is_group=False) + [_rows(is_group=False)[1] | BO_WRITES], settings)
    _run(store, settings)
    before = _dm_context(store)
    assert "ZQXDM" in before
    ingest_messages(store, [_rows(is_group=False)[1] | {"message_id": 1190000000000000897,
                                                        "ts": "2026-11-02T22:00:00+00:00"}], settings)
    assert _dm_context(store) == before


class _GroupedBeforeTheWrite:
    """The store of a run whose merge read the DM as one-to-one, and which a bot's import makes a
    group just before the run writes its contexts (the import commits first)."""

    def __init__(self, store, settings):
        self._store, self._settings, self.fired = store, settings, False

    def __getattr__(self, name):
        return getattr(self._store, name)

    def write_batch(self, *args, **kwargs):
        if kwargs.get("wider") and not self.fired:
            self.fired = True
            ingest_messages(self._store, [_rows(is_group=False)[1] | BO_WRITES], self._settings)
        return self._store.write_batch(*args, **kwargs)


def test_a_run_does_not_write_what_it_made_as_one_to_one_after_the_dm_became_a_group(store, settings):
    ingest_messages(store, _rows(is_group=False), settings)
    racing = _GroupedBeforeTheWrite(store, settings)
    _run(racing, settings)
    assert racing.fired  # the merge marked the DM's context as read beyond the DM
    assert "ZQXRESTRICTED" not in _dm_context(store)
    assert _rows_of(store, memory_context) == []


def test_the_in_memory_store_does_the_same(settings):
    store = InMemoryStageStore()
    ingest_messages(store, _rows(is_group=False), settings)
    _run(store, settings)
    assert "ZQXRESTRICTED" in _dm_context(store)
    ingest_messages(store, [_rows(is_group=False)[1] | BO_WRITES], settings)
    assert store.contexts(SCOPE) == []
