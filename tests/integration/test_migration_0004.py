"""Migration 0004 (audience keys) on a database with data, on every database: messages keep every
row under the new key (channel, message id); a stored display name moves to the one partition its
message is in, and is dropped when that cannot be told; every stored DM starts not one-to-one
(fail closed)."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from pipeline.db.migrations import discover, prepare, split_statements, upgrade
from pipeline.db.queries import query
from pipeline.store import Store

UTC = dt.timezone.utc
G, PUB, RES, DM = 11, 21, 22, 23
ANA, BO, CY = 31, 32, 33


def _upgrade_to(engine, version: int) -> None:
    prepare(engine)  # the database (a SQLite file) and schema_migrations, as `upgrade` makes them
    for mig in (m for m in discover(engine.dialect.name) if m.version <= version):
        with engine.begin() as conn:
            for statement in split_statements(mig.sql):
                conn.execute(sa.text(statement))
            conn.execute(sa.text(query("schema_migrations_record")),
                         {"version": mig.version, "name": mig.name, "checksum": mig.checksum, "applied_at": "then"})


def _ts(store, hour: int):
    value = dt.datetime(2026, 11, 2, hour, tzinfo=UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.000000Z") if store.dialect == "sqlite" else value


def test_0004_keeps_messages_moves_provable_names_and_fails_dms_closed(db_url):
    store = Store.open(db_url, check_schema=False)
    try:
        _upgrade_to(store.engine, 3)
        msgs = [(1, G, PUB, "public", f"guild:{G}", ANA, 9), (2, G, RES, "restricted", f"channel:{RES}", ANA, 10),
                (3, G, RES, "restricted", f"channel:{RES}", CY, 11), (4, None, DM, "dm", f"dm:{DM}", ANA, 12),
                (5, G, PUB, "public", f"guild:{G}", BO, 13), (6, G, RES, "restricted", f"channel:{RES}", BO, 13)]
        with store.engine.begin() as conn:
            for mid, guild, channel, vis, part, user, hour in msgs:
                conn.execute(sa.text(
                    "INSERT INTO chat_history (message_id, guild_id, channel_id, visibility, partition, user_id, text, ts,"
                    " ingested_at) VALUES (:m, :g, :c, :v, :p, :u, 'hi', :ts, :ts)"),
                    {"m": mid, "g": guild, "c": channel, "v": vis, "p": part, "u": user, "ts": _ts(store, hour)})
            # old keys: per guild, 0 for every DM; seen_at = the ts of the message the name came from
            for key, user, name, hour in [(G, ANA, "Ana Secret", 10), (0, ANA, "Ana DM", 12), (G, CY, "Cy", 11),
                                          (G, BO, "Bo Twice", 13), (G, 99, "Gone", 8)]:
                conn.execute(sa.text("INSERT INTO members (guild_key, user_id, display_name, seen_at) "
                                     "VALUES (:k, :u, :n, :ts)"), {"k": key, "u": user, "n": name, "ts": _ts(store, hour)})
            conn.execute(sa.text("INSERT INTO channels (channel_id, guild_id, visibility, partition, is_group) "
                                 "VALUES (:c, NULL, 'dm', :p, :g)"), {"c": DM, "p": f"dm:{DM}", "g": False})
        assert [m.version for m in upgrade(store.engine)][0] == 4

        with store.engine.connect() as conn:
            kept = conn.execute(sa.text("SELECT channel_id, message_id, user_id FROM chat_history ORDER BY 2")).all()
            dm_flags = conn.execute(sa.text("SELECT is_group, one_to_one FROM channels")).one()
        assert [tuple(r) for r in kept] == [(c, m, u) for m, _g, c, _v, _p, u, _h in msgs]
        assert tuple(bool(v) for v in dm_flags) == (False, False)
        # the name seen last in the restricted channel stays there and never labels the guild;
        # Bo's name could come from either partition (same instant): dropped; 99's message is gone
        assert store.member_names() == {(f"channel:{RES}", ANA): "Ana Secret", (f"dm:{DM}", ANA): "Ana DM",
                                        (f"channel:{RES}", CY): "Cy"}
        with store.transaction() as conn:  # the same id in another channel is another message
            store.write_messages(conn, [{"message_id": 1, "guild_id": G, "channel_id": RES, "visibility": "restricted",
                                         "partition": f"channel:{RES}", "user_id": CY, "text": "other",
                                         "ts": dt.datetime(2026, 11, 2, 14, tzinfo=UTC), "reply_to": None,
                                         "edited_ts": None, "ingested_at": dt.datetime(2026, 11, 2, 14, tzinfo=UTC)}])
        assert store.count_messages() == len(msgs) + 1
    finally:
        store.close()
