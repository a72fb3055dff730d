"""An erased user's name typed as plain text in other members' chat (pipeline/stages/erased.py),
on SQLite and PostgreSQL: the next runs read it as "someone" in what was posted before the erase
— whatever the (scripted) model answers — and keep it in what was posted after; erased_names
holds hashes, never the name."""

from __future__ import annotations

import dataclasses
import datetime as dt

import sqlalchemy as sa

from pipeline.controls import OPERATOR, erase
from pipeline.ingest import ingest_messages
from pipeline.memory.requests import Request
from pipeline.stages.erased import PLACEHOLDER, name_word_keys
from tests.integration.test_memory import ANA, BO, D1, GENERAL, UTC, Proposing, msg, run, said
from tests.integration.test_memory_attacks import CY, all_text, run_with

D2 = D1 + dt.timedelta(days=1)
ERASED_AT = dt.datetime.combine(D2, dt.time(9), UTC)


def _erased_rows(store) -> list[dict]:
    with store.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(sa.text("SELECT partition, word_key FROM erased_names"))]


def test_the_name_in_older_chat_reads_as_someone_and_later_chat_keeps_its_words(store, settings):
    ingest_messages(store, [msg(1, GENERAL, CY, "hi, I'm new here", D1),
                            msg(2, GENERAL, ANA, "I play chess with ZEPHYRINE's brother every week", D1, 13),
                            msg(3, GENERAL, BO, "Zephyrine taught me the Sicilian", D1, 14)], settings)
    table = {"chess": [said("Plays chess with Zephyrine's brother every week", "preference")],
             "sicilian": [said("Was taught the Sicilian by Zephyrine", "skill/work")],
             "tennis": [said("Plays tennis with Zephyrine", "preference")]}
    run_with(store, settings, D1, table)
    assert "Zephyrine" in all_text(store, skip=("chat_history",))

    erase(store, settings, CY, requested_by=OPERATOR, clock=lambda: ERASED_AT)
    run_with(store, settings, D1, table)
    derived = all_text(store, skip=("chat_history",))
    assert "zephyrine" not in derived.lower()
    assert f"{PLACEHOLDER}'s brother" in derived  # the possessive stays with the placeholder
    facts = {f["text"] for f in store.memory_facts(active_only=True)}
    assert "Was taught the Sicilian by someone" in facts  # the model's answer, scrubbed
    # other members' chat is theirs: their messages keep the name as they typed it
    with store.engine.connect() as conn:
        texts = [r[0] for r in conn.execute(sa.text("SELECT text FROM chat_history ORDER BY ts"))]
    assert texts == ["I play chess with ZEPHYRINE's brother every week", "Zephyrine taught me the Sicilian"]

    # said after the erase: new chat, not the erased user's data
    ingest_messages(store, [msg(4, GENERAL, ANA, "tennis with Zephyrine, the new member, tomorrow", D2, 13)], settings)
    run_with(store, settings, D2, table)
    later = {f["text"] for f in store.memory_facts(active_only=True) if f["first_seen"] == D2}
    assert later == {"Plays tennis with Zephyrine"}


def test_erased_names_keeps_keys_of_significant_words_never_the_words(store, settings):
    ingest_messages(store, [msg(1, GENERAL, CY, "hi, I'm new here", D1)], settings)
    rows = erase(store, settings, CY, requested_by=OPERATOR, clock=lambda: ERASED_AT)["rows"]
    stored = _erased_rows(store)
    assert rows["erased_names"] == len(stored) == 1
    assert stored[0]["partition"].startswith("guild:") and {stored[0]["word_key"]} == name_word_keys(["Zephyrine"])
    assert "zephyrine" not in all_text(store).lower()
    # a name of stop words only, or of one letter, would blank ordinary words: not kept
    assert name_word_keys(["Will", "J", "the", "Ana Will"]) == name_word_keys(["Ana"])


class _Requesting(Proposing):
    """A model that answers a "remember" message with a request naming Zephyrine, whatever the
    message says (the day's input no longer does)."""

    async def daily(self, pd):
        out = await super().daily(pd)
        asks = [Request(ln.user_id, i, "remember", "I play chess with Zephyrine every Friday")
                for i, ln in enumerate(pd.lines) if "remember" in ln.text.lower()]
        return dataclasses.replace(out, requests=asks)


def test_an_in_chat_request_naming_the_erased_user_is_applied_without_the_name(store, settings):
    ingest_messages(store, [msg(1, GENERAL, CY, "hi, I'm new here", D1),
                            msg(2, GENERAL, ANA, "Remember that I play chess with Zephyrine every Friday.", D1, 13)],
                    settings)
    erase(store, settings, CY, requested_by=OPERATOR, clock=lambda: ERASED_AT)
    run(store, settings, D1, summarizer=_Requesting(settings, lambda line: []))
    facts = [f["text"] for f in store.memory_facts(active_only=True)]
    assert any("chess with someone" in f for f in facts), facts  # the request was applied
    assert "zephyrine" not in all_text(store, skip=("chat_history",)).lower()
