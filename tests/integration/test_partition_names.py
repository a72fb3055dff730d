"""Display names belong to the partition they were seen in: a name shown in a partition's prompts
and summaries (speakers, mentions, replies, the historical and merge requests, the context) comes
from that partition's own messages, or is a neutral placeholder. DMs never share names with each
other or with guilds. Names are cut to 64 characters at import."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from pipeline.ingest import ingest_messages
from pipeline.stages.daily import build_partition_day
from pipeline.summarize import ExtractiveSummarizer
from pipeline.testing import RecordingSummarizer
from tests.helpers import make_context, replay

UTC = dt.timezone.utc
G = 1150000000000000601
PUB, RES, DM_A, DM_B, GROUP = (1170000000000000601, 1170000000000000602, 1170000000000000603,
                               1170000000000000604, 1170000000000000605)
ANA, BO, CY = 1160000000000000601, 1160000000000000602, 1160000000000000603
NOW = dt.datetime(2026, 11, 3, 20, tzinfo=UTC)
# a name per (channel, user): each a canary of the partition it was seen in
NAMES = {(PUB, ANA): "Ana Public", (PUB, BO): "Bo Public", (RES, ANA): "Ana Restricted", (RES, CY): "Cy Restricted",
         (DM_A, ANA): "Ana DirectOne", (DM_B, BO): "Bo DirectTwo", (GROUP, ANA): "Ana Group", (GROUP, BO): "Bo Group"}


def m(mid: int, channel: int, user: int, text: str, day: int = 2, hour: int = 9, **extra) -> dict:
    row = {"message_id": 1190000000000000600 + mid, "channel_id": channel, "user_id": user,
           "user_name": NAMES[(channel, user)], "text": text, "ts": f"2026-11-0{day}T{hour:02d}:00:00+00:00"} | extra
    if channel == PUB:
        return row | {"guild_id": G, "visibility": "public"}
    if channel == RES:
        return row | {"guild_id": G, "visibility": "restricted"}
    return row | {"guild_id": None, "visibility": "dm", "is_group": channel == GROUP}


def dataset() -> list[dict]:
    return [
        m(1, RES, CY, "I only ever talk in the moderators room about the raid plans."),
        m(2, RES, ANA, "The raid plans look good to me, see you at eight."),
        m(3, PUB, ANA, "Good morning everyone, the lake is frozen today."),
        m(4, PUB, BO, f"hey <@{CY}> and <@{ANA}>, are you skating on the lake later?", hour=10),
        m(5, DM_A, ANA, "I want to learn to play the cello this winter."),
        m(6, DM_B, BO, f"did <@{ANA}> tell you about the cello lessons she wants?"),
        m(7, GROUP, ANA, "Shall we meet at the library on Friday?"),
        m(8, GROUP, BO, "Friday works, the library opens at nine.", hour=10, reply_to=str(1190000000000000607)),
    ]


def _names_in(pd) -> set[str]:
    text = " ".join([*pd.speakers.values(), *(ln.text for ln in pd.lines), *(ln.reply_to_name or "" for ln in pd.lines)])
    return {n for n in NAMES.values() if n in text}


def test_a_partition_day_shows_only_names_seen_in_that_partition(store, settings):
    ingest_messages(store, dataset(), settings)
    ctx = make_context(store, settings, now=NOW)
    day = dt.date(2026, 11, 2)
    guild = build_partition_day(ctx, f"guild:{G}", G, day)
    assert _names_in(guild) == {"Ana Public", "Bo Public"}
    assert "@someone" in next(ln.text for ln in guild.lines if "skating" in ln.text)  # Cy never posted here
    assert _names_in(build_partition_day(ctx, f"channel:{RES}", G, day)) == {"Ana Restricted", "Cy Restricted"}
    assert _names_in(build_partition_day(ctx, f"dm:{DM_A}", None, day)) == {"Ana DirectOne"}
    assert _names_in(build_partition_day(ctx, f"dm:{DM_B}", None, day)) == {"Bo DirectTwo"}  # not Ana's DM name
    group = build_partition_day(ctx, f"dm:{GROUP}", None, day)
    assert _names_in(group) == {"Ana Group", "Bo Group"}
    assert next(ln.reply_to_name for ln in group.lines if ln.reply_to_name) == "Ana Group"


def test_historical_and_merge_requests_and_contexts_use_the_scopes_own_names(store, settings):
    rows = dataset()
    ingest_messages(store, rows + [r | {"message_id": r["message_id"] + 50, "ts": r["ts"].replace("11-02", "11-03")}
                                   for r in rows], settings)
    # budgets so short that every past week and context exceeds them: the summarizer is asked
    # (a text that fits is rendered by the stage without it, pipeline/stages/recent.py)
    settings = settings.model_copy(update={"summary": settings.summary.model_copy(
        update={"daily_chars": 40, "historical_chars": 10, "context_chars": 20, "condense": "model"})})
    recorder = RecordingSummarizer(ExtractiveSummarizer(settings.summary))
    replay(store, settings, "2026-11-02", "2026-11-03", now=NOW, summarizer=recorder)
    assert {c[0] for c in recorder.calls} >= {"historical", "merge"}
    asked = {name for op, name in ((c[0], c[1]) for c in recorder.calls) if op in ("historical", "merge")}
    assert asked and asked <= set(NAMES.values()) | {"this member"}
    # every stored row shows only names its own audience saw
    with store.engine.connect() as conn:
        for table, col in (("daily_summaries", "summary"), ("historical_summaries", "summary")):
            for partition, text in conn.execute(sa.text(f"SELECT partition, {col} FROM {table}")):
                seen = {n for (ch, _u), n in NAMES.items() if n in text}
                assert all(_partition(ch) == partition for ch, _u in NAMES if NAMES[(ch, _u)] in seen), (table, text)
    for r in store.contexts():
        allowed = _readable_names(r["scope"], r["user_id"])
        assert {n for n in NAMES.values() if n in r["context"]} <= allowed, r


def _partition(channel: int) -> str:
    return f"guild:{G}" if channel == PUB else f"channel:{channel}" if channel == RES else f"dm:{channel}"


def _readable_names(scope: str, user: int) -> set[str]:
    parts = {scope} | ({f"guild:{G}"} if scope == f"channel:{RES}" else set())
    if scope in (f"dm:{DM_A}", f"dm:{DM_B}"):  # one-to-one: the user's own rows from where they posted
        parts |= {_partition(ch) for ch, u in NAMES if u == user}
    return {n for (ch, _u), n in NAMES.items() if _partition(ch) in parts}


def test_names_are_learned_per_partition_and_cut_to_64_characters(store, settings):
    long = "Ana " + "x" * 200
    ingest_messages(store, [m(1, PUB, ANA, "hello there"), m(2, RES, ANA, "hi", user_name=long)], settings)
    names = store.member_names([ANA])
    assert names == {(f"guild:{G}", ANA): "Ana Public", (f"channel:{RES}", ANA): long[:63] + "…"}
    assert len(names[(f"channel:{RES}", ANA)]) == 64
    assert store.member_names([ANA], [f"guild:{G}"]) == {(f"guild:{G}", ANA): "Ana Public"}
