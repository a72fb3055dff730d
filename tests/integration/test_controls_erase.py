"""clear and erase (pipeline/controls/clear.py) on both databases, on the dataset of
test_controls.py: what each removes, keeps and queues; after an erase no row of any table
(reflected, every column) holds a canary of the user — at once, after the next run, after a
replay of the whole range and after re-importing a file without the user — and the summaries
that quoted or named them are made again without them."""

from __future__ import annotations

import datetime as dt
import json

from pipeline.controls import OPERATOR, clear, erase, erased_key, user_audit
from pipeline.ingest import import_files
from tests.integration.test_controls import (ANA, ANA_FIRST, BO, CLOCK, CY, DM_ANA, G, GEN, MODS, NOW, canaries,
                                             load, others, replay, rows_about, run, with_admin)

DAYS = (dt.date(2026, 11, 3), dt.date(2026, 11, 4))


def facts_of(store, user_id) -> set[str]:
    return {f["partition"] for f in store.memory_facts(user_ids=[user_id])}


def summaries(store, user_id) -> set[str]:
    return {r["partition"] for r in store.dailies(DAYS, user_ids=[user_id])}


def bo_says(store) -> str:
    return " ".join(r["summary"] for r in store.dailies(DAYS, partition=f"guild:{G}", user_ids=[BO]))


# ---------------------------------------------------------------- clear

def test_clear_in_a_guild_removes_what_it_reads_and_keeps_the_rest(store, settings):
    load(store, settings)
    bo_before = bo_says(store)
    done = clear(store, settings, ANA, requested_by=ANA, scope=f"guild:{G}", clock=CLOCK)
    assert done["partitions"] == [f"guild:{G}"]
    assert summaries(store, ANA) == {f"channel:{MODS}", f"dm:{DM_ANA}"}
    assert facts_of(store, ANA) == {f"channel:{MODS}", f"dm:{DM_ANA}"}
    assert not store.historicals([NOW.date()], partition=f"guild:{G}", user_ids=[ANA])
    # every context of hers that read the guild is gone (the channel's and her DM's read it too)
    assert {r["scope"] for r in store.contexts(user_id=ANA)} == set()
    assert {r["scope"] for r in store.profiles(user_id=ANA)} == set()
    assert bo_says(store) == bo_before  # the next run remakes Bo's rows (queued)
    assert {(r["partition"], r["day"], r["reason"]) for r in store.queued_days()} == {
        (f"guild:{G}", d, "clear") for d in DAYS}
    windows = [(e["scope"], e["kind"], e["from_ts"], e["until_ts"]) for e in store.exclusions([ANA])]
    assert windows == [(f"guild:{G}", "clear", None, NOW)]
    assert len(store.user_messages(ANA)) == 4  # the history stays without --include-history
    audit = user_audit(store, settings, ANA, requested_by=ANA)[-1]
    assert (audit["action"], audit["scope"], audit["requested_by"]) == ("clear", f"guild:{G}", ANA)
    assert audit["detail"]["rows"] == {k: v for k, v in done["rows"].items() if v}
    assert audit["rows_affected"] == sum(done["rows"].values())

    run(store, settings)  # what she said before the clear is never summarised there again
    assert f"guild:{G}" not in summaries(store, ANA) | facts_of(store, ANA)
    said = " ".join(r["context"] for r in store.contexts(f"guild:{G}")).lower()
    assert "zqxanaville" not in said and "zqxanatea" not in said  # her words; her name may be mentioned
    assert {r["scope"] for r in store.contexts(user_id=ANA)} == {f"channel:{MODS}", f"dm:{DM_ANA}"}
    assert store.queued_days() == []


def test_clear_everywhere_with_history(store, settings):
    load(store, settings)
    admin = with_admin(settings)
    done = clear(store, admin, ANA, requested_by=CY, include_history=True, clock=CLOCK)
    assert done["partitions"] is None and done["rows"]["chat_history"] == 4
    assert store.user_messages(ANA) == []
    assert summaries(store, ANA) == facts_of(store, ANA) == set()
    assert store.contexts(user_id=ANA) == [] and store.profiles(user_id=ANA) == []
    assert [(e["scope"], e["kind"]) for e in store.exclusions([ANA])] == [("*", "clear")]
    assert store.forgotten([ANA])  # what she asked to forget stays forgotten
    assert store.member_names([ANA])  # her name stays: other people's messages mention her
    actions = user_audit(store, settings, ANA, requested_by=ANA)
    assert [(a["action"], a["requested_by"], a["detail"]["by"]) for a in actions][-1] == ("clear", CY, "admin")
    assert "delete_messages" not in {a["action"] for a in actions}  # folded into the clear's row
    run(store, settings)
    assert summaries(store, ANA) == set() and store.contexts(user_id=ANA) == []
    assert summaries(store, BO)  # the others' days are made again


def test_clear_in_her_own_dm_reaches_everything_the_dm_reads(store, settings):
    load(store, settings)
    done = clear(store, settings, ANA, requested_by=ANA, scope=f"dm:{DM_ANA}", clock=CLOCK)
    assert set(done["partitions"]) == {f"dm:{DM_ANA}", f"guild:{G}", f"channel:{MODS}"}
    assert summaries(store, ANA) == set()


