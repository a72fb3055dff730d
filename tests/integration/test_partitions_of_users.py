"""DerivedStore.partitions_of_users: where each user has written. Many users (a nightly run plans
merges for everyone with facts) are read in one pass over every pair instead of IN lists of ids
(pipeline/store/derived.py EVERY_USER_AT); both ways give the same answer."""

from __future__ import annotations

import sqlalchemy as sa

import pipeline.store.derived as derived
from pipeline.db.tables import chat_history
from pipeline.ingest import import_files
from tests.conftest import SAMPLE

NOBODY = 1169999999999999999  # wrote nothing


def _expected(store, users) -> dict[int, list[str]]:
    with store.engine.connect() as conn:
        pairs = conn.execute(sa.select(chat_history.c.user_id, chat_history.c.partition)).all()
    out: dict[int, set[str]] = {}
    for u, p in pairs:
        if u in users:
            out.setdefault(u, set()).add(p)
    return {u: sorted(ps) for u, ps in out.items()}


def test_one_pass_and_id_lists_give_every_users_partitions(store, settings, monkeypatch):
    import_files(store, [SAMPLE], settings)
    with store.engine.connect() as conn:
        everyone = set(conn.execute(sa.select(chat_history.c.user_id).distinct()).scalars())
    some = set(sorted(everyone)[::2]) | {NOBODY}
    for users in (everyone | {NOBODY}, some):
        by_lists = store.partitions_of_users(users)
        with monkeypatch.context() as patch:
            patch.setattr(derived, "EVERY_USER_AT", 0)
            one_pass = store.partitions_of_users(users)
        assert by_lists == one_pass == _expected(store, users)
        assert NOBODY not in one_pass and len(one_pass) == len(users) - 1
        assert any(len(ps) > 1 for ps in one_pass.values())  # users who wrote in several partitions
