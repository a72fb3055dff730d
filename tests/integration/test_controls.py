"""User controls (pipeline/controls/, README "User controls") on both databases: who may ask,
what show and export return (export: exactly the rows a schema scan finds), what pause, clear
and erase remove, and the audit they leave. Tables are found by reflecting the database, so a
table added later is dumped, scanned and exported without editing this file.

Dataset: guild G with a public channel (GEN) and a restricted one (MODS); Ana's one-to-one DM.
Ana (the subject) speaks everywhere, with "zqxana…" canaries in her words, her display names,
a remembered fact and a forgotten fact; Bo mentions and answers her in GEN; Cy is an admin;
Dee is nobody in particular.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re

import pytest
import sqlalchemy as sa

from pipeline import controls
from pipeline.clock import fixed_clock
from pipeline.controls import (OPERATOR, PermissionDenied, clear, erase, erased_key, pause, resume, user_audit,
                               user_export, user_show)
from pipeline.db.tables import is_search_index, memory_items
from pipeline.ingest import ingest_messages
from pipeline.stages.facts import forget, remember
from tests.helpers import make_context, replay, tokens_in_tables

UTC = dt.timezone.utc
G = 1150000000000000901
GEN, MODS, DM_ANA = 1170000000000000901, 1170000000000000902, 1170000000000000903
ANA, BO, CY, DEE = 1160000000000000901, 1160000000000000902, 1160000000000000903, 1160000000000000904
NAMES = {ANA: {GEN: "ZqxanaNick", MODS: "ZqxanaNick", DM_ANA: "ZqxanaGlobal"}, BO: "Bo", CY: "Cy"}
CANARY = re.compile(r"zqxana\w*", re.IGNORECASE)
NOW = dt.datetime(2026, 11, 5, 12, tzinfo=UTC)
CLOCK = fixed_clock(NOW)
ANA_FIRST = 1190000000000090001  # Ana's first message in GEN (Bo answers it)


def msg(mid: int, channel: int, user: int, text: str, day: int, hour: int, **extra) -> dict:
    name = NAMES[user][channel] if isinstance(NAMES[user], dict) else NAMES[user]
    row = {"message_id": 1190000000000090000 + mid, "channel_id": channel, "user_id": user, "user_name": name,
           "text": text, "ts": dt.datetime(2026, 11, day, hour, tzinfo=UTC)} | extra
    if channel == DM_ANA:
        return row | {"guild_id": None, "visibility": "dm", "is_group": False}
    return row | {"guild_id": G, "visibility": "public" if channel == GEN else "restricted"}


def others(day: int = 3) -> list[dict]:
    """What Bo and Cy say: no canary of Ana's, only her id in a mention and a reply."""
    return [
        msg(2, GEN, BO, f"hey <@{ANA}> I love that game too, see you tonight at the castle.", day, 10,
            reply_to=ANA_FIRST),
        msg(3, GEN, BO, "I am fixing the minecart rails near spawn.", day, 11),
        msg(4, GEN, CY, "I finished reading the redstone wiki page about comparators.", day, 12),
        msg(5, MODS, CY, "I keep the ban list tidy every Monday.", day, 13),
        msg(12, GEN, BO, "I am building a nether highway this week.", day + 1, 10),
    ]


def anas() -> list[dict]:
    return [
        msg(1, GEN, ANA, "I live in Zqxanaville and my favourite game is Zqxanacraft.", 3, 9),
        msg(6, MODS, ANA, "I moderate the zqxanamods queue every Friday.", 3, 14),
        msg(7, DM_ANA, ANA, "My sister Zqxanasis visits on Sunday, remind me.", 3, 15),
        msg(11, GEN, ANA, "I prefer zqxanatea over coffee in the morning.", 4, 9),
    ]


