"""pipeline/stages/erased.py without a database: which words of which messages read as "someone"."""

from __future__ import annotations

import datetime as dt

from pipeline.stages.erased import ErasedNames, name_word_keys, word_key

UTC = dt.timezone.utc
AT = dt.datetime(2026, 11, 5, 12, tzinfo=UTC)


def _names(*words: str, partition: str = "guild:1") -> ErasedNames:
    return ErasedNames([{"partition": partition, "word_key": word_key(w), "erased_at": AT} for w in words])


def _msg(text: str, hours: int) -> dict:
    return {"text": text, "ts": AT + dt.timedelta(hours=hours), "user_id": 1}


def test_a_name_word_reads_as_someone_before_its_erase_in_its_partition_only():
    erased = _names("zephyrine", "moreau")
    before, after = _msg("Zephyrine MOREAU's cat and zephyrines", -1), _msg("Zephyrine is back", 1)
    kept = erased.kept("guild:1", [before, after])
    assert [m["text"] for m in kept] == ["someone someone's cat and zephyrines", "Zephyrine is back"]
    assert before["text"] == "Zephyrine MOREAU's cat and zephyrines"  # the stored row is not changed
    other = [_msg("Zephyrine said hi", -1)]
    assert erased.kept("guild:2", other) is other  # another partition: the same list, untouched
    # what the summarizer says of a day with messages from before the erase; nothing to do for others
    unnamed = erased.scrubber("guild:1", [after["ts"], before["ts"]])
    assert unnamed("Moreau: plays chess with Zephyrine.") == "someone: plays chess with someone." and unnamed("") == ""
    assert erased.scrubber("guild:1", [after["ts"]]) is None and erased.scrubber("guild:2", [before["ts"]]) is None


def test_no_erased_name_costs_nothing_and_keys_hide_the_words():
    messages = [_msg("hello", -1)]
    assert not ErasedNames() and ErasedNames().kept("guild:1", messages) is messages
    keys = name_word_keys(["Zephyrine Moreau", "zephyrine"])
    assert keys == {word_key("zephyrine"), word_key("moreau")} and all("zeph" not in k for k in keys)


def test_the_in_memory_store_keeps_erased_names_as_the_sql_one_does():
    from pipeline.stages.erased import load_erased_names
    from pipeline.testing import InMemoryStageStore

    store = InMemoryStageStore()
    assert store.add_erased_names(["guild:1", "guild:2"], name_word_keys(["Zephyrine"]), AT) == 2
    later = AT + dt.timedelta(days=1)
    assert store.add_erased_names(["guild:1"], name_word_keys(["Zephyrine"]), later) == 1  # erased again: later
    assert [(r["partition"], r["erased_at"]) for r in store.erased_names()] == [("guild:1", later), ("guild:2", AT)]
    erased = load_erased_names(store)
    assert erased.kept("guild:1", [_msg("Zephyrine!", 2)])[0]["text"] == "someone!"
    assert erased.kept("guild:2", [_msg("Zephyrine!", 2)])[0]["text"] == "Zephyrine!"