# ---------------------------------------------------------------- erase

def test_erase_leaves_no_canary_in_any_row_of_any_table(store, settings, tmp_path):
    load(store, settings)
    clear(store, settings, ANA, requested_by=ANA, scope=f"channel:{MODS}", clock=CLOCK)  # an earlier control
    assert canaries(store)  # the scan sees them before
    assert "ZqxanaNick" in bo_says(store)  # Bo's summary names her (a mention rendered with her name)
    done = erase(store, settings, ANA, requested_by=ANA, clock=CLOCK)
    assert canaries(store) == {}
    assert done["rows"]["chat_history"] == 4 and done["rows"]["members"] == 3

    # nothing is about her any more but the audit, under the hash; one row added, no requester
    assert {t: rows for t, rows in rows_about(store, ANA).items() if rows} == {}
    key = erased_key(ANA)
    audit = [r for r in store.actions(key)]
    assert [r["action"] for r in audit] == ["clear", "erase"]
    assert audit[-1]["requested_by"] is None and audit[-1]["scope"] is None
    assert audit[-1]["detail"]["by"] == "subject" and audit[-1]["detail"]["rows"] == done["rows"]
    assert str(ANA) not in json.dumps([{k: str(v) for k, v in r.items()} for r in store.actions()])

    run(store, settings)  # the days that quoted or named her are made again, without her
    assert canaries(store) == {}
    assert "@someone" in bo_says(store) and "see you tonight" in bo_says(store)
    assert store.contexts(f"guild:{G}", BO) and store.contexts(f"guild:{G}", CY)  # made again
    replay(store, settings, "2026-11-03", "2026-11-05", now=NOW, force=True)
    assert canaries(store) == {}
    path = tmp_path / "again.jsonl"  # a re-import of what the others said (it mentions her id)
    path.write_text("\n".join(json.dumps(r, default=str) for r in others()) + "\n")
    import_files(store, [path], settings)
    run(store, settings)
    assert canaries(store) == {}
    assert store.member_names([ANA]) == {}


def test_erase_by_an_admin_keeps_the_admin_as_requester(store, settings):
    load(store, settings)
    done = erase(store, with_admin(settings), ANA, requested_by=CY, clock=CLOCK)
    (row,) = [r for r in store.actions(done["subject_key"])]
    assert (row["requested_by"], row["detail"]["by"]) == (CY, "admin")
    operator = erase(store, settings, BO, requested_by=OPERATOR, clock=CLOCK)
    (row,) = store.actions(operator["subject_key"])
    assert (row["requested_by"], row["detail"]["by"]) == (None, "operator")
    # erasing again finds nothing left but adds its row
    again = erase(store, settings, ANA, requested_by=ANA, clock=CLOCK)
    assert again["rows"] == {} and len(store.actions(done["subject_key"])) == 2


def test_erase_reaches_a_reply_and_a_mention_in_a_day_she_did_not_speak(store, settings):
    from pipeline.ingest import ingest_messages
    from tests.integration.test_controls import msg

    load(store, settings)
    ingest_messages(store, [msg(30, GEN, BO, f"Yesterday <@{ANA}> showed me her build, it was great.", 5, 9),
                            msg(31, GEN, CY, "Nice, I answered her question too.", 5, 10, reply_to=ANA_FIRST)],
                    settings)
    run(store, settings, now=NOW.replace(hour=18))
    assert any("ZqxanaNick" in r["summary"] for r in store.dailies([dt.date(2026, 11, 5)], user_ids=[BO]))
    erase(store, settings, ANA, requested_by=ANA, clock=CLOCK)
    assert canaries(store) == {}
    assert (f"guild:{G}", dt.date(2026, 11, 5)) in {(r["partition"], r["day"]) for r in store.queued_days()}
    run(store, settings, now=NOW.replace(hour=18))
    assert canaries(store) == {}
    assert store.dailies([dt.date(2026, 11, 5)], user_ids=[BO, CY])


def test_erase_leaves_a_guild_she_never_wrote_in_alone(store, settings):
    """Her name is learned per partition: where she never wrote, a word like it is someone
    else's (here Bo's boat), and the rows there are not deleted or made again."""
    from pipeline.ingest import ingest_messages
    from tests.integration.test_controls import msg

    other_guild, channel = 1150000000000000902, 1170000000000000909
    load(store, settings)
    ingest_messages(store, [msg(40, GEN, BO, "I named my boat ZqxanaNick after a friend.", 4, 16)
                            | {"channel_id": channel, "guild_id": other_guild}], settings)
    run(store, settings)
    theirs = store.dailies(DAYS, partition=f"guild:{other_guild}")
    assert theirs and "ZqxanaNick" in theirs[0]["summary"]
    erase(store, settings, ANA, requested_by=ANA, clock=CLOCK)
    assert store.dailies(DAYS, partition=f"guild:{other_guild}") == theirs
    assert store.contexts(f"guild:{other_guild}", BO)
    assert f"guild:{other_guild}" not in {r["partition"] for r in store.queued_days()}