def load(store, settings) -> None:
    ingest_messages(store, anas() + others(), settings)
    replay(store, settings, "2026-11-03", "2026-11-04", now=NOW)
    ctx = make_context(store, settings, now=NOW)
    asyncio.run(remember(ctx, f"guild:{G}", ANA, "Collects zqxanacoins."))
    asyncio.run(forget(make_context(store, settings, now=NOW), f"guild:{G}", ANA, "zqxanasecret word"))


def run(store, settings, now=NOW):
    return replay(store, settings, "2026-11-03", now.date().isoformat(), now=now)


# ---------------------------------------------------------------- reflection

def tables(store) -> list[sa.Table]:
    meta = sa.MetaData()
    meta.reflect(store.engine)
    return list(meta.sorted_tables)


def dump_all(store) -> dict[str, list[tuple]]:
    """Every row of every table, in a stable order."""
    out = {}
    with store.engine.connect() as conn:
        for t in tables(store):
            out[t.name] = sorted((tuple(str(v) for v in r) for r in conn.execute(sa.select(t))))
    return out


def canaries(store) -> dict[str, set[str]]:
    """Ana's canaries in every column of every row of every table: table -> the canaries found."""
    return tokens_in_tables(store.engine, CANARY)


def rows_about(store, user_id: int) -> dict[str, set[tuple]]:
    """The scan export must match: every row with the user in a user_id column, and the audit
    rows with the user as subject or requester — by primary key, as text. Not the search index:
    its rows copy ones that are exported (test_export_leaves_out_only_copies_in_the_search_index)."""
    out = {}
    with store.engine.connect() as conn:
        for t in tables(store):
            if is_search_index(t.name):
                continue
            cols = t.c.keys()
            if "user_id" in cols:
                where = t.c.user_id == user_id
            elif t.name == "control_actions":
                where = sa.or_(t.c.subject_key == str(user_id), t.c.requested_by == user_id)
            else:
                continue
            key = [c.name for c in t.primary_key.columns] or cols
            out[t.name] = {tuple(str(r[k]) for k in key) for r in conn.execute(sa.select(t).where(where)).mappings()}
    return out


# ---------------------------------------------------------------- authorization

CONTROLS = {
    "show": lambda store, settings, who: user_show(store, settings, ANA, requested_by=who, clock=CLOCK),
    "export": lambda store, settings, who: user_export(store, ANA, requested_by=who, settings=settings, clock=CLOCK),
    "pause": lambda store, settings, who: pause(store, settings, ANA, requested_by=who, clock=CLOCK),
    "resume": lambda store, settings, who: resume(store, settings, ANA, requested_by=who, clock=CLOCK),
    "clear": lambda store, settings, who: clear(store, settings, ANA, requested_by=who, scope=f"guild:{G}",
                                                include_history=True, clock=CLOCK),
    "audit": lambda store, settings, who: user_audit(store, settings, ANA, requested_by=who),
    "erase": lambda store, settings, who: erase(store, settings, ANA, requested_by=who, clock=CLOCK),
    "remember": lambda store, settings, who: asyncio.run(controls.remember(
        make_context(store, settings, now=NOW), f"guild:{G}", ANA, "Collects stamps.", requested_by=who)),
    "forget": lambda store, settings, who: asyncio.run(controls.forget(
        make_context(store, settings, now=NOW), f"guild:{G}", ANA, "zqxanacoins", requested_by=who)),
}


def with_admin(settings):
    return settings.model_copy(update={"controls": settings.controls.model_copy(update={"admins": [CY]})})


def test_a_requester_who_is_neither_the_subject_nor_an_admin_is_refused_and_nothing_changes(store, settings):
    load(store, settings)
    settings = with_admin(settings)
    before = dump_all(store)
    for name, control in CONTROLS.items():
        with pytest.raises(PermissionDenied, match=f"user {DEE} may not .* of user {ANA}: only that user or an admin"):
            control(store, settings, DEE)
        with pytest.raises(PermissionDenied):  # an admin of another configuration is nobody here
            control(store, settings.model_copy(update={"controls": settings.controls.model_copy(
                update={"admins": []})}), CY)
    assert dump_all(store) == before


