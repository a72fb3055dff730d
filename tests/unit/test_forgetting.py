"""pipeline.stages.forgetting without a database: which forgotten facts apply to a row, and how a
row is cleaned of them. Where they apply in a real run: tests/integration/test_forget_scope.py."""

from __future__ import annotations

from pipeline.stages.forgetting import MATCH, NOTHING, Applied, Forgetting

ANA, BO, ZED = 1, 2, 3
ROWS = [{"scope": "guild:1", "user_id": ANA, "fact": "balcony beehive"},
        {"scope": "dm:9", "user_id": ANA, "fact": "locker code"},
        {"scope": "guild:1", "user_id": ZED, "fact": "night shifts"}]
REACH = [frozenset({"guild:1"}), frozenset({"dm:9", "guild:1"}), frozenset({"guild:1"})]
FORGETTING = Forgetting(ROWS, REACH, {ANA: ("Ana",), ZED: ("Zed",)})


def test_only_facts_whose_reach_includes_the_rows_partitions_apply():
    assert FORGETTING.applied(["guild:2"], [ANA], ["anything"]) is NOTHING
    assert FORGETTING.applied(["dm:9"], [ANA], []).facts == ((ANA, "locker code"),)
    assert FORGETTING.applied(["guild:1"], [ANA], []).facts == ((ANA, "balcony beehive"), (ANA, "locker code"))


def test_another_persons_facts_apply_only_when_the_inputs_name_them():
    assert FORGETTING.applied(["guild:1"], [BO], ["Bo fixed the rails"]) is NOTHING
    applied = FORGETTING.applied(["guild:1"], [BO], ["Zed said hi", "Bo fixed the rails"])
    assert applied.facts == ((ZED, "night shifts"),) and applied.names == {ZED: ("Zed",)}
    assert applied.key() == [[MATCH], [ZED, "night shifts"]]


def test_scrub_removes_the_authors_facts_anywhere_and_others_only_where_named():
    applied = Applied(((ANA, "balcony beehive"),), {ANA: ("Ana",)})
    own = "Ana: “my balcony beehive gave honey” · “I fixed the gate”"
    assert applied.scrub(own, ANA, "Ana") == "Ana: “I fixed the gate”"
    bos = "Bo: “Ana has a balcony beehive” · “my uncle has a balcony beehive too”"
    assert applied.scrub(bos, BO, "Bo") == "Bo: “my uncle has a balcony beehive too”"
    assert NOTHING.scrub(bos, BO) == bos and NOTHING.key() == []
