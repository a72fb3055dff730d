"""An erase while a run is working (pipeline/store/controls.py refuse_after_removal): the run read the
user's rows before the erase, so it must not write what it made from them after it — on both
databases, with the run in one process and with its stages in two. Without the guard her facts,
profile and contexts came back after the erase and stayed for good (the next run does not make
facts from messages alone). And the error texts an erase re-keys."""

from __future__ import annotations

import pytest

from pipeline.controls import erase
from pipeline.errors import ErasedDuringRun
from tests.integration.test_controls import ANA, CLOCK, NOW, anas, canaries, others, replay
from pipeline.ingest import ingest_messages


def _erase_once_when_read(store, settings):
    """Erase Ana the first time the run reads a partition-day's messages (after it planned)."""
    read = store.messages_between
    done = []

    def racing(*args, **kwargs):
        rows = read(*args, **kwargs)
        if not done:
            done.append(True)
            erase(store, settings, ANA, requested_by=ANA, clock=CLOCK)
        return rows

    store.messages_between = racing
    return done


@pytest.mark.parametrize("processes", [1, 2])
def test_a_run_under_way_when_a_user_is_erased_writes_nothing_of_theirs(store, settings, processes):
    settings.processes = processes
    ingest_messages(store, anas() + others(), settings)
    erased = _erase_once_when_read(store, settings)
    try:
        replay(store, settings, "2026-11-03", "2026-11-05", now=NOW)
        stopped = None
    except ErasedDuringRun as exc:
        stopped = exc
    assert erased
    del store.messages_between
    assert not any(canaries(store).values())  # nothing of hers was written after the erase
    assert stopped is not None  # the run said why it stopped
    assert store.runs(1)[0]["status"] == "failed"
    assert "erased" in store.runs(1)[0]["error"]

    replay(store, settings, "2026-11-03", "2026-11-05", now=NOW)  # the next run, without her
    assert not any(canaries(store).values())
    assert not store.memory_facts(user_ids=[ANA]) and not store.contexts(user_id=ANA)
    assert store.contexts()  # the others' memory is made


def test_a_run_that_began_after_the_erase_writes_as_ever(store, settings):
    ingest_messages(store, anas() + others(), settings)
    erase(store, settings, ANA, requested_by=ANA, clock=CLOCK)
    replay(store, settings, "2026-11-03", "2026-11-05", now=NOW)
    assert store.runs(1)[0]["status"] == "ok"
    assert store.contexts() and not store.contexts(user_id=ANA)


def test_an_erase_re_keys_the_user_id_in_error_texts(store, settings):
    """A worker's failed merge job names the user of its first merge (workers/jobs.py): after an
    erase the runs' errors and the scheduler's last error carry the erased key, not the id; a
    longer number holding the id's digits is left alone."""
    import sqlalchemy as sa

    from pipeline.controls import erased_key
    from pipeline.db.tables import pipeline_runs, scheduler_state

    ingest_messages(store, anas() + others(), settings)
    replay(store, settings, "2026-11-03", "2026-11-05", now=NOW)
    said = f"3 context(s) of guild:1 from guild:1 user {ANA} failed in a worker: boom (9{ANA}1 unrelated)"
    with store.engine.begin() as conn:
        conn.execute(sa.update(pipeline_runs).values(error=said))
        conn.execute(sa.insert(scheduler_state).values(job_id="nightly", last_error=said))
    erase(store, settings, ANA, requested_by=ANA, clock=CLOCK)
    with store.engine.connect() as conn:
        texts = [*conn.execute(sa.select(pipeline_runs.c.error)).scalars(),
                 *conn.execute(sa.select(scheduler_state.c.last_error)).scalars()]
    key = erased_key(ANA)
    assert texts and all(t == said.replace(f"user {ANA} ", f"user {key} ") for t in texts)
