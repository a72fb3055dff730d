"""Message deletion, on SQLite and PostgreSQL: `pipeline.ingest.delete_messages` (and the JSONL
`"deleted": true` row) removes the messages, queues their partition-days, strips them from the
facts' provenance; the next run recomputes exactly those partition-days wherever they are in
time, and afterwards a canary of a deleted message is in no row of any table (found by
reflecting the schema, as tests/integration/test_canaries.py does)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re

import pytest
from click.testing import CliRunner

from pipeline.clock import fixed_clock
from pipeline.errors import IdError
from pipeline.ingest import delete_messages, import_files, ingest_messages
from pipeline.runner import execute
from pipeline.testing import RecordingSummarizer
from tests.helpers import make_context, tokens_in_tables
from tests.integration.test_memory import Proposing, said

UTC = dt.timezone.utc
G = 1150000000000000701
GENERAL, DM_ANA = 1170000000000000701, 1170000000000000702
ANA, BO = 1160000000000000701, 1160000000000000702
NAMES = {ANA: "Ana", BO: "Bo"}
D = dt.date.fromisoformat
DELETED = re.compile(r"ZQXDEL[A-Z]+")


def mid(n: int) -> int:
    return 1190000000000070000 + n


def msg(n: int, channel: int, user: int, text: str, day: str, hour: int = 12, **extra) -> dict:
    row = {"message_id": mid(n), "channel_id": channel, "user_id": user, "user_name": NAMES[user], "text": text,
           "ts": dt.datetime.combine(D(day), dt.time(hour), UTC), **extra}
    if channel == GENERAL:
        return row | {"guild_id": G, "visibility": "public"}
    return row | {"guild_id": None, "visibility": "dm", "is_group": False}


def script(line):
    t = line.text.lower()
    out = []
    if "harbour" in t:
        out.append(said("Moved to ZQXDELOLD harbour", "identity"))
    if "hades" in t:
        out.append(said("Favourite game is Hades", "preference", 0.95, key="favourite game"))
    return out


MESSAGES = [
    msg(1, GENERAL, ANA, "I moved to ZQXDELOLD harbour last week", "2026-11-01", 9),       # deleted
    msg(2, GENERAL, BO, "good morning everyone, the farm is done", "2026-11-01", 10),
    msg(3, GENERAL, ANA, "hades is my favourite game ZQXDELHADES", "2026-11-02", 9),      # deleted: the day's only
    msg(4, GENERAL, ANA, "hades is still my favourite game", "2026-11-03", 9),
    msg(5, DM_ANA, ANA, "ZQXKEEPDM is my notebook name", "2026-11-05", 9),
    msg(6, DM_ANA, ANA, "ZQXDELDM was a private thought", "2026-11-10", 9),               # deleted by bare id
    msg(7, GENERAL, ANA, "ZQXDELRECENT was a great stream tonight", "2026-11-16", 9),     # deleted, day 5
    msg(8, GENERAL, BO, "I watched the stream too", "2026-11-16", 10, reply_to=mid(7)),
    msg(9, GENERAL, BO, "building a new sugar cane farm", "2026-11-18", 9),
    msg(10, GENERAL, ANA, "hello again folks", "2026-11-20", 9),
    msg(11, GENERAL, BO, "hi Ana, welcome back", "2026-11-20", 10),
]


def run(store, settings, kind: str, first: str | None, last: str, now: dt.datetime, cheap: bool = True):
    """cheap=False: the write path of a model summarizer (each item its own transaction; on
    PostgreSQL, items claimed one by one)."""
    rec = RecordingSummarizer(Proposing(settings, script), cheap=cheap)
    ctx = make_context(store, settings, now=now, summarizer=rec)
    result = asyncio.run(execute(ctx, kind, first and D(first), D(last)))
    assert result.status == "ok"
    return rec


def at(day: str, hour: int = 12) -> dt.datetime:
    return dt.datetime.combine(D(day), dt.time(hour), UTC)


def prepared(store, settings) -> None:
    """Messages summarised as of several day 1s: historical rows as of 11-05, 11-12 and 11-17
    quote the days the deletions touch; dailies of every day, contexts as of 11-20."""
    ingest_messages(store, MESSAGES, settings)
    run(store, settings, "replay", "2026-11-01", "2026-11-05", at("2026-11-05"))
    run(store, settings, "run", None, "2026-11-12", at("2026-11-12"))
    run(store, settings, "run", None, "2026-11-17", at("2026-11-17"))
    run(store, settings, "replay", "2026-11-01", "2026-11-20", at("2026-11-20"))


@pytest.mark.parametrize("cheap", [True, False], ids=["batched", "per-item"])
def test_a_deleted_message_leaves_no_trace_after_the_next_run_which_redoes_only_its_days(store, settings, cheap):
    prepared(store, settings)
    before = tokens_in_tables(store.engine, DELETED)
    assert {"chat_history", "daily_summaries", "historical_summaries", "memory_facts"} <= set(before)
    hades = [f for f in store.memory_facts(user_ids=[ANA]) if "Hades" in f["text"]]
    assert len(hades) == 1 and sorted(hades[0]["sources"]) == [f"{GENERAL}:{mid(3)}", f"{GENERAL}:{mid(4)}"]

    counts = delete_messages(store, [(GENERAL, mid(1)), (GENERAL, mid(3)), f"{GENERAL}:{mid(7)}", mid(6),
                                     (GENERAL, mid(99))], settings, clock=fixed_clock(at("2026-11-20", 13)))
    assert counts == {"requested": 5, "deleted": 4, "unknown": 1, "partition_days_queued": 4,
                      "facts_deleted": 1, "facts_updated": 1}
    assert {(q["partition"], q["day"]) for q in store.queued_days()} == {
        (f"guild:{G}", D("2026-11-01")), (f"guild:{G}", D("2026-11-02")), (f"guild:{G}", D("2026-11-16")),
        (f"dm:{DM_ANA}", D("2026-11-10"))}
    # the facts change with the deletion, in its transaction
    assert [f["text"] for f in store.memory_facts(user_ids=[ANA])] == ["Favourite game is Hades"]
    assert store.memory_facts(user_ids=[ANA])[0]["sources"] == [f"{GENERAL}:{mid(4)}"]
    (action,) = store.actions(str(ANA))
    assert action["action"] == "delete_messages" and action["requested_by"] is None and action["scope"] is None
    assert action["detail"] == {"messages": 4, "partition_days": 4, "facts_deleted": 1, "facts_updated": 1}
    assert action["rows_affected"] == 6

    rec = run(store, settings, "run", None, "2026-11-20", at("2026-11-20", 14), cheap=cheap)
    dailies = {c for c in rec.calls if c[0] in ("daily", "fold")}
    # exactly the affected partition-days that still have messages: 11-02 and the DM's 11-10 are empty now
    assert dailies == {("daily", f"guild:{G}", D("2026-11-01")), ("daily", f"guild:{G}", D("2026-11-16"))}
    assert tokens_in_tables(store.engine, DELETED) == {}
    assert "chat_history" in tokens_in_tables(store.engine, re.compile("ZQXKEEPDM"))  # the scan does see tokens
    assert store.queued_days() == []
    assert store.partition_days_between(f"guild:{G}", D("2026-11-02"), D("2026-11-02")) == {}
    assert store.dailies([D("2026-11-02")]) == []
    assert store.partition_days_between(f"dm:{DM_ANA}", D("2026-11-10"), D("2026-11-10")) == {}
    assert store.partition_days_between(f"guild:{G}", D("2026-11-01"), D("2026-11-01"))  # recomputed, kept
    # historical rows as of day 1s that quoted a changed day are gone; the current ones are remade
    assert {r["day"] for r in store.historicals([D("2026-11-05"), D("2026-11-17")])} == set()
    assert store.historicals([D("2026-11-20")], user_ids=[BO])  # Ana's only message of days 2-7 is gone
    assert not store.historicals([D("2026-11-20")], user_ids=[ANA])

    assert run(store, settings, "run", None, "2026-11-20", at("2026-11-20", 15), cheap=cheap).calls == []


def test_a_day_1_deletion_and_a_bare_id_reach_every_channel_with_that_id(store, settings):
    other = 1170000000000000703  # the same message id in another channel of the guild
    ingest_messages(store, [msg(1, GENERAL, ANA, "ZQXDELA first words", "2026-11-20", 9),
                            msg(1, GENERAL, BO, "ZQXDELB same id elsewhere", "2026-11-20", 10) | {"channel_id": other},
                            msg(2, GENERAL, BO, "ZQXKEEP stays", "2026-11-20", 11)], settings)
    run(store, settings, "run", None, "2026-11-20", at("2026-11-20"))
    counts = delete_messages(store, [str(mid(1))], settings, clock=fixed_clock(at("2026-11-20", 13)))
    assert counts["deleted"] == 2 and counts["unknown"] == 0 and counts["partition_days_queued"] == 1
    assert {a["subject_key"] for a in store.actions()} == {str(ANA), str(BO)}
    rec = run(store, settings, "run", None, "2026-11-20", at("2026-11-20", 14))
    assert {c for c in rec.calls if c[0] in ("daily", "fold")} == {("daily", f"guild:{G}", D("2026-11-20"))}
    assert tokens_in_tables(store.engine, DELETED) == {}
    assert tokens_in_tables(store.engine, re.compile("ZQXKEEP"))


def test_deleting_nothing_known_changes_nothing_and_bad_ids_are_refused(store, settings):
    ingest_messages(store, MESSAGES[:2], settings)
    assert delete_messages(store, [mid(50), (GENERAL, mid(51))], settings) == {
        "requested": 2, "deleted": 0, "unknown": 2, "partition_days_queued": 0, "facts_deleted": 0,
        "facts_updated": 0}
    assert store.actions() == [] and store.queued_days() == []
    for bad in ("1.5e18", "12:ab", (1, 2, 3), -4):
        with pytest.raises(IdError):
            delete_messages(store, [bad], settings)
    assert store.count_messages() == 2


def test_the_day_queued_is_the_local_day_of_the_guild(store, settings):
    tokyo = settings.model_copy(update={"timezones": settings.timezones.model_copy(
        update={"guilds": {G: "Asia/Tokyo"}})})
    ingest_messages(store, [msg(1, GENERAL, ANA, "late night in Tokyo", "2026-11-01", 20)], tokyo)
    delete_messages(store, [mid(1)], tokyo, clock=fixed_clock(at("2026-11-02")))
    assert [(q["partition"], q["day"], q["reason"]) for q in store.queued_days()] == [
        (f"guild:{G}", D("2026-11-02"), "message deleted")]


def _jsonl(path, rows) -> str:
    def plain(r):
        return {k: v.isoformat() if isinstance(v, dt.datetime) else str(v) if type(v) is int else v
                for k, v in r.items()}
    path.write_text("".join(json.dumps(plain(r)) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_a_jsonl_deletion_row_deletes_in_file_order(store, settings, tmp_path):
    first = _jsonl(tmp_path / "a.jsonl", MESSAGES[:4])
    import_files(store, [first], settings)
    rows = [
        {"message_id": str(mid(1)), "channel_id": str(GENERAL), "deleted": True},  # stored before
        msg(20, GENERAL, BO, "ZQXDELLATE typed then removed", "2026-11-03", 10),
        {"message_id": str(mid(20)), "deleted": True},                             # earlier in this file
        msg(21, GENERAL, BO, "a message after the deletions", "2026-11-03", 11),
        MESSAGES[2] | {"deleted": False},                                          # an ordinary message
        {"message_id": str(mid(77)), "deleted": True},                             # not stored: counted
    ]
    report = import_files(store, [_jsonl(tmp_path / "b.jsonl", rows)], settings)
    assert (report.read, report.new, report.unchanged, report.deletions, report.deleted, report.not_found) == \
        (6, 2, 1, 3, 2, 1)  # MESSAGES[2] was stored by the first import
    stored = {m["message_id"] for m in store.find_messages(message_ids=[mid(n) for n in (1, 2, 3, 4, 20, 21)])}
    assert stored == {mid(2), mid(3), mid(4), mid(21)}
    assert {(q["partition"], q["day"]) for q in store.queued_days()} == {(f"guild:{G}", D("2026-11-01")),
                                                                         (f"guild:{G}", D("2026-11-03"))}


def test_a_bad_deletion_row_writes_nothing(store, settings, tmp_path):
    path = _jsonl(tmp_path / "bad.jsonl", [MESSAGES[0], {"message_id": "12x", "deleted": True}])
    with pytest.raises(Exception, match="line 2"):
        import_files(store, [path], settings)
    assert store.count_messages() == 0
    path = _jsonl(tmp_path / "bad2.jsonl", [MESSAGES[0], {"message_id": "12", "deleted": "yes"}])
    with pytest.raises(Exception, match="line 2.*deleted"):
        import_files(store, [path], settings)


def test_mempipe_import_and_messages_delete(db_url, settings, tmp_path):
    from pipeline.cli import cli

    runner = CliRunner()
    base = ["--db", db_url]
    assert runner.invoke(cli, base + ["db", "upgrade"]).exit_code == 0
    path = _jsonl(tmp_path / "in.jsonl", MESSAGES[:4] + [{"message_id": str(mid(2)), "deleted": True}])
    out = runner.invoke(cli, base + ["import", path])
    assert out.exit_code == 0, out.output
    assert "deleted 1" in out.output
    out = runner.invoke(cli, base + ["messages", "delete", "--json", f"{GENERAL}:{mid(1)}", str(mid(3)), str(mid(98))])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout) == {"requested": 3, "deleted": 2, "unknown": 1, "partition_days_queued": 2,
                                      "facts_deleted": 0, "facts_updated": 0}
    out = runner.invoke(cli, base + ["messages", "delete", str(mid(4))])
    assert out.exit_code == 0 and "deleted 1 of 1 message" in out.output
    bad = runner.invoke(cli, base + ["messages", "delete", "12:x"])
    assert bad.exit_code == 2 and "12:x" in bad.output
    assert "CHANNEL:MESSAGE" in runner.invoke(cli, ["messages", "delete", "--help"]).output


def test_a_deleted_request_message_takes_its_pending_request_with_it(store, settings):
    """An in-chat request still waiting to be applied (a run noted it, another applies it) goes
    with its message: a deleted "remember that …" is never applied."""
    import sqlalchemy as sa

    from pipeline.stages.requests import apply_requests

    ts = dt.datetime(2026, 11, 3, 10, tzinfo=dt.timezone.utc)
    row = {"message_id": 1190000000000990001, "channel_id": 1170000000000990001, "guild_id": 1150000000000990001,
           "visibility": "public", "channel_name": "general", "user_id": 1160000000000990001, "user_name": "Ana",
           "text": "Remember that I'm allergic to cats.", "ts": ts}
    ingest_messages(store, [row], settings)
    store.record_requests([{"channel_id": row["channel_id"], "message_id": row["message_id"], "user_id": row["user_id"],
                            "partition": f"guild:{row['guild_id']}", "day": ts.date(), "ts": ts, "kind": "remember",
                            "text": "Is allergic to cats", "reason": None, "detected_at": ts}])
    delete_messages(store, [(row["channel_id"], row["message_id"])], settings)
    assert store.pending_requests() == []
    ctx = make_context(store, settings)
    asyncio.run(apply_requests(ctx))
    with store.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM memory_facts")).scalar_one() == 0
    assert tokens_in_tables(store.engine, re.compile("allergic")) == {}
