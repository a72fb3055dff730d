"""A control that removes memory while a run is working (pipeline/store/controls.py
refuse_after_removal): the run read before it, so what it writes after it must not bring back
what the control removed. An adversarial review found a forget, a clear and a message deletion
each undone this way — for good for facts, which no later run deletes (a global one then reached
every guild). A forget or a clear stops the run (RemovedDuringRun, as an erase does); a deletion
(frequent: a bot's delete events) lets it go on, its facts keeping only the messages still
stored. The control is made to commit just before the run's first write of facts, the narrowest
race. On both databases."""

from __future__ import annotations

import asyncio
import re
import threading

import pytest

from pipeline.controls import OPERATOR, clear, forget, pause
from pipeline.errors import RemovedDuringRun
from pipeline.ingest import delete_messages, ingest_messages
from tests.helpers import make_context, replay, tokens_in_tables
from tests.integration.test_controls import ANA, CLOCK, G, NOW, anas, others

DERIVED = ("daily_summaries", "historical_summaries", "memory_context", "memory_profiles", "memory_facts",
           "memory_items")
TEA = re.compile(r"zqxanatea", re.IGNORECASE)  # Ana: "I prefer zqxanatea over coffee in the morning." (GEN)
GEN_WORDS = re.compile(r"zqxana(?:ville|craft|tea)", re.IGNORECASE)  # what she said in the guild's channel
TEA_MESSAGE = 1190000000000090011


def _once_before_the_first_facts_write(store, control) -> list:
    write, fired = store.write_batch, []

    def racing(*args, **kwargs):
        if not fired and kwargs.get("facts"):
            fired.append(True)
            control()  # another process's control: its own connection, committed before the batch
        return write(*args, **kwargs)

    store.write_batch = racing
    return fired


def _derived(store, pattern) -> dict[str, set[str]]:
    return {t: found for t, found in tokens_in_tables(store.engine, pattern).items() if t in DERIVED and found}


def _stopped_run(store, settings, fired) -> RemovedDuringRun:
    with pytest.raises(RemovedDuringRun) as stopped:
        replay(store, settings, "2026-11-03", "2026-11-05", now=NOW)
    assert fired
    del store.write_batch
    run = store.runs(1)[0]
    assert run["status"] == "failed" and "while this run was working" in run["error"]
    return stopped.value


def test_a_fact_forgotten_while_a_run_works_does_not_come_back(store, settings):
    ingest_messages(store, anas() + others(), settings)
    def forget_now():  # a bot's control, in its own thread with its own event loop
        thread = threading.Thread(target=lambda: asyncio.run(forget(
            make_context(store, settings, now=NOW), f"guild:{G}", ANA, "prefers zqxanatea over coffee",
            requested_by=OPERATOR)))
        thread.start()
        thread.join()

    fired = _once_before_the_first_facts_write(store, forget_now)
    _stopped_run(store, settings, fired)
    assert _derived(store, TEA) == {}  # nothing the stopped run made was written after the forget
    replay(store, settings, "2026-11-03", "2026-11-05", now=NOW)  # the next run: made with the forget
    assert store.runs(1)[0]["status"] == "ok"
    assert _derived(store, TEA) == {}
    assert store.memory_facts(user_ids=[ANA])  # her other facts are made


def test_a_scope_cleared_while_a_run_works_stays_cleared(store, settings):
    ingest_messages(store, anas() + others(), settings)
    fired = _once_before_the_first_facts_write(
        store, lambda: clear(store, settings, ANA, requested_by=OPERATOR, scope=f"guild:{G}", clock=CLOCK))
    _stopped_run(store, settings, fired)
    replay(store, settings, "2026-11-03", "2026-11-05", now=NOW)
    assert _derived(store, GEN_WORDS) == {}
    assert store.contexts()  # the others' memory is made


def test_a_message_deleted_while_a_run_works_leaves_no_fact_behind(store, settings):
    """The run goes on (deletions are frequent); a fact resting on the deleted message alone is
    not written, and the day is made again by the next run (the deletion queued it)."""
    ingest_messages(store, anas() + others(), settings)
    fired = _once_before_the_first_facts_write(
        store, lambda: delete_messages(store, [TEA_MESSAGE], settings, clock=CLOCK))
    replay(store, settings, "2026-11-03", "2026-11-05", now=NOW)
    assert fired and store.runs(1)[0]["status"] == "ok"
    del store.write_batch
    assert not [f for f in store.memory_facts(user_ids=[ANA]) if any(str(TEA_MESSAGE) in s for s in f["sources"])]
    assert not [f for f in store.memory_facts(user_ids=[ANA]) if TEA.search(f["text"])]
    assert store.memory_facts(user_ids=[ANA])  # facts resting on her other messages are written
    replay(store, settings, "2026-11-03", "2026-11-05", now=NOW)
    assert _derived(store, TEA) == {}


def test_a_pause_while_a_run_works_does_not_stop_it(store, settings):
    """A pause starts now: nothing the run read is removed."""
    ingest_messages(store, anas() + others(), settings)
    fired = _once_before_the_first_facts_write(
        store, lambda: pause(store, settings, ANA, requested_by=OPERATOR, clock=CLOCK))
    replay(store, settings, "2026-11-03", "2026-11-05", now=NOW)
    assert fired and store.runs(1)[0]["status"] == "ok"
