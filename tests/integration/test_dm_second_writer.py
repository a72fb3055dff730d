"""A DM stays not one-to-one once a second person has written in it (ARCHITECTURE.md, "scope"),
whatever later removes that person's messages — retention, a message deletion, an erase: else
the DM's owner's other partitions (a restricted channel, another guild) would flow into a
context read in a conversation the other person still sees."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from pipeline import read
from pipeline.controls import OPERATOR, erase
from pipeline.ingest import delete_messages, ingest_messages
from pipeline.db.tables import channels, chat_history
from pipeline.retention import apply_retention
from pipeline.store import Store
from tests.integration.test_memory import ANA, BO, D1, DM_ANA, SECRET, UTC, msg, said
from tests.integration.test_memory_attacks import run_with
from tests.integration.test_migration_0004 import _upgrade_to

OLD = D1 - dt.timedelta(days=40)  # beyond the default 30 days of retention
BO_SAID = 1190000000000090001


def _removed_by_retention(store, settings):
    apply_retention(store, settings, now=dt.datetime.combine(D1, dt.time(1), UTC))


def _removed_by_deletion(store, settings):
    delete_messages(store, [BO_SAID], settings)


def _removed_by_erase(store, settings):
    erase(store, settings, BO, requested_by=OPERATOR)


@pytest.mark.parametrize("remove", [_removed_by_retention, _removed_by_deletion, _removed_by_erase])
def test_a_dm_whose_second_writers_messages_are_gone_still_reads_only_itself(store, settings, remove):
    # the input calls the DM one-to-one, but Bo wrote in it too (long ago)
    ingest_messages(store, [msg(1, DM_ANA, BO, "hello, it's Bo here", OLD)], settings)
    ingest_messages(store, [msg(2, DM_ANA, ANA, "hi bot", D1), msg(3, SECRET, ANA, "my cat Miso", D1, 14)], settings)
    remove(store, settings)
    run_with(store, settings, D1, {"miso": [said("Has a cat named Miso")]})
    rows = store.contexts(f"dm:{DM_ANA}", ANA)
    assert rows and "Miso" not in rows[0]["context"]
    assert read.search(f"dm:{DM_ANA}", ANA, "cat Miso", store=store) == []


def test_0020_marks_the_stored_dms_two_people_wrote_in_as_groups(db_url):
    store = Store.open(db_url, check_schema=False)
    try:
        _upgrade_to(store.engine, 19)
        two, one = 901, 902  # a DM said to be one-to-one with two writers, and a real one
        with store.engine.begin() as conn:
            for channel in (two, one):
                conn.execute(sa.insert(channels).values(channel_id=channel, guild_id=None, visibility="dm",
                                                        partition=f"dm:{channel}", is_group=False, one_to_one=True))
            for mid, channel, user in ((1, two, ANA), (2, two, BO), (3, one, ANA), (4, one, ANA)):
                conn.execute(sa.insert(chat_history).values(
                    message_id=mid, guild_id=None, channel_id=channel, visibility="dm", partition=f"dm:{channel}",
                    user_id=user, text="hi", ts=dt.datetime(2026, 9, 1, 12, mid, tzinfo=UTC),
                    ingested_at=dt.datetime(2026, 9, 1, 13, tzinfo=UTC)))
        store.upgrade()
        flags = {c: (r["is_group"], r["one_to_one"]) for c, r in store.channels().items()}
        assert flags == {two: (True, False), one: (False, True)}
    finally:
        store.close()
