"""A merge whose profile is unchanged uses the stored profile text instead of choosing and
rendering it again (pipeline/stages/merge.py `_Profile`): the same text a render makes, except
where a forgotten fact applies or the run is forced — then it is rendered afresh."""

from __future__ import annotations

import asyncio
import datetime as dt

import sqlalchemy as sa

from pipeline.db.tables import memory_profiles
from pipeline.ingest import ingest_messages
from pipeline.stages.facts import forget
from tests.helpers import make_context
from tests.integration.test_memory import ANA, BO, D1, DM_ANA, G, GENERAL, msg, run

SCOPE = f"guild:{G}"
MARK = "# Ana: long-term memory\n\n## Other\n- Stored text, not rendered again"


def _two_nights(store, settings):
    ingest_messages(store, [msg(1, GENERAL, ANA, "We moved to Lisbon", D1),
                            msg(2, GENERAL, ANA, "my cat Miso sleeps all day", D1, hour=13),
                            msg(3, GENERAL, BO, "I love Celeste so much", D1, hour=14),
                            msg(4, DM_ANA, ANA, "Muse tonight, maybe", D1, hour=15)], settings)
    run(store, settings, D1)
    # the next day: Bo speaks, Ana does not (her facts and so her profiles are unchanged)
    ingest_messages(store, [msg(5, GENERAL, BO, "Celeste again tonight", D1 + dt.timedelta(days=1))], settings)


def _tamper(store, scope: str, user: int) -> None:
    with store.engine.begin() as conn:
        conn.execute(sa.update(memory_profiles).where(memory_profiles.c.scope == scope, memory_profiles.c.user_id == user)
                     .values(profile=MARK))


def _context(store, scope: str, user: int) -> str:
    return store.contexts(scope, user)[0]["context"]


def test_an_unchanged_profile_is_not_rendered_again(store, settings):
    _two_nights(store, settings)
    before = store.profiles(SCOPE, ANA)[0]
    _tamper(store, SCOPE, ANA)  # what the stored row says is what the next context shows
    run(store, settings, D1 + dt.timedelta(days=1))
    assert "Stored text, not rendered again" in _context(store, SCOPE, ANA)
    assert store.profiles(SCOPE, ANA)[0]["input_hash"] == before["input_hash"]


def test_the_stored_text_is_what_a_render_makes(store, settings):
    _two_nights(store, settings)
    run(store, settings, D1 + dt.timedelta(days=1))
    kept = {(s, u): _context(store, s, u) for s, u in [(SCOPE, ANA), (SCOPE, BO), (f"dm:{DM_ANA}", ANA)]}
    assert "Lisbon" in kept[(SCOPE, ANA)] and "Miso" in kept[(SCOPE, ANA)]
    run(store, settings, D1 + dt.timedelta(days=1), force=True)  # every profile rendered again
    assert {k: _context(store, *k) for k in kept} == kept


def test_a_forced_run_renders_the_profile_again(store, settings):
    _two_nights(store, settings)
    _tamper(store, SCOPE, ANA)
    run(store, settings, D1 + dt.timedelta(days=1), force=True)
    text = _context(store, SCOPE, ANA)
    assert "Stored text" not in text and "Lisbon" in text


def test_a_forgotten_fact_that_applies_renders_the_profile_again(store, settings):
    _two_nights(store, settings)
    ctx = make_context(store, settings, now=dt.datetime.combine(D1, dt.time(18), dt.timezone.utc))
    asyncio.run(forget(ctx, SCOPE, ANA, "plays the violin", refresh=False))  # stated nowhere: no fact goes
    _tamper(store, SCOPE, ANA)
    run(store, settings, D1 + dt.timedelta(days=1))
    text = _context(store, SCOPE, ANA)
    assert "Stored text" not in text and "Lisbon" in text


def test_a_changed_fact_set_renders_the_profile_again(store, settings):
    _two_nights(store, settings)
    _tamper(store, SCOPE, ANA)
    ingest_messages(store, [msg(6, GENERAL, ANA, "We moved to Porto last week", D1 + dt.timedelta(days=1))], settings)
    run(store, settings, D1 + dt.timedelta(days=1))
    text = _context(store, SCOPE, ANA)
    assert "Stored text" not in text and "Moved to Porto" in text
