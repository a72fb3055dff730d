"""A week and a context that fit their budgets are rendered without a model; only what exceeds
them is sent to it; a same-day hourly refresh keeps the merge on an immaterial change and renders
today with the past week cut to fit on a material one, never a second merge call that day
(pipeline/stages/recent.py), through the real pipeline and the fake Gemini server."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re

import pytest

from pipeline.ingest import ingest_messages
from pipeline.runner import execute
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.responders import canned_answer
from tests.helpers import make_context
from tests.integration.test_gemini import gemini_settings, llm

UTC = dt.timezone.utc
G = 1150000000000000088
CHANNEL = 1170000000000000088
ANA, BO, CY = 1160000000000000301, 1160000000000000302, 1160000000000000303
NAMES = {ANA: "Ana", BO: "Bo", CY: "Cy"}
SCOPE = f"guild:{G}"
_ids = iter(range(1400000000000088000, 1400000000000089000))
_PERSON = re.compile(r'<person(?: name="([^"]*)">|>([^<]*)</person>)')


def _say(day: int, hour: int, uid: int, text: str) -> dict:
    return {"message_id": next(_ids), "guild_id": G, "channel_id": CHANNEL, "visibility": "public",
            "user_id": uid, "user_name": NAMES[uid], "ts": dt.datetime(2026, 11, day, hour, tzinfo=UTC), "text": text}


def _bo_long(day: int, hour: int, topic: str) -> list[dict]:
    """Three long messages: Bo's day is condensed by a model (canned: about 290 characters)."""
    return [_say(day, hour, BO, f"Long report {i} about the {topic}: the stones were cut, hauled up the hill, "
                                f"measured twice against the plans and set in fresh mortar by the crew.")
            for i in range(3)]


def _week(store, settings) -> None:
    rows = [_say(1, 10, ANA, "I adopted a cat named Miso."), _say(2, 10, ANA, "Miso sleeps on the balcony.")]
    for day, topic in ((1, "north tower"), (2, "east gate"), (3, "moat bridge")):
        rows += _bo_long(day, 11, topic)
    ingest_messages(store, rows, settings)


WALL = ("Bo said: the west wall rose another course today; stones were cut, hauled up the hill, measured "
        "twice against the plans and set in fresh mortar, while the crew argued about scaffolding, lunch breaks, "
        "the weather forecast, rope prices and whether the old quarry can still supply granite.")
CRANE = ("Bo said: the harbour crane finally arrived by barge; riggers unloaded beams, tested pulleys, "
         "greased winches and lifted timber onto the pier, and sailors watched from taverns near the lighthouse.")


def _budgets(s):
    """The default budgets' shape at half size: a room of 292 characters for one partition's week,
    600 for the recent part of a context."""
    s.summary = s.summary.model_copy(update={"daily_chars": 300, "historical_chars": 200, "context_chars": 600})
    return s


@pytest.fixture
def model(settings):
    with FakeGemini(canned_answer) as server:
        yield server, _budgets(gemini_settings(settings, server))


def _run(store, s, kind: str, now: dt.datetime, as_of: dt.date | None = None):
    ctx = make_context(store, s, now=now, summarizer=llm(s))
    asyncio.run(execute(ctx, kind, None, as_of))
    return ctx


def _requests(server, since: int = 0) -> list[tuple[str, str]]:
    """(operation, person) of every historical and merge request after the first `since`."""
    out = []
    for req in server.calls()[since:]:
        op = "historical" if "<person " in req.prompt_text else "merge" if "<past_week>" in req.prompt_text else None
        if op and (m := _PERSON.search(req.prompt_text)):
            out.append((op, m.group(1) or m.group(2)))
    return out


def _context(store, uid: int) -> dict:
    return store.contexts(SCOPE, uid)[0]


def test_a_week_that_fits_is_rendered_and_one_that_exceeds_is_condensed_once(store, model):
    server, s = model
    _week(store, s)
    ingest_messages(store, [_say(4, 9, ANA, "Bought Miso a new bed.")] + _bo_long(4, 9, "west wall"), s)
    ctx = _run(store, s, "run", dt.datetime(2026, 11, 4, 23, tzinfo=UTC), dt.date(2026, 11, 4))
    assert sorted(_requests(server)) == [("historical", "Bo"), ("merge", "Bo")]
    assert ctx.stats.historical_rendered == 1 and ctx.stats.contexts_rendered >= 1
    ana = _context(store, ANA)
    recent = ana["recent"]
    assert recent.startswith("Today, 2026-11-04: ") and "Bought Miso a new bed." in recent.split("\n")[0]
    assert "2026-11-02: " in recent and "Miso sleeps on the balcony." in recent
    assert "2026-11-01: " in recent and "I adopted a cat named Miso." in recent
    assert len(recent) <= s.summary.context_chars
    hist = store.historicals([dt.date(2026, 11, 4)], partition=SCOPE, user_ids=[ANA])[0]["summary"]
    assert hist.startswith("Past week: 2026-11-02: ") and "Miso" in hist  # a standalone text, for search too
    # the same run again: nothing changed, nothing is asked
    before = len(server.calls())
    again = _run(store, s, "run", dt.datetime(2026, 11, 4, 23, 30, tzinfo=UTC), dt.date(2026, 11, 4))
    assert len(server.calls()) == before and again.stats.summarizer_calls == 0


