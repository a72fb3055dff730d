"""An edit takes back what the old text said, however old the message (pipeline/ingest/writer.py
`_forget_edited`): its partition-day is queued like a deletion's and recomputed by the next run
even after day 7 (where a changed input alone is never looked at again), and facts lose the
message from their sources. Before: an edit of a message older than a week left its day's
summary, the search items made from it and its facts saying the old text for good."""

from __future__ import annotations

import datetime as dt
import re

from pipeline.clock import fixed_clock
from pipeline.ingest import ingest_messages
from tests.helpers import tokens_in_tables
from tests.integration.test_message_deletion import ANA, BO, G, GENERAL, at, mid, msg, prepared, run

D = dt.date.fromisoformat
TAKEN_BACK = re.compile("ZQXDELOLD")


def test_an_edit_of_an_old_message_takes_back_its_summary_items_and_facts(store, settings):
    prepared(store, settings)  # contexts as of 11-20: 11-01 is long out of the week
    assert {"daily_summaries", "memory_facts", "memory_items"} <= set(tokens_in_tables(store.engine, TAKEN_BACK))

    report = ingest_messages(store, [msg(1, GENERAL, ANA, "I moved last week", "2026-11-01", 9,
                                         edited_ts=at("2026-11-20", 13))],
                             settings, clock=fixed_clock(at("2026-11-20", 13)))
    assert (report.edited, report.new) == (1, 0)
    assert [(q["partition"], q["day"], q["reason"]) for q in store.queued_days()] == [
        (f"guild:{G}", D("2026-11-01"), "message edited")]
    assert not [f for f in store.memory_facts(user_ids=[ANA]) if "ZQXDELOLD" in f["text"]]  # in the edit's transaction

    rec = run(store, settings, "run", None, "2026-11-20", at("2026-11-20", 14))
    assert {c for c in rec.calls if c[0] in ("daily", "fold")} == {("daily", f"guild:{G}", D("2026-11-01"))}
    assert tokens_in_tables(store.engine, TAKEN_BACK) == {}
    assert store.queued_days() == []
    assert store.dailies([D("2026-11-01")], user_ids=[BO])  # the day is remade, not dropped
    assert run(store, settings, "run", None, "2026-11-20", at("2026-11-20", 15)).calls == []


def test_an_edit_that_still_says_it_keeps_the_fact(store, settings):
    """A typo fixed: the recompute proposes the fact again from the new text."""
    prepared(store, settings)
    before = [f for f in store.memory_facts(user_ids=[ANA]) if "Hades" in f["text"]]
    assert len(before) == 1 and f"{GENERAL}:{mid(4)}" in before[0]["sources"]

    ingest_messages(store, [msg(4, GENERAL, ANA, "hades is still my favourite game!!", "2026-11-03", 9,
                                edited_ts=at("2026-11-20", 13))], settings, clock=fixed_clock(at("2026-11-20", 13)))
    run(store, settings, "run", None, "2026-11-20", at("2026-11-20", 14))
    after = [f for f in store.memory_facts(user_ids=[ANA], active_only=True) if "Hades" in f["text"]]
    assert [f["text"] for f in after] == ["Favourite game is Hades"]
    assert f"{GENERAL}:{mid(4)}" in after[0]["sources"]


def test_an_edit_of_todays_message_is_left_to_the_next_run(store, settings):
    """Today's changed input is seen by the next run (whole, or by the hourly fold): not queued."""
    prepared(store, settings)
    report = ingest_messages(store, [msg(10, GENERAL, ANA, "hello again, folks", "2026-11-20", 9,
                                         edited_ts=at("2026-11-20", 13))], settings, clock=fixed_clock(at("2026-11-20", 13)))
    assert report.edited == 1 and store.queued_days() == []


def test_a_re_import_without_edits_queues_nothing(store, settings):
    prepared(store, settings)
    from tests.integration.test_message_deletion import MESSAGES

    report = ingest_messages(store, MESSAGES, settings, clock=fixed_clock(at("2026-11-20", 13)))
    assert (report.new, report.edited) == (0, 0)
    assert store.queued_days() == []
