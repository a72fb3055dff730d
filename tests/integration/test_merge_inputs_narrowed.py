"""Merge inputs narrowed to a few users (a group of a merge stage spread over processes, a
worker's merge job, a remember/forget): the rows the whole run's inputs hold for those users,
read in bulk (one query per table, not one per user), and the run's audience data reused."""

from __future__ import annotations

import datetime as dt

import pytest

from pipeline.calendar import parse_scope
from pipeline.ingest import import_files
from pipeline.stages.merge_inputs import MERGED_FACT_COLUMNS, MergeInputs
from pipeline.testing import InMemoryStageStore
from tests.conftest import SAMPLE
from tests.helpers import replay

DAYS = [dt.date(2026, 11, 1) + dt.timedelta(days=i) for i in range(5)]


def _for(rows: dict, users: set[int], at: int) -> dict:
    return {k: v for k, v in rows.items() if k[at] in users}


def _check_narrowed(store) -> None:
    whole = MergeInputs(store, DAYS)
    users = sorted({u for _s, u in whole.contexts})
    assert len(users) >= 3, "the sample should give several users contexts"
    some = set(users[::2])
    narrowed = MergeInputs(store, DAYS, some, audience=whole.audience)

    assert narrowed.channels is whole.channels and narrowed.dm_speakers is whole.dm_speakers
    assert narrowed.daily == _for(whole.daily, some, 2) and narrowed.daily
    assert narrowed.hist == _for(whole.hist, some, 2)
    assert narrowed.contexts == _for(whole.contexts, some, 1) and narrowed.contexts
    assert narrowed.profiles == _for(whole.profiles, some, 1)
    assert narrowed.names == _for(whole.names, some, 1) and narrowed.names
    assert dict(narrowed.fact_rows) == {u: rows for u, rows in whole.fact_rows.items() if u in some}
    for u in some:  # what a merge derives from them is the same too
        assert narrowed.user_partitions(u) == whole.user_partitions(u)
    # without `audience` it reads the audience rows the rule asks about, with the same answers for
    # every scope (guild, channel, DM: every partition of every user) and for users it was not
    # narrowed to; asked for its audience, it has every user's
    alone = MergeInputs(store, DAYS, some)
    scopes = sorted({p for u in users for p in whole.user_partitions(u)} | {s for s, _u in whole.contexts})
    assert any(s.startswith("dm:") for s in scopes) and any(s.startswith("channel:") for s in scopes)
    for scope in scopes:
        for u in users:
            assert alone.source_partitions(parse_scope(scope), u) == whole.source_partitions(parse_scope(scope), u)
    assert alone.audience == whole.audience


def test_narrowed_inputs_are_the_whole_runs_rows_of_those_users(store, settings):
    import_files(store, [SAMPLE], settings)
    replay(store, settings, "2026-11-01", "2026-11-05")
    _check_narrowed(store)


def test_the_in_memory_store_narrows_alike_in_one_read_per_table(settings):
    store = InMemoryStageStore()
    import_files(store, [SAMPLE], settings)
    replay(store, settings, "2026-11-01", "2026-11-05")
    _check_narrowed(store)

    users = sorted({u for _s, u in MergeInputs(store, DAYS).contexts})[:3]
    audience = MergeInputs(store, DAYS).audience
    store.calls.clear()
    MergeInputs(store, DAYS, users, audience=audience)
    called = [name for name, _args in store.calls]
    assert "channels" not in called and "dm_speaker_counts" not in called  # reused, not read again
    for name in ("contexts", "profiles", "memory_facts", "dailies", "historicals"):
        assert called.count(name) == 1, (name, called)  # in bulk, not once per user


@pytest.mark.parametrize("users", [[], [10 ** 15]])
def test_inputs_for_no_user_or_an_unknown_one_are_empty(store, settings, users):
    import_files(store, [SAMPLE], settings)
    replay(store, settings, "2026-11-01", "2026-11-05")
    narrowed = MergeInputs(store, DAYS, users)
    assert not narrowed.contexts and not narrowed.profiles and not narrowed.daily and not narrowed.fact_rows