def test_hourly_refresh_re_merges_only_on_a_material_change_and_the_rollover_always(store, settings):
    bo_says = {"text": None}  # what the model answers for Bo's day, daily or fold (else the canned answer)

    def answer(request) -> str:
        out = json.loads(canned_answer(request))
        for item in out.get("summaries", ()):
            if bo_says["text"] and item["summary"].startswith("Bo said: "):
                item["summary"] = bo_says["text"]
        return json.dumps(out)

    with FakeGemini(answer) as server:
        s = _budgets(gemini_settings(settings, server))
        s.refresh.fold_min_chars = 0  # each hour's growth is folded (the waiting rule: test_fold_waits.py)
        _week(store, s)
        _run(store, s, "run", dt.datetime(2026, 11, 3, 23, tzinfo=UTC), dt.date(2026, 11, 3))

        def refresh(day: int, hour: int, rows: list[dict], bo: str, kind: str = "refresh"):
            bo_says["text"] = bo
            ingest_messages(store, rows, s)
            mark = len(server.calls())
            ctx = _run(store, s, kind, dt.datetime(2026, 11, day, hour, 59, tzinfo=UTC))
            return ctx, [r for r in _requests(server, mark) if r[0] == "merge"]

        # the first refresh of Nov 4: a new day 1, so Bo's context is merged again
        _ctx, merges = refresh(4, 9, _bo_long(4, 9, "west wall"), WALL)
        assert merges == [("merge", "Bo")]
        first = _context(store, BO)
        # Bo adds a word to his day (1 new content word of about 30: immaterial): the stored recent
        # part is kept, no merge request; counted as kept (a cache hit)
        ctx, merges = refresh(4, 10, [_say(4, 10, BO, "Thanks all.")], WALL + " He thanked everyone.")
        assert merges == [] and ctx.stats.merges_kept == 1
        kept = _context(store, BO)
        assert kept["recent"] == first["recent"] and kept["recent_hash"] == first["recent_hash"]
        assert kept["input_hash"] != first["input_hash"]  # fresh for the inputs it was kept for
        run = store.runs(1)[0]
        assert run["cache_hits"] >= 1 and run["summarizer_calls"] == ctx.stats.summarizer_calls
        # an unchanged refresh: nothing asked, nothing kept again
        ctx, merges = refresh(4, 10, [], WALL + " He thanked everyone.")
        assert merges == [] and ctx.stats.merges_kept == 0 and ctx.stats.summarizer_calls == 0
        # Bo's day turns to something new (a material change): today re-rendered with the past
        # week cut to fit, no merge request (the model merged this day 1 once already)
        ctx, merges = refresh(4, 11, _bo_long(4, 11, "harbour crane"), CRANE)
        assert merges == [] and ctx.stats.contexts_rendered >= 1
        cut = _context(store, BO)
        assert cut["recent"].startswith("Today, 2026-11-04: ") and "harbour crane" in cut["recent"]
        assert len(cut["recent"]) <= s.summary.context_chars and cut["recent_hash"] != first["recent_hash"]
        # a run of another kind the same day merges with the model (the cut render is not its answer)
        mark = len(server.calls())
        _run(store, s, "run", dt.datetime(2026, 11, 4, 12, 30, tzinfo=UTC), dt.date(2026, 11, 4))
        assert [r for r in _requests(server, mark) if r[0] == "merge"] == [("merge", "Bo")]
        assert "harbour crane" in _context(store, BO)["recent"]
        # the rollover of Nov 5 merges again, however small the change (here one new word of today's
        # text, and a past week whose canned answer reads the same)
        _ctx, merges = refresh(5, 0, _bo_long(5, 0, "harbour crane"), CRANE + " He rested.", kind="rollover")
        assert merges == [("merge", "Bo")]
        assert _context(store, BO)["as_of_day"] == dt.date(2026, 11, 5)
