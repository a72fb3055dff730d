"""A message is (channel, message id): an id reused in another channel is another message and
never moves text across audiences; a second import of a channel's message may change its text
(an edit) and nothing else — another author, time or reply is refused with a located error and
writes nothing, against the database and within one import, on both write paths (SQLite's
upsert, PostgreSQL's COPY)."""

from __future__ import annotations

import datetime as dt
import json

import pytest
import sqlalchemy as sa

from pipeline.errors import InputError
from pipeline.ingest import import_files, ingest_messages
from pipeline.stages.daily import build_partition_day
from tests.helpers import make_context, replay

UTC = dt.timezone.utc
G = 1150000000000000701
PUB, PUB2, RES = 1170000000000000701, 1170000000000000702, 1170000000000000703
ANA, BO, CY = 1160000000000000701, 1160000000000000702, 1160000000000000703
X = 1190000000000000701


def msg(mid: int, channel: int, user: int, text: str, hour: int = 9, **extra) -> dict:
    vis = "restricted" if channel == RES else "public"
    name = {ANA: "Ana", BO: "Bo", CY: "Cy"}[user]
    return {"message_id": str(mid), "guild_id": str(G), "channel_id": str(channel), "visibility": vis,
            "user_id": str(user), "user_name": name, "text": text, "ts": f"2026-11-02T{hour:02d}:00:00+00:00"} | extra


def jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def history(store) -> list[tuple]:
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.text(
            "SELECT channel_id, message_id, user_id, text FROM chat_history ORDER BY channel_id, message_id"))]


def test_an_id_reused_in_a_restricted_channel_never_reaches_the_guild(store, settings, tmp_path):
    import_files(store, [jsonl(tmp_path / "pub.jsonl", [msg(X, PUB, ANA, "ZQXPUBLIC I like the lake in the morning.")])],
                 settings)
    reused = msg(X, RES, CY, "ZQXSECRET the vault code is under the mat.", hour=10,
                 edited_ts="2026-11-02T11:00:00+00:00")
    import_files(store, [jsonl(tmp_path / "res.jsonl", [reused])], settings)
    assert history(store) == [(PUB, X, ANA, "ZQXPUBLIC I like the lake in the morning."),
                              (RES, X, CY, "ZQXSECRET the vault code is under the mat.")]
    replay(store, settings, "2026-11-02", "2026-11-02", now=dt.datetime(2026, 11, 2, 20, tzinfo=UTC))
    guild_texts = [r["context"] for r in store.contexts(f"guild:{G}")]
    guild_texts += [r["summary"] for r in store.dailies([dt.date(2026, 11, 2)], partition=f"guild:{G}")]
    assert guild_texts and not any("ZQXSECRET" in t for t in guild_texts)
    assert "ZQXSECRET" in "".join(r["context"] for r in store.contexts(f"channel:{RES}"))


def test_another_author_for_a_stored_message_is_refused_and_writes_nothing(store, settings, tmp_path):
    import_files(store, [jsonl(tmp_path / "a.jsonl", [msg(X, PUB, ANA, "mine")])], settings)
    before = history(store)
    path = jsonl(tmp_path / "b.jsonl", [msg(X + 1, PUB, BO, "fine"),
                                        msg(X, PUB, BO, "stolen", hour=9, edited_ts="2026-11-02T12:00:00+00:00")])
    with pytest.raises(InputError) as err:
        import_files(store, [path], settings)
    assert (err.value.source, err.value.where) == (str(path), "line 2")
    assert f"message {X}" in err.value.what and "author" in err.value.what
    assert history(store) == before


@pytest.mark.parametrize("batch", [100, 1])
def test_another_author_within_one_import_is_refused(store, settings, tmp_path, monkeypatch, batch):
    monkeypatch.setattr("pipeline.ingest.importer.BATCH_SIZE", batch)  # 1: the first copy is already flushed
    path = jsonl(tmp_path / "a.jsonl", [msg(X, PUB, ANA, "mine"), msg(X + 1, PUB, ANA, "other"),
                                        msg(X, PUB, BO, "stolen", edited_ts="2026-11-02T12:00:00+00:00")])
    with pytest.raises(InputError) as err:
        import_files(store, [path], settings)
    assert err.value.where == "line 3" and f"message {X}" in err.value.what
    assert history(store) == []


@pytest.mark.parametrize("change", [{"ts": "2026-11-02T09:30:00+00:00"}, {"reply_to": str(X + 5)}])
def test_an_edit_may_change_the_text_only(store, settings, change):
    ingest_messages(store, [msg(X, PUB, ANA, "v1")], settings)
    ingest_messages(store, [msg(X, PUB, ANA, "v2", edited_ts="2026-11-02T10:00:00+00:00",
                                ts="2026-11-02T10:00:00+01:00")], settings)  # same instant, another offset
    assert history(store) == [(PUB, X, ANA, "v2")]
    with pytest.raises(InputError, match=f"message {X}"):
        ingest_messages(store, [msg(X, PUB, ANA, "v3", edited_ts="2026-11-02T11:00:00+00:00") | change], settings)
    assert history(store) == [(PUB, X, ANA, "v2")]


def test_the_store_never_moves_a_message_to_another_author(store, settings):
    """Below the importer's check: the upsert itself (SQLite) and the COPY merge (PostgreSQL)."""
    now = dt.datetime(2026, 11, 2, 9, tzinfo=UTC)
    row = {"message_id": X, "guild_id": G, "channel_id": PUB, "visibility": "public", "partition": f"guild:{G}",
           "user_id": ANA, "text": "mine", "ts": now, "reply_to": None, "edited_ts": None, "ingested_at": now}
    with store.transaction() as conn:
        store.write_messages(conn, [row])
    with store.transaction() as conn:
        store.write_messages(conn, [row | {"user_id": BO, "text": "stolen", "edited_ts": now + dt.timedelta(hours=1)}])
    assert history(store) == [(PUB, X, ANA, "mine")]


def test_replies_and_names_resolve_within_the_channel(store, settings):
    """Two public channels of one guild share a partition: message X of PUB2 is Bo's, so a reply
    to X in PUB2 is a reply to Bo, whoever wrote X in PUB."""
    ingest_messages(store, [msg(X, PUB, ANA, "hello from general"), msg(X, PUB2, BO, "hello from the other room"),
                            msg(X + 1, PUB2, ANA, "answering Bo", hour=10, reply_to=str(X))], settings)
    assert len(history(store)) == 3
    ctx = make_context(store, settings)
    pd = build_partition_day(ctx, f"guild:{G}", G, dt.date(2026, 11, 2))
    reply = next(ln for ln in pd.lines if ln.text == "answering Bo")
    assert reply.reply_to_name == "Bo"