def _check_fact_columns(store) -> None:
    whole = store.memory_facts()
    merged = store.memory_facts(columns=MERGED_FACT_COLUMNS)
    assert whole and "sources" in whole[0]
    assert merged == [{k: r[k] for k in ("id", "user_id", *MERGED_FACT_COLUMNS)} for r in whole]
    some = sorted({r["user_id"] for r in whole})[:2]
    inputs = MergeInputs(store, DAYS, some, fact_columns=MERGED_FACT_COLUMNS)
    assert {u: rows for u, rows in inputs.fact_rows.items()} == \
        {u: [r for r in merged if r["user_id"] == u] for u in some}


def test_a_merges_fact_read_leaves_out_what_merges_do_not_read(store, settings):
    import_files(store, [SAMPLE], settings)
    replay(store, settings, "2026-11-01", "2026-11-05")
    _check_fact_columns(store)
    memory = InMemoryStageStore()
    import_files(memory, [SAMPLE], settings)
    replay(memory, settings, "2026-11-01", "2026-11-05")
    _check_fact_columns(memory)


def test_inputs_narrowed_without_audience_read_only_the_audience_rows_the_rule_asks_about(settings):
    """A control or an in-chat request reads one user's inputs: the channels and DM speaker counts
    of the partitions that user's scopes ask about, never every DM's speakers (a pass over every
    DM message) or every channel."""
    store = InMemoryStageStore()
    import_files(store, [SAMPLE], settings)
    replay(store, settings, "2026-11-01", "2026-11-05")
    whole = MergeInputs(store, DAYS)
    dms = sorted({p for u in whole.fact_rows for p in whole.user_partitions(u) if p.startswith("dm:")})
    assert dms, "the sample should have a DM"
    user = next(u for u in sorted(whole.fact_rows) if any(p.startswith("dm:") for p in whole.user_partitions(u)))
    dm = next(p for p in whole.user_partitions(user) if p.startswith("dm:"))
    store.calls.clear()
    one = MergeInputs(store, [], [user])
    assert one.source_partitions(parse_scope(dm), user) == whole.source_partitions(parse_scope(dm), user)
    read = [(name, args) for name, args in store.calls if name in ("channels", "dm_speaker_counts")]
    assert read, "the DM's kind and speakers are read"
    for name, args in read:
        asked = args.get("channel_ids" if name == "channels" else "partitions")
        assert asked is not None, f"{name} read in full"
    counted = {p for name, args in read if name == "dm_speaker_counts" for p in args["partitions"]}
    assert dm in counted and counted <= set(whole.user_partitions(user))
    # a channel scope asks for its channel's guild: that one channel row, nothing about users
    channel = next(p for u in sorted(whole.fact_rows) for p in whole.user_partitions(u) if p.startswith("channel:"))
    store.calls.clear()
    assert MergeInputs(store, [], [user]).guild_of(channel) == whole.guild_of(channel)
    audience_reads = ("channels", "dm_speaker_counts", "partitions_of_users")
    asked = [(name, args) for name, args in store.calls if name in audience_reads]
    assert asked == [("channels", {"channel_ids": (int(channel.partition(":")[2]),)})]
    # partitions the caller listed are read with the next question, in one read
    both = MergeInputs(store, [], [user])
    both.preload_user_partitions([user])
    store.calls.clear()
    assert both.is_private_dm(dm) == whole.is_private_dm(dm)
    for p in whole.user_partitions(user):  # every other question about the user's partitions: no read
        if p.startswith("channel:"):
            assert both.guild_of(p) == whole.guild_of(p)
    assert [name for name, _args in store.calls if name in ("channels", "dm_speaker_counts")] == \
        ["channels", "dm_speaker_counts"]
