"""Exclusion windows (memory_exclusions), on SQLite and PostgreSQL: a user's messages in a window
are neither summarised nor mined for facts by the next run — in one partition, or in every one
("*") —, other users' summaries stop quoting them, a resume lets later messages in again, and a
clear of the past (with its days queued) recomputes those days, however old, without them."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import re

import pytest

from pipeline.ingest import ingest_messages
from pipeline.memory.model import Candidate
from pipeline.runner import execute
from pipeline.summarize import ExtractiveSummarizer
from pipeline.testing import RecordingSummarizer
from tests.helpers import make_context, tokens_in_tables

UTC = dt.timezone.utc
G = 1150000000000000801
GENERAL, SECRET, DM_ANA = 1170000000000000801, 1170000000000000802, 1170000000000000803
ANA, BO = 1160000000000000801, 1160000000000000802
NAMES = {ANA: "Ana", BO: "Bo"}
D = dt.date.fromisoformat
GUILD, CHANNEL = f"guild:{G}", f"channel:{SECRET}"
DERIVED = ("partition_days", "daily_summaries", "historical_summaries", "memory_context", "memory_profiles",
           "memory_facts")
_ids = iter(range(1190000000000080001, 1190000000000089999))


def msg(channel: int, user: int, text: str, ts: dt.datetime) -> dict:
    row = {"message_id": next(_ids), "channel_id": channel, "user_id": user, "user_name": NAMES[user],
           "text": text, "ts": ts}
    if channel == DM_ANA:
        return row | {"guild_id": None, "visibility": "dm", "is_group": False}
    return row | {"guild_id": G, "visibility": "public" if channel == GENERAL else "restricted"}


def at(day: str, hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime.combine(D(day), dt.time(hour, minute), UTC)


class Quoting:
    """Each speaker's daily summary quotes the whole day, as a model summarising the conversation
    may ("Bo answered Ana's …"); a message saying "cat" proposes a fact about its author."""

    def __init__(self, settings):
        self.inner = ExtractiveSummarizer(settings.summary)
        self.kind, self.cheap = self.inner.kind, True

    def __getattr__(self, name):
        return getattr(self.inner, name)

    @staticmethod
    def _facts(pd):
        return [Candidate(user_id=ln.user_id, text="Has a cat named Miso", category="other", confidence=0.9,
                          sources=(i,)) for i, ln in enumerate(pd.lines) if "cat named miso" in ln.text.lower()]

    async def daily(self, pd):
        out = await self.inner.daily(pd)
        day = " | ".join(ln.text for ln in pd.lines)
        return dataclasses.replace(out, value={u: day for u in pd.speakers}, facts=self._facts(pd))

    async def fold(self, new, previous):
        out = await self.inner.fold(new, previous)
        added = " | ".join(ln.text for ln in new.lines)
        return dataclasses.replace(out, value={u: f"{previous.get(u, '')} | {added}" for u in new.speakers},
                                   facts=self._facts(new))


def run(store, settings, now: dt.datetime, kind: str = "run", first: str | None = None, last: str | None = None):
    rec = RecordingSummarizer(Quoting(settings))
    ctx = make_context(store, settings, now=now, summarizer=rec)
    assert asyncio.run(execute(ctx, kind, first and D(first), D(last) if last else None)).status == "ok"
    return rec


def tokens(store, tables=DERIVED) -> set[str]:
    found = tokens_in_tables(store.engine, re.compile(r"ZQX[A-Z]+"))
    return set().union(*(found.get(t, set()) for t in tables))


def summaries(store, day: str, user: int, partition: str = GUILD) -> str:
    return " ".join(r["summary"] for r in store.dailies([D(day)], partition=partition, user_ids=[user]))


@pytest.mark.parametrize("scope", [GUILD, "*"])
def test_a_pause_leaves_the_users_messages_out_there_and_a_resume_lets_them_in(store, settings, scope):
    day = "2026-11-20"
    ingest_messages(store, [msg(GENERAL, ANA, "ZQXBEFORE good morning", at(day, 9)),
                            msg(GENERAL, BO, "morning Ana", at(day, 9, 30))], settings)
    run(store, settings, at(day, 10))
    store.add_exclusion(ANA, scope, "pause", at(day, 10), None, at(day, 10))
    ingest_messages(store, [msg(GENERAL, ANA, "ZQXPAUSED I have a cat named Miso now", at(day, 11)),
                            msg(GENERAL, BO, "ZQXBOB what did you say", at(day, 11, 10)),
                            msg(SECRET, ANA, "ZQXSECRETPAUSE in the back room", at(day, 11, 20)),
                            msg(DM_ANA, ANA, "ZQXDMPAUSE a cat named Miso in the DM", at(day, 11, 30))], settings)
    rec = run(store, settings, at(day, 11, 45))
    assert ("fold", GUILD, D(day)) in rec.calls  # only the new messages are read: Bo's
    found = tokens(store)
    assert {"ZQXBEFORE", "ZQXBOB"} <= found and "ZQXPAUSED" not in found
    assert "ZQXPAUSED" not in summaries(store, day, BO)  # nobody's summary quotes a paused message
    elsewhere = {"ZQXSECRETPAUSE", "ZQXDMPAUSE"}
    assert (elsewhere & found) == (set() if scope == "*" else elsewhere)
    cats = [f for f in store.memory_facts(user_ids=[ANA]) if "Miso" in f["text"]]
    assert [f["partition"] for f in cats] == ([] if scope == "*" else [f"dm:{DM_ANA}"])

    assert store.end_exclusions(ANA, scope, "pause", at(day, 12)) == 1
    assert store.end_exclusions(ANA, scope, "pause", at(day, 12)) == 0  # none open any more
    ingest_messages(store, [msg(GENERAL, ANA, "ZQXAFTER back again with a cat named Miso", at(day, 13))], settings)
    run(store, settings, at(day, 14))
    found = tokens(store)
    assert {"ZQXBEFORE", "ZQXBOB", "ZQXAFTER"} <= found and "ZQXPAUSED" not in found
    assert "ZQXAFTER" in summaries(store, day, ANA) and "ZQXPAUSED" not in summaries(store, day, BO)
    assert any(f["partition"] == GUILD for f in store.memory_facts(user_ids=[ANA]) if "Miso" in f["text"])
    assert [(r["user_id"], r["scope"], r["kind"], r["until_ts"]) for r in store.exclusions([ANA])] == [
        (ANA, scope, "pause", at(day, 12))]


def test_a_clear_of_the_past_recomputes_its_days_without_the_user_however_old(store, settings):
    ingest_messages(store, [
        msg(GENERAL, ANA, "ZQXANAOLD long ago", at("2026-11-03", 9)),
        msg(GENERAL, BO, "ZQXBOOLD an old answer", at("2026-11-03", 10)),
        msg(GENERAL, ANA, "ZQXANAONE hello all", at("2026-11-18", 9)),
        msg(GENERAL, BO, "ZQXBOONE hello Ana", at("2026-11-18", 10)),
        msg(SECRET, ANA, "ZQXANASECRET the back room", at("2026-11-18", 11)),
        msg(GENERAL, ANA, "ZQXANALONE talking to myself", at("2026-11-19", 9)),
        msg(DM_ANA, ANA, "ZQXANADM a note", at("2026-11-19", 10)),
    ], settings)
    run(store, settings, at("2026-11-20", 12), "replay", "2026-11-01", "2026-11-20")
    assert {"ZQXANAOLD", "ZQXANAONE", "ZQXANALONE"} <= tokens(store)
    assert "ZQXANAONE" in summaries(store, "2026-11-18", BO) and "ZQXANAOLD" in summaries(store, "2026-11-03", BO)
    now = at("2026-11-20", 13)
    # what a clear of Ana's guild history does: a window over the past, and its days queued
    store.add_exclusion(ANA, GUILD, "clear", None, now, now)
    store.enqueue_days([{"partition": GUILD, "day": D("2026-11-03"), "reason": "clear"}], now)
    rec = run(store, settings, at("2026-11-20", 14))
    assert {c for c in rec.calls if c[0] in ("daily", "fold")} == {("daily", GUILD, D("2026-11-03")),
                                                                   ("daily", GUILD, D("2026-11-18"))}
    found = tokens(store, DERIVED[:-1])  # every derived text (the facts were never about these words)
    assert found & {"ZQXANAOLD", "ZQXANAONE", "ZQXANALONE"} == set()
    assert {"ZQXBOOLD", "ZQXBOONE", "ZQXANASECRET", "ZQXANADM"} <= found
    assert "ZQXANAONE" not in summaries(store, "2026-11-18", BO) and "ZQXBOONE" in summaries(store, "2026-11-18", BO)
    # 11-19 had Ana's message only: its summaries and partition_days row are gone
    assert store.partition_days_between(GUILD, D("2026-11-19"), D("2026-11-19")) == {}
    assert store.dailies([D("2026-11-19")], partition=GUILD) == []
    assert store.queued_days() == []
    assert run(store, settings, at("2026-11-20", 15)).calls == []
