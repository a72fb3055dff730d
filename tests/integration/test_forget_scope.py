"""Where a forgotten fact applies (README, "Scopes: who may read what"): to the rows of the
partitions the scope it was forgotten in is built from, other users' sentences about the person
included, and to every context that reads one of them; nowhere else. On both databases."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections import defaultdict

from pipeline.ingest import ingest_messages
from pipeline.stages.facts import forget
from tests.helpers import make_context, replay

UTC = dt.timezone.utc
G = 1150000000000000801
GENERAL, GROUP, DM_ANA = 1170000000000000801, 1170000000000000802, 1170000000000000803
ANA, BO = 1160000000000000801, 1160000000000000802
FACT = "balcony beehive"
ABOUT_ANA = "Ana told me her balcony beehive gave four jars of honey."
BO_OWN = "My uncle keeps a balcony beehive in Porto."  # the same words, not about Ana


def _msg(mid: int, channel: int, user: int, text: str, day: int, hour: int) -> dict:
    row = {"message_id": 1190000000000080000 + mid, "channel_id": channel, "user_id": user,
           "user_name": {ANA: "Ana", BO: "Bo"}[user], "text": text,
           "ts": dt.datetime(2026, 11, day, hour, tzinfo=UTC)}
    if channel == GENERAL:
        return row | {"guild_id": G, "visibility": "public", "channel_name": "general"}
    return row | {"guild_id": None, "visibility": "dm", "is_group": channel == GROUP}


def _load(store, settings) -> None:
    ingest_messages(store, [
        _msg(1, GENERAL, ANA, "My balcony beehive gave four jars of honey this week.", 3, 9),
        _msg(2, GENERAL, BO, ABOUT_ANA, 3, 10),
        _msg(3, GENERAL, BO, BO_OWN, 3, 11),
        _msg(4, GENERAL, ANA, "I am painting the balcony beehive bright yellow today.", 4, 9),
        _msg(5, GENERAL, BO, "I am fixing the minecart rails near spawn.", 4, 10),
        _msg(6, GROUP, ANA, "The balcony beehive needs a new queen this spring.", 4, 11),
        _msg(7, GROUP, BO, "I know a breeder near the river who sells queens.", 4, 12),
        _msg(8, DM_ANA, ANA, "Remind me to check the balcony beehive tomorrow morning.", 4, 13),
    ], settings)
    replay(store, settings, "2026-11-03", "2026-11-04")


def _forget(store, settings, scope: str) -> bool:
    return asyncio.run(forget(make_context(store, settings), scope, ANA, FACT))


def _dailies(store) -> dict[tuple[str, int], str]:
    """(partition, user) -> that user's summaries of every day, joined."""
    out: dict[tuple[str, int], str] = {}
    for r in store.dailies([dt.date(2026, 11, 3), dt.date(2026, 11, 4)]):
        out[(r["partition"], r["user_id"])] = out.get((r["partition"], r["user_id"]), "") + " " + r["summary"]
    return out


def _contexts(store) -> dict[tuple[str, int], str]:
    """(scope, user) -> context; "" for none (a context left with nothing to say is removed)."""
    return defaultdict(str, {(r["scope"], r["user_id"]): r["context"] for r in store.contexts()})


def _has(text: str) -> bool:
    return FACT in text.lower()


def _check_group_dm_forget(store) -> None:
    dailies, contexts = _dailies(store), _contexts(store)
    assert not _has(dailies[(f"dm:{GROUP}", ANA)])
    assert not _has(contexts[(f"dm:{GROUP}", ANA)])
    assert not _has(contexts[(f"dm:{DM_ANA}", ANA)])  # Ana's own DM reads the group DM
    # the guild cannot read the group DM: its rows and contexts keep what was said there
    assert _has(dailies[(f"guild:{G}", ANA)]) and _has(contexts[(f"guild:{G}", ANA)])
    assert ABOUT_ANA in dailies[(f"guild:{G}", BO)]
    assert _has(dailies[(f"dm:{DM_ANA}", ANA)])


def test_a_fact_forgotten_in_a_group_dm_applies_to_that_dm_and_the_contexts_that_read_it(store, settings):
    _load(store, settings)
    assert _forget(store, settings, f"dm:{GROUP}")
    assert [(r["scope"], r["fact"]) for r in store.forgotten()] == [(f"dm:{GROUP}", FACT)]
    _check_group_dm_forget(store)
    replay(store, settings, "2026-11-03", "2026-11-04", force=True)  # recomputed from chat history
    _check_group_dm_forget(store)


def _check_guild_forget(store) -> None:
    dailies, contexts = _dailies(store), _contexts(store)
    assert not _has(dailies[(f"guild:{G}", ANA)])
    assert not _has(contexts[(f"guild:{G}", ANA)])
    assert not _has(contexts[(f"dm:{DM_ANA}", ANA)])  # reads the guild
    # Bo's sentence about Ana goes from his rows and contexts; his own one stays
    assert ABOUT_ANA not in dailies[(f"guild:{G}", BO)] and BO_OWN in dailies[(f"guild:{G}", BO)]
    assert ABOUT_ANA not in contexts[(f"guild:{G}", BO)] and BO_OWN in contexts[(f"guild:{G}", BO)]
    historicals = {(r["partition"], r["user_id"]): r["summary"] for r in store.historicals([dt.date(2026, 11, 4)])}
    assert ABOUT_ANA not in historicals[(f"guild:{G}", BO)] and BO_OWN in historicals[(f"guild:{G}", BO)]
    # the group DM is not read by the guild's audience: untouched
    assert _has(dailies[(f"dm:{GROUP}", ANA)]) and _has(contexts[(f"dm:{GROUP}", ANA)])


def test_a_fact_forgotten_in_a_guild_applies_to_it_to_other_users_sentences_about_the_person_and_nowhere_else(
        store, settings):
    _load(store, settings)
    before = _dailies(store)
    assert ABOUT_ANA in before[(f"guild:{G}", BO)] and BO_OWN in before[(f"guild:{G}", BO)]
    assert _forget(store, settings, f"guild:{G}")
    _check_guild_forget(store)
    replay(store, settings, "2026-11-03", "2026-11-04", force=True)
    _check_guild_forget(store)


def test_a_new_forgotten_fact_recomputes_exactly_the_rows_it_applies_to(store, settings):
    _load(store, settings)
    _forget(store, settings, f"guild:{G}")
    ctx, _ = replay(store, settings, "2026-11-03", "2026-11-04")
    daily_calls = sorted((c[1], c[2].isoformat()) for c in ctx.summarizer.calls if c[0] in ("daily", "fold"))
    # the guild's days (Ana spoke on both), not the DMs the guild's audience cannot read
    assert daily_calls == [(f"guild:{G}", "2026-11-03"), (f"guild:{G}", "2026-11-04")]
    ctx, _ = replay(store, settings, "2026-11-03", "2026-11-04")
    assert ctx.summarizer.calls == []  # and then nothing: the replay of unchanged data is free