def test_the_subject_an_admin_and_the_operator_may(store, settings):
    load(store, settings)
    settings = with_admin(settings)
    for who in (ANA, CY, OPERATOR, str(ANA)):
        assert user_show(store, settings, ANA, requested_by=who, clock=CLOCK)["scopes"]
    by = [(r["requested_by"], r["detail"]["by"]) for r in user_audit(store, settings, ANA, requested_by=ANA)]
    assert by == [(ANA, "subject"), (CY, "admin"), (None, "operator"), (ANA, "subject")]
    # export without settings: no admins known, the subject and the operator only
    assert user_export(store, ANA, requested_by=ANA, clock=CLOCK)["user_id"] == str(ANA)
    with pytest.raises(PermissionDenied):
        user_export(store, ANA, requested_by=CY, clock=CLOCK)


# ---------------------------------------------------------------- show / export

def test_show_is_what_the_bots_read_scope_by_scope(store, settings):
    load(store, settings)
    everything = user_show(store, settings, ANA, requested_by=ANA, clock=CLOCK)
    scopes = {e["scope"]: e for e in everything["scopes"]}
    assert set(scopes) == {f"guild:{G}", f"channel:{MODS}", f"dm:{DM_ANA}"}
    guild = scopes[f"guild:{G}"]
    assert guild["partitions"] == [f"guild:{G}"] and not guild["paused"]
    assert guild["context"]["context"] == store.contexts(f"guild:{G}", ANA)[0]["context"]
    assert guild["profile"]["profile"] == store.profiles(f"guild:{G}", ANA)[0]["profile"]
    assert "Collects zqxanacoins" in {f["text"] for f in guild["facts"]}
    assert {f["partition"] for f in guild["facts"]} == {f"guild:{G}"}  # not the DM's, not the channel's
    assert [(r["partition"], r["day"]) for r in guild["daily_summaries"]] == [
        (f"guild:{G}", dt.date(2026, 11, 3)), (f"guild:{G}", dt.date(2026, 11, 4))]
    # a restricted channel reads itself and its guild, its own rows first
    assert [r["partition"] for r in scopes[f"channel:{MODS}"]["daily_summaries"]] == [
        f"channel:{MODS}", f"guild:{G}", f"guild:{G}"]
    # her one-to-one DM reads her rows of every partition, its own first
    dm = scopes[f"dm:{DM_ANA}"]
    assert dm["partitions"][0] == f"dm:{DM_ANA}" and set(dm["partitions"]) == {f"dm:{DM_ANA}", f"guild:{G}",
                                                                              f"channel:{MODS}"}
    one = user_show(store, settings, ANA, requested_by=ANA, scope=f"guild:{G}", clock=CLOCK)
    assert one["scopes"] == [guild]
    assert user_show(store, settings, DEE, requested_by=DEE, clock=CLOCK)["scopes"] == []


def test_export_returns_every_row_a_schema_scan_finds_for_the_user(store, settings):
    load(store, settings)
    pause(store, settings, ANA, requested_by=ANA, scope=f"channel:{MODS}", clock=CLOCK)
    doc = user_export(store, ANA, requested_by=ANA, clock=CLOCK)
    assert doc["schema"] == "mempipe-export-1" and doc["user_id"] == str(ANA)
    assert dt.datetime.fromisoformat(doc["exported_at"]) == NOW
    scan = rows_about(store, ANA)  # after the export: its own audit row is in both
    assert set(doc["tables"]) == set(scan)
    for name, keys in scan.items():
        table = next(t for t in tables(store) if t.name == name)
        key = [c.name for c in table.primary_key.columns] or table.c.keys()
        got = {tuple(str(r[k]) for k in key) for r in doc["tables"][name]}
        assert got == keys, name
        assert all(set(r) == set(table.c.keys()) for r in doc["tables"][name]), name
    found = {n for n, rows in doc["tables"].items() if rows}
    assert {"chat_history", "members", "daily_summaries", "historical_summaries", "memory_facts", "memory_profiles",
            "memory_context", "forgotten_facts", "memory_exclusions", "control_actions"} <= found
    # JSON as it is: ids as strings, dates ISO, no message of anyone else
    assert json.loads(json.dumps(doc)) == doc
    assert all(r["user_id"] == str(ANA) for r in doc["tables"]["chat_history"])
    assert {r["day"] for r in doc["tables"]["daily_summaries"]} == {"2026-11-03", "2026-11-04"}
    assert isinstance(doc["tables"]["memory_facts"][0]["id"], str)


