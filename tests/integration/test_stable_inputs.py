"""A stored partition-day's input does not change after the fact (issue 14, item 1): names are
the ones that stood when each message was posted — a speaker's author_name that day, a reply's
author, a mention's latest author_name in the partition at the message's time — so a member's
first post, a rename and a late-learned name leave the input hash (partition_days.input_hash) of
every earlier partition-day as it was, and nothing is summarised again. On every database."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from pipeline.db.migrations import upgrade
from pipeline.ingest import ingest_messages
from pipeline.stages.daily import build_partition_day
from pipeline.store import Store
from pipeline.summarize import ExtractiveSummarizer
from pipeline.testing import RecordingSummarizer
from tests.helpers import make_context, replay
from tests.integration.test_migration_0004 import _ts, _upgrade_to

UTC = dt.timezone.utc
G, PUB = 1150000000000001401, 1170000000000001401
P = f"guild:{G}"
ANA, BO, CY = 1160000000000001401, 1160000000000001402, 1160000000000001403
NOW = dt.datetime(2026, 11, 6, 12, tzinfo=UTC)
D = dt.date.fromisoformat


def msg(mid: int, user: int, name: str, text: str, day: int, hour: int = 9, **extra) -> dict:
    return {"message_id": 1190000000000001400 + mid, "guild_id": G, "channel_id": PUB, "visibility": "public",
            "user_id": user, "user_name": name, "text": text, "ts": f"2026-11-0{day}T{hour:02d}:00:00+00:00"} | extra


def hashes(store) -> dict[dt.date, str]:
    return {d: r["input_hash"] for d, r in store.partition_days_between(P, D("2026-11-01"), D("2026-11-06")).items()}


def run(store, settings, last: str) -> list[tuple]:
    """Replay 2 November .. `last`; the summarizer calls it made."""
    recorder = RecordingSummarizer(ExtractiveSummarizer(settings.summary))
    replay(store, settings, "2026-11-02", last, now=NOW, summarizer=recorder)
    return recorder.calls


def day(store, settings, date: str):
    return build_partition_day(make_context(store, settings, now=NOW), P, G, D(date))


def dailies(calls) -> list[tuple]:
    return [c for c in calls if c[0] in ("daily", "fold")]


def test_a_members_first_post_leaves_the_days_that_mentioned_them_alone(store, settings):
    ingest_messages(store, [msg(1, ANA, "Ana", f"has anyone seen <@{BO}> lately? he owes me a book", 2),
                            msg(2, CY, "Cy", f"no, <@{BO}> was away all week", 2, 10)], settings)
    run(store, settings, "2026-11-02")
    before = hashes(store)
    assert [ln.text for ln in day(store, settings, "2026-11-02").lines][0].startswith("has anyone seen @someone")

    ingest_messages(store, [msg(3, BO, "Bo", "back from the mountains, Ana I have your book", 3)], settings)
    assert dailies(run(store, settings, "2026-11-03")) == [("daily", P, D("2026-11-03"))]
    assert hashes(store)[D("2026-11-02")] == before[D("2026-11-02")]
    assert "@someone" in day(store, settings, "2026-11-02").lines[1].text  # the name learned later is not used
    # a later day reads the name that stood then, also from before its own window (one day read alone)
    ingest_messages(store, [msg(4, ANA, "Ana", f"thanks <@{BO}>, got it", 4)], settings)
    assert day(store, settings, "2026-11-04").lines[0].text == "thanks @Bo, got it"
    run(store, settings, "2026-11-04")
    assert run(store, settings, "2026-11-04") == []  # a replay of unchanged data: no summarizer call

    # Bo's messages gone to retention: his name as it stood (members, last seen before the day) stays
    with store.engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM chat_history WHERE user_id = :u"), {"u": BO})
    assert day(store, settings, "2026-11-04").lines[0].text == "thanks @Bo, got it"


def test_a_rename_does_not_rename_the_past(store, settings):
    nov2 = [msg(1, ANA, "Ana", "I finished the sweater for the market", 2),
            msg(2, BO, "Bo", f"<@{ANA}> it looks great, how long did it take?", 2, 10,
                reply_to=str(1190000000000001401))]
    ingest_messages(store, nov2, settings)
    run(store, settings, "2026-11-02")
    before = hashes(store)

    ingest_messages(store, [msg(3, ANA, "Ana Knits", "three weeks, the market was worth it", 3),
                            msg(4, BO, "Bo", f"<@{ANA}> see you at the next one", 3, 10)], settings)
    assert dailies(run(store, settings, "2026-11-03")) == [("daily", P, D("2026-11-03"))]
    assert hashes(store)[D("2026-11-02")] == before[D("2026-11-02")]
    old, new = day(store, settings, "2026-11-02"), day(store, settings, "2026-11-03")
    assert old.speakers[ANA] == "Ana" and old.lines[1].text.startswith("@Ana it looks")
    assert old.lines[1].reply_to_name == "Ana"
    assert new.speakers[ANA] == "Ana Knits" and new.lines[1].text == "@Ana Knits see you at the next one"

    # an export made after the rename brings the old messages under the new name: they keep theirs
    ingest_messages(store, [r | {"user_name": "Ana Knits"} for r in nov2], settings)
    assert run(store, settings, "2026-11-03") == []
    assert hashes(store)[D("2026-11-02")] == before[D("2026-11-02")]


def test_an_edit_keeps_the_name_the_message_was_posted_under(store, settings):
    first = msg(1, ANA, "Ana", "the lake is frozen", 2)
    ingest_messages(store, [first], settings)
    ingest_messages(store, [first | {"user_name": "Ana Knits", "text": "the lake is frozen solid",
                                     "edited_ts": "2026-11-03T08:00:00+00:00"}], settings)
    pd = day(store, settings, "2026-11-02")
    assert pd.speakers == {ANA: "Ana"} and pd.lines[0].text == "the lake is frozen solid"
    with store.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT author_name FROM chat_history")).scalar_one() == "Ana"


def test_a_late_learned_name_does_not_change_an_earlier_mention(store, settings):
    # Cy spoke without a display name; Ana mentioned Cy; Cy's name is learned two days later
    ingest_messages(store, [msg(1, CY, "", "hello all", 2, 8),
                            msg(2, ANA, "Ana", f"welcome <@{CY}>!", 2)], settings)
    run(store, settings, "2026-11-02")
    before = hashes(store)
    pd = day(store, settings, "2026-11-02")
    assert pd.speakers[CY] == "member 1" and pd.lines[1].text == "welcome @someone!"

    ingest_messages(store, [msg(3, CY, "Cy", "thanks, glad to be here", 4)], settings)
    assert dailies(run(store, settings, "2026-11-04")) == [("daily", P, D("2026-11-04"))]
    assert hashes(store)[D("2026-11-02")] == before[D("2026-11-02")]
    assert day(store, settings, "2026-11-02").lines[1].text == "welcome @someone!"
    assert run(store, settings, "2026-11-04") == []


def test_0008_gives_stored_messages_their_authors_current_name(db_url):
    store = Store.open(db_url, check_schema=False)
    try:
        _upgrade_to(store.engine, 7)
        with store.engine.begin() as conn:
            for mid, user in ((1, ANA), (2, BO)):
                conn.execute(sa.text(
                    "INSERT INTO chat_history (message_id, guild_id, channel_id, visibility, partition, user_id, text,"
                    " ts, ingested_at) VALUES (:m, :g, :c, 'public', :p, :u, 'hi', :ts, :ts)"),
                    {"m": mid, "g": G, "c": PUB, "p": P, "u": user, "ts": _ts(store, 9)})
            conn.execute(sa.text("INSERT INTO members (partition, user_id, display_name, seen_at) VALUES "
                                 "(:p, :u, 'Ana', :ts), ('guild:1', :b, 'Bo Elsewhere', :ts)"),
                         {"p": P, "u": ANA, "b": BO, "ts": _ts(store, 9)})
        assert [m.version for m in upgrade(store.engine)][0] == 8  # then any later ones
        with store.engine.connect() as conn:
            names = conn.execute(sa.text("SELECT user_id, author_name FROM chat_history ORDER BY message_id")).all()
        assert [tuple(r) for r in names] == [(ANA, "Ana"), (BO, None)]  # never a name from another partition
    finally:
        store.close()
