"""The hourly refresh's fold rule (pipeline/stages/daily.py `_fold_waits`, README "mempipe serve"):
today's partition-day whose only change is a few new messages waits — no request, its stored row
and contexts kept, counted as passed_fold_waits — until `refresh.fold_min_chars` characters of
new text or a new message `refresh.fold_max_wait_h` hours old (`refresh.fold_quiet_wait_h` for a
trickle under `refresh.fold_quiet_chars`); anything else is computed at once, and a finished day
is always made complete. Against the fake Gemini server through the
real client, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from pipeline.cli import report
from pipeline.ingest import delete_messages, ingest_messages
from pipeline.runner import execute
from pipeline.stages.facts import forget
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.responders import canned_answer, message_lines
from tests.helpers import dump_derived, make_context
from tests.integration.test_gemini import gemini_settings, llm
from tests.integration.test_refresh import G, _hour_of_messages

UTC = dt.timezone.utc
DAY = dt.date(2026, 11, 4)
PART = f"guild:{G}"
CHANNEL = 1170000000000000042
PASSED = ("passed_fits", "passed_week_rendered", "passed_recent_rendered", "passed_no_recent", "passed_reused",
          "passed_unchanged", "passed_fold_waits")


@pytest.fixture
def gemini():
    with FakeGemini(canned_answer) as server:
        yield server


def _settings(settings, server, min_chars: int, max_wait_h: float = 3, quiet_chars: int = 0, quiet_wait_h: float = 12):
    """quiet_chars 0 (no trickle tier) unless a test is about it: the hours here hold ~365 characters each."""
    s = gemini_settings(settings, server)
    s.refresh.fold_min_chars, s.refresh.fold_max_wait_h = min_chars, max_wait_h
    s.refresh.fold_quiet_chars, s.refresh.fold_quiet_wait_h = quiet_chars, quiet_wait_h
    return s


def _run(store, s, server, at: dt.datetime, kind: str = "refresh", as_of: dt.date | None = None,
         first: dt.date | None = None) -> dict:
    """One run with the clock at `at`; its pipeline_runs row and the day-stage requests it made
    (daily/fold prompts: those with <messages>), as (kind, message texts)."""
    server.reset()
    asyncio.run(execute(make_context(store, s, now=at, summarizer=llm(s)), kind, first, as_of))
    row = store.runs(1)[0]
    assert row["partition_days"] + row["historical_items"] + row["context_items"] == \
        row["summarized"] + sum(row[p] for p in PASSED) + row["errors"] + row["deferred"], row
    asked = [("fold" if "<summaries>" in r.prompt_text else "daily", [t for *_x, t in message_lines(r.prompt_text)])
             for r in server.calls() if "<messages>" in r.prompt_text]
    return row | {"asked": asked}


def _hour(store, settings, s, server, hour: int, minute: int = 59) -> dict:
    ingest_messages(store, _hour_of_messages(hour), settings)
    return _run(store, s, server, dt.datetime(2026, 11, 4, hour, minute, tzinfo=UTC))


def _texts(*hours: int) -> list[str]:
    return [m["text"] for h in hours for m in _hour_of_messages(h)]


def _texts_of(hour: int, per_hour: int) -> list[str]:
    return [m["text"] for m in _hour_of_messages(hour, per_hour)]


def _stored(store) -> dict:
    return store.partition_days_between(PART, DAY, DAY)[DAY]


def test_few_new_messages_wait_until_enough_text(store, settings, gemini):
    two_hours = sum(len(t) for t in _texts(9, 10))  # ~730 characters
    s = _settings(settings, gemini, min_chars=two_hours + 1)
    first = _hour(store, settings, s, gemini, 8)
    assert first["asked"] == [("daily", _texts(8))]  # no stored row: computed at once
    for hour in (9, 10):  # 1, then 2 hours of new text: below the threshold, the oldest < 3 h old
        before = dump_derived(store)
        run = _hour(store, settings, s, gemini, hour)
        assert gemini.calls() == []  # no request at all: no fold, and no merge (the inputs did not change)
        assert dump_derived(store) == before  # the running summaries, and the contexts, as they were
        assert run["passed_fold_waits"] == 1 and run["summarized"] == 0 and run["partition_days"] >= 1
        # `mempipe run` / `runs` name the reason
        assert "1 today's few new messages left for a later fold" in "\n".join(report.run_lines(run, "gemini"))
        assert "1 fold waits" in report.table_line(report.as_json(run))
        assert _stored(store)["message_count"] == 6
    run = _hour(store, settings, s, gemini, 11)  # 3 hours of text pass the threshold (oldest 2 h 59 min)
    assert run["asked"] == [("fold", _texts(9, 10, 11))]  # each message read once, in one fold
    assert run["passed_fold_waits"] == 0 and _stored(store)["message_count"] == 24


def test_with_condense_cut_enough_new_text_folds_without_waiting_for_the_oldest(store, settings, gemini):
    # "cut": a fold reads only the new messages (a daily request on them): it is made once they
    # reach fold_min_chars, not only when the oldest of them is fold_max_wait_h old
    two_hours = sum(len(t) for t in _texts(9, 10))
    s = _settings(settings, gemini, min_chars=two_hours + 1, max_wait_h=12)
    s.summary = s.summary.model_copy(update={"condense": "cut"})
    _hour(store, settings, s, gemini, 8)
    for hour in (9, 10):
        assert _hour(store, settings, s, gemini, hour)["passed_fold_waits"] == 1
    run = _hour(store, settings, s, gemini, 11)
    assert run["asked"] == [("daily", _texts(9, 10, 11))]  # the new messages, read once
    assert run["passed_fold_waits"] == 0 and _stored(store)["message_count"] == 24


def test_the_oldest_waiting_message_bounds_the_wait(store, settings, gemini):
    s = _settings(settings, gemini, min_chars=100_000, max_wait_h=3)
    _hour(store, settings, s, gemini, 8)
    assert _hour(store, settings, s, gemini, 9, minute=0)["passed_fold_waits"] == 1
    at = dt.datetime(2026, 11, 4, 9, tzinfo=UTC)  # the oldest new message: 09:00
    assert _run(store, s, gemini, at + dt.timedelta(hours=2, minutes=59))["asked"] == []
    run = _run(store, s, gemini, at + dt.timedelta(hours=3))
    assert run["asked"] == [("fold", _texts(9))] and run["passed_fold_waits"] == 0
    assert _stored(store)["message_count"] == 12


def test_a_trickle_waits_longer_than_fold_max_wait_h_and_more_text_does_not(store, settings, gemini):
    # under fold_quiet_chars of new text, the oldest message may be fold_quiet_wait_h old (its
    # fold's fixed part would cost more than it reads); once the waiting text reaches it, the
    # fold_max_wait_h bound applies again
    hour9 = sum(len(t) for t in _texts(9))
    s = _settings(settings, gemini, min_chars=100_000, max_wait_h=3, quiet_chars=hour9 + 1, quiet_wait_h=5)
    _hour(store, settings, s, gemini, 8)
    assert _hour(store, settings, s, gemini, 9, minute=0)["passed_fold_waits"] == 1
    at = dt.datetime(2026, 11, 4, 9, tzinfo=UTC)  # the oldest new message: 09:00, a trickle
    for late in (dt.timedelta(hours=3), dt.timedelta(hours=4, minutes=59)):
        run = _run(store, s, gemini, at + late)
        assert run["asked"] == [] and run["passed_fold_waits"] == 1
    run = _run(store, s, gemini, at + dt.timedelta(hours=5))
    assert run["asked"] == [("fold", _texts(9))] and _stored(store)["message_count"] == 12

    # more text than a trickle: the 3-hour bound
    _hour(store, settings, s, gemini, 15, minute=0)
    ingest_messages(store, _hour_of_messages(16), settings)
    at = dt.datetime(2026, 11, 4, 15, tzinfo=UTC)
    assert _run(store, s, gemini, at + dt.timedelta(hours=2, minutes=59))["asked"] == []
    assert _run(store, s, gemini, at + dt.timedelta(hours=3))["asked"] == [("fold", _texts(15, 16))]


def test_a_threshold_of_zero_folds_every_hour(store, settings, gemini):
    s = _settings(settings, gemini, min_chars=0)
    _hour(store, settings, s, gemini, 8)
    assert _hour(store, settings, s, gemini, 9)["asked"] == [("fold", _texts(9))]


def _said(hour: int, uid: int, text: str) -> dict:
    from tests.integration.test_refresh import USERS
    return {"message_id": 1400000000000000000 + hour * 100 + 50, "guild_id": G, "channel_id": CHANNEL,
            "visibility": "public", "user_id": uid, "user_name": USERS[uid],
            "ts": dt.datetime(2026, 11, 4, hour, 30, tzinfo=UTC), "text": text}


def test_a_busy_hour_waits_while_its_text_is_shorter_than_the_summaries_a_fold_rereads(store, settings, gemini):
    from tests.integration.test_refresh import USERS
    s = _settings(settings, gemini, min_chars=10)  # every case below is past fold_min_chars
    _hour(store, settings, s, gemini, 8)
    uid = list(USERS)[0]
    running = next(r["summary"] for r in store.dailies([DAY], partition=PART) if r["user_id"] == uid)
    short = "The drawbridge chains arrived."  # shorter than the speaker's running summary
    assert 10 <= len(short) < len(running)
    ingest_messages(store, [_said(9, uid, short)], settings)
    run = _run(store, s, gemini, dt.datetime(2026, 11, 4, 9, 59, tzinfo=UTC))
    assert run["asked"] == [] and run["passed_fold_waits"] == 1
    longer = "Then " + "the masons argued about lime mortar and sand ratios for the outer bailey, " * 4
    assert len(short) + len(longer) >= len(running)
    ingest_messages(store, [_said(10, uid, longer)], settings)
    run = _run(store, s, gemini, dt.datetime(2026, 11, 4, 10, 59, tzinfo=UTC))
    assert run["asked"] == [("fold", [short, longer])] and run["passed_fold_waits"] == 0


def test_a_fold_that_makes_no_request_never_waits(store, settings, gemini):
    # a few words that fit the day's length with the speaker's running summary are folded as
    # written (no request), so waiting would save nothing: they join the running summary at once
    # (the contexts follow by the hourly re-merge rule); a message that does not fit so still waits
    from tests.integration.test_refresh import USERS
    s = _settings(settings, gemini, min_chars=100_000, quiet_chars=2_000, quiet_wait_h=12)
    s.summary = s.summary.model_copy(update={"daily_chars": 250})
    uid = list(USERS)[0]
    ingest_messages(store, _hour_of_messages(8, per_hour=12), settings)  # 4 messages each: over 250
    assert _run(store, s, gemini, dt.datetime(2026, 11, 4, 8, 59, tzinfo=UTC))["asked"] == [("daily", _texts_of(8, 12))]
    running = next(r["summary"] for r in store.dailies([DAY], partition=PART) if r["user_id"] == uid)
    short = "Gate fixed."
    assert len(short) + 4 + len(running) + len(USERS[uid]) + 2 <= 250  # fits with the running summary
    ingest_messages(store, [_said(9, uid, short)], settings)
    run = _run(store, s, gemini, dt.datetime(2026, 11, 4, 9, 59, tzinfo=UTC))
    assert run["asked"] == [] and run["passed_fold_waits"] == 0  # no request, and no wait
    assert _stored(store)["message_count"] == 13
    folded = next(r["summary"] for r in store.dailies([DAY], partition=PART) if r["user_id"] == uid)
    assert folded == f"{running}\n{USERS[uid]}: “{short}”"  # the running summary kept, the new words quoted

    longer = "The western tower needs new scaffolding, and the masons want lime mortar before the first frost."
    assert len(longer) + 4 + len(folded) + len(USERS[uid]) + 2 > 250  # does not fit: a fold would ask
    ingest_messages(store, [_said(10, uid, longer)], settings)
    run = _run(store, s, gemini, dt.datetime(2026, 11, 4, 10, 59, tzinfo=UTC))
    assert run["asked"] == [] and run["passed_fold_waits"] == 1
    assert _stored(store)["message_count"] == 13


def _waiting(store, settings, s, server) -> None:
    _hour(store, settings, s, server, 8)
    assert _hour(store, settings, s, server, 9)["passed_fold_waits"] == 1


def test_an_edit_is_computed_at_once(store, settings, gemini):
    s = _settings(settings, gemini, min_chars=100_000)
    _waiting(store, settings, s, gemini)
    edited = _hour_of_messages(8)[0] | {"text": "Ana corrects herself: the walls are finished.",
                                         "edited_ts": dt.datetime(2026, 11, 4, 10, tzinfo=UTC)}
    ingest_messages(store, [edited], settings)
    run = _run(store, s, gemini, dt.datetime(2026, 11, 4, 10, 59, tzinfo=UTC))
    assert [k for k, _t in run["asked"]] == ["daily"] and run["passed_fold_waits"] == 0
    assert _stored(store)["message_count"] == 12


@pytest.mark.parametrize("which", ["folded", "waiting"])
def test_a_deletion_is_computed_at_once(store, settings, gemini, which):
    """A deleted message queues its day (pipeline/ingest/deletion.py): made again now, whether the
    message was already folded or still waiting."""
    s = _settings(settings, gemini, min_chars=100_000)
    _waiting(store, settings, s, gemini)
    gone = _hour_of_messages(8 if which == "folded" else 9)[1]
    delete_messages(store, [(CHANNEL, gone["message_id"])], settings)
    run = _run(store, s, gemini, dt.datetime(2026, 11, 4, 10, 59, tzinfo=UTC))
    assert run["passed_fold_waits"] == 0 and run["asked"], run["asked"]
    assert all(gone["text"] not in texts for _k, texts in run["asked"])
    assert _stored(store)["message_count"] == 11


def test_a_forget_is_computed_at_once(store, settings, gemini):
    s = _settings(settings, gemini, min_chars=100_000)
    _waiting(store, settings, s, gemini)
    ana = _hour_of_messages(8)[0]["user_id"]
    asyncio.run(forget(make_context(store, settings), PART, ana, "castle walls"))
    run = _run(store, s, gemini, dt.datetime(2026, 11, 4, 10, 59, tzinfo=UTC))
    assert [k for k, _t in run["asked"]] == ["daily"] and run["passed_fold_waits"] == 0
    assert _stored(store)["message_count"] == 12


def test_an_in_chat_memory_request_is_folded_at_once(store, settings, gemini):
    """"forget what I said about …" is applied within the hour (stages/requests.py), not hours later."""
    s = _settings(settings, gemini, min_chars=100_000)
    _waiting(store, settings, s, gemini)
    ask = _hour_of_messages(10)[0] | {"text": "Please forget what I said about the castle walls."}
    ingest_messages(store, [ask], settings)
    run = _run(store, s, gemini, dt.datetime(2026, 11, 4, 10, 59, tzinfo=UTC))
    # folded now; the forget it asked for then makes the day again (stages/requests.py)
    assert run["asked"][0] == ("fold", _texts(9) + [ask["text"]]) and run["passed_fold_waits"] == 0
    assert run["requests_forgotten"] == 1


@pytest.mark.parametrize("night", ["rollover", "run as of the day"])
def test_a_finished_day_is_always_completed_and_then_costs_nothing(store, settings, gemini, night):
    s = _settings(settings, gemini, min_chars=100_000, max_wait_h=24)
    _waiting(store, settings, s, gemini)
    if night == "rollover":  # the zone's rollover after midnight: the day is yesterday now
        run = _run(store, s, gemini, dt.datetime(2026, 11, 5, 0, 5, tzinfo=UTC), kind="rollover")
    else:  # `mempipe run --date 2026-11-04`, while the day is still today
        run = _run(store, s, gemini, dt.datetime(2026, 11, 4, 10, 30, tzinfo=UTC), kind="run", as_of=DAY)
    assert run["asked"] == [("fold", _texts(9))] and run["passed_fold_waits"] == 0
    assert _stored(store)["message_count"] == 12
    replay = _run(store, s, gemini, dt.datetime(2026, 11, 5, 12, tzinfo=UTC), kind="replay", as_of=DAY, first=DAY)
    assert gemini.calls() == [] and replay["llm_calls"] == 0 and replay["passed_fold_waits"] == 0


def test_a_replay_never_waits(store, settings, gemini):
    s = _settings(settings, gemini, min_chars=100_000, max_wait_h=24)
    _waiting(store, settings, s, gemini)
    run = _run(store, s, gemini, dt.datetime(2026, 11, 4, 10, 30, tzinfo=UTC), kind="replay", as_of=DAY, first=DAY)
    assert run["asked"] == [("fold", _texts(9))] and run["passed_fold_waits"] == 0


def test_a_dry_run_refresh_predicts_the_wait(store, settings, gemini):
    s = _settings(settings, gemini, min_chars=100_000)
    _waiting(store, settings, s, gemini)
    ingest_messages(store, _hour_of_messages(10), settings)
    at = dt.datetime(2026, 11, 4, 10, 59, tzinfo=UTC)
    gemini.reset()
    ctx = make_context(store, s, now=at, summarizer=llm(s), dry_run=True)
    asyncio.run(execute(ctx, "refresh", None, None))
    assert ctx.stats.passed_fold_waits == 1 and ctx.stats.planned_llm_calls == 0 and gemini.calls() == []


def test_an_in_process_summarizer_never_waits(store, settings):
    """The extractive summarizer's fold costs no request: waiting would only keep "today" stale."""
    settings.refresh.fold_min_chars = 100_000
    for hour in (8, 9):
        ingest_messages(store, _hour_of_messages(hour), settings)
        ctx = make_context(store, settings, now=dt.datetime(2026, 11, 4, hour, 59, tzinfo=UTC))
        asyncio.run(execute(ctx, "refresh", None, None))
        assert ctx.stats.passed_fold_waits == 0 and ctx.stats.daily_computed == 1
    assert _stored(store)["message_count"] == 12