def test_export_leaves_out_only_copies_in_the_search_index(store, settings):
    load(store, settings)
    doc = user_export(store, ANA, requested_by=ANA, clock=CLOCK)
    exported = {r["text"] for r in doc["tables"]["memory_facts"] if r["status"] == "active"}
    exported |= {r["summary"] for t in ("daily_summaries", "historical_summaries") for r in doc["tables"][t]}
    with store.engine.connect() as conn:
        indexed = set(conn.execute(sa.select(memory_items.c.body).where(memory_items.c.user_id == ANA)).scalars())
    assert indexed and indexed <= exported


# ---------------------------------------------------------------- pause / resume

def test_pause_and_resume_record_a_window_that_show_reports(store, settings):
    load(store, settings)
    done = pause(store, settings, ANA, requested_by=ANA, scope=f"guild:{G}", clock=CLOCK)
    assert done["scope"] == f"guild:{G}" and not done["already"]
    assert pause(store, settings, ANA, requested_by=ANA, scope=f"guild:{G}", clock=CLOCK)["already"]
    shown = user_show(store, settings, ANA, requested_by=ANA, clock=CLOCK)
    assert shown["paused"] == [{"scope": f"guild:{G}", "since": NOW}]
    assert {e["scope"]: e["paused"] for e in shown["scopes"]} == {
        f"guild:{G}": True, f"channel:{MODS}": False, f"dm:{DM_ANA}": False}
    assert shown["scopes"][0]["context"] is not None  # what was made before stays readable
    pause(store, settings, ANA, requested_by=ANA, clock=CLOCK)  # everywhere
    assert resume(store, settings, ANA, requested_by=ANA, scope=f"guild:{G}", clock=CLOCK) == {
        "user_id": ANA, "resumed": [f"guild:{G}"], "still_paused": ["*"]}
    assert resume(store, settings, ANA, requested_by=ANA, clock=CLOCK)["resumed"] == ["*"]
    assert user_show(store, settings, ANA, requested_by=ANA, clock=CLOCK)["paused"] == []
    assert [r["action"] for r in user_audit(store, settings, ANA, requested_by=ANA)] == [
        "pause", "pause", "show", "pause", "resume", "resume", "show"]


def test_a_paused_users_new_messages_produce_no_summary_or_fact(store, settings):
    load(store, settings)
    later = NOW + dt.timedelta(hours=1)
    pause(store, settings, ANA, requested_by=ANA, scope=f"guild:{G}", clock=fixed_clock(later))
    ingest_messages(store, [
        msg(20, GEN, ANA, "I adopted a cat called Zqxanapaused yesterday.", 5, 14),
        msg(21, GEN, BO, f"<@{ANA}> what a lovely name for a cat, congratulations.", 5, 15),
        msg(22, DM_ANA, ANA, "My favourite colour is zqxanadmgreen.", 5, 15),
    ], settings)
    run(store, settings, now=NOW.replace(hour=18))
    texts = " ".join(r["summary"] for r in store.dailies([dt.date(2026, 11, 5)]))
    texts += " ".join(f["text"] for f in store.memory_facts(user_ids=[ANA]))
    assert "zqxanapaused" not in texts.lower()
    assert "zqxanadmgreen" in texts.lower()  # the pause was of the guild only
    assert store.user_messages(ANA, partition=f"guild:{G}")[-1]["message_id"] == 1190000000000090020  # kept
