"""Gemini Batch mode end to end (gemini.batch; pipeline/llm/batch.py, batch_jobs.py) through the
real google-genai client and the loopback fake server's Batch API, on every database: a batch
night submits instead of calling generateContent, takes rounds, and writes exactly the rows an
interactive night writes; a failed, expired or timed-out job falls back to interactive requests."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from pipeline.cli import cli
from pipeline.clock import fixed_clock
from pipeline.config import ModelLimits
from pipeline.controls import forget, remember
from pipeline.controls.clear import clear, erase
from pipeline.ingest import ingest_messages
from pipeline.runner import execute
from pipeline.scheduler.jobs import Runtime, run_job
from pipeline.scheduler.schedule import BATCH_POLL, build_triggers
from pipeline.store import Store
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.responders import canned_answer
from tests.helpers import dump_derived, make_context, replay, tokens_in_tables
from tests.integration.test_gemini import gemini_settings, llm

UTC = dt.timezone.utc
G = 1150000000000000951
GENERAL, DM = 1170000000000000951, 1170000000000000952
ANA, BO = 1160000000000000951, 1160000000000000952
FIRST, LAST = "2026-11-03", "2026-11-04"
ROUNDS = 8  # a night's rounds: daily chunks, reduce, historical, merge (and a re-ask's), with room


@pytest.fixture
def server():
    with FakeGemini(canned_answer) as s:
        yield s


def _msg(mid: int, channel: int, user: int, text: str, day: int, hour: int, name: str) -> dict:
    row = {"message_id": 1190000000000095000 + mid, "channel_id": channel, "user_id": user, "user_name": name,
           "text": text, "ts": dt.datetime(2026, 11, day, hour, mid % 60, tzinfo=UTC)}
    if channel == GENERAL:
        return row | {"guild_id": G, "visibility": "public", "channel_name": "general"}
    return row | {"guild_id": None, "visibility": "dm", "is_group": False}


def chat(store, s, *, canary: str = "") -> None:
    """Two days in a guild and a DM, one of them long enough to be map-reduced (input budget)."""
    ana = f"I am building a castle with four towers, a moat and a drawbridge that really works {canary}."
    bo = "I am mapping the ocean monument and the sunken ship next to it this week."
    rows = [_msg(1, GENERAL, ANA, ana, 3, 9, "Ana"), _msg(2, GENERAL, BO, bo, 3, 10, "Bo"),
            _msg(3, GENERAL, ANA, ana, 4, 9, "Ana"), _msg(4, DM, ANA, ana, 4, 11, "Ana")]
    rows += [_msg(10 + i, GENERAL, BO if i % 2 else ANA, f"{bo if i % 2 else ana} Part {i}.", 4, 12 + i // 20, "Bo" if i % 2 else "Ana")
             for i in range(60)]
    ingest_messages(store, rows, s)


def batch_settings(settings, server, **gemini):
    # a small input budget: the long day is chunked and reduced (two daily rounds)
    return gemini_settings(settings, server, batch=True, input_budget_tokens=900, **gemini)


def night(store, s, *, now=None):
    """One replay of the two days with batch on; its run row."""
    ctx, result = replay(store, s, FIRST, LAST, summarizer=llm(s), **({"now": now} if now else {}))
    return ctx, store.run(result.run_id)


def batch_rows(store) -> dict[str, list]:
    with store.engine.connect() as conn:
        return {t: [dict(r._mapping) for r in conn.execute(sa.text(f"SELECT * FROM {t}"))]
                for t in ("llm_batch_requests", "llm_batch_jobs")}


def derived(store) -> dict:
    """The derived tables, and the facts without their ids and write times (made in another order)."""
    with store.engine.connect() as conn:
        facts = sorted(tuple(str(v) for v in r) for r in conn.execute(sa.text(
            "SELECT user_id, partition, level, category, text, fact_key, confidence, event_day, first_seen, "
            "last_seen, origin, status, input_hash FROM memory_facts")))
    return dump_derived(store) | {"memory_facts": facts}


def interactive_reference(tmp_path, settings, server) -> dict:
    ref = Store.open(f"sqlite:///{tmp_path}/interactive.db", check_schema=False)
    ref.upgrade()
    try:
        s = batch_settings(settings, server)
        s.gemini.batch = False
        chat(ref, s)
        replay(ref, s, FIRST, LAST, summarizer=llm(s))
        return derived(ref)
    finally:
        ref.close()


def finish_the_night(store, s, server, rounds: int = ROUNDS) -> None:
    """Rounds until nothing waits: each finishes the jobs the last one submitted."""
    for _ in range(rounds):
        server.finish_batches()
        if not night(store, s)[1]["deferred"]:
            return
    raise AssertionError(f"still deferring after {rounds} rounds")


def items(row: dict) -> int:
    return row["partition_days"] + row["historical_items"] + row["context_items"]


def added_up(row: dict) -> bool:
    passed = sum(row[c] for c in ("passed_fits", "passed_week_rendered", "passed_recent_rendered", "passed_no_recent",
                                  "passed_reused", "passed_unchanged"))
    return items(row) == row["summarized"] + passed + row["errors"] + row["deferred"]


def test_a_batch_night_writes_the_rows_of_an_interactive_night_in_rounds(store, settings, server, tmp_path):
    expected = interactive_reference(tmp_path, settings, server)
    server.reset()
    s = batch_settings(settings, server)
    chat(store, s)
    rounds, inline = [], 0
    for _ in range(ROUNDS):
        _ctx, run = night(store, s)
        rounds.append(run)
        assert run["status"] == "ok" and run["errors"] == 0 and run["fallbacks"] == 0
        assert added_up(run), run
        if not run["deferred"]:
            break
        jobs = [j for j in batch_rows(store)["llm_batch_jobs"] if j["state"] == "running"]
        assert jobs, "a run that deferred items submitted them"
        inline += server.finish_batches()
    assert not rounds[-1]["deferred"] and len(rounds) >= 4  # daily chunks, reduce, historical, merge
    assert server.calls("generateContent") == []  # every answer came from a batch job
    creates = server.calls("batchGenerateContent")
    assert creates and {r.api_version for r in creates} == {"v1beta"}
    assert len(server.calls("inline")) == inline == sum(r["llm_calls"] for r in rounds)
    assert derived(store) == expected
    assert batch_rows(store)["llm_batch_requests"] == []  # every answer used, then deleted
    with store.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM partition_days WHERE degraded")).scalar() == 0


def test_the_first_round_defers_without_errors_rows_or_model_calls(store, settings, server):
    s = batch_settings(settings, server)
    chat(store, s)
    _ctx, run = night(store, s)
    assert run["status"] == "ok" and run["deferred"] > 0
    assert run["errors"] == run["fallbacks"] == run["summarized"] == run["llm_calls"] == 0
    assert added_up(run)
    assert server.calls("generateContent") == []
    assert store.dump("daily_summaries") == [] and store.dump("memory_context") == []
    pending = batch_rows(store)["llm_batch_requests"]
    assert pending and {r["state"] for r in pending} == {"submitted"}
    jobs = batch_rows(store)["llm_batch_jobs"]
    assert sum(j["requests"] for j in jobs) == len(pending)
    assert {j["run_kind"] for j in jobs} == {"replay"} and {str(j["date_from"]) for j in jobs} == {FIRST}
    # a job not finished yet: the next run collects nothing, sends nothing again
    _ctx, again = night(store, s)
    assert again["deferred"] == run["deferred"] and len(server.calls("batchGenerateContent")) == len(jobs)


@pytest.mark.parametrize("state", ["BATCH_STATE_FAILED", "BATCH_STATE_EXPIRED"])
def test_a_failed_or_expired_job_falls_back_to_interactive_requests_within_the_limiter(store, settings, server,
                                                                                        tmp_path, state):
    expected = interactive_reference(tmp_path, settings, server)
    server.reset()
    s = batch_settings(settings, server, rate_window_s=0.5)
    s.gemini.limits = {"gemini-2.5-flash": ModelLimits(rpm=3)}
    chat(store, s)
    _ctx, first = night(store, s)
    failed = len(batch_rows(store)["llm_batch_requests"])
    assert server.fail_batches(state=state) >= 1
    _ctx, second = night(store, s)
    calls = server.calls("generateContent")
    assert len(calls) == failed  # the failed job's requests, sent interactively
    assert server.max_requests_in_window(0.5) <= 3  # through the limiter
    assert second["errors"] == second["fallbacks"] == 0
    finish_the_night(store, s, server)
    assert derived(store) == expected
    # each failed request sent interactively once: its answer is kept for the item's later rounds
    assert len(server.calls("generateContent")) == failed


def test_a_job_unfinished_after_the_timeout_is_cancelled_and_its_requests_go_interactive(store, settings, server):
    s = batch_settings(settings, server, batch_timeout_h=2)
    chat(store, s)
    start = dt.datetime(2026, 11, 5, 12, tzinfo=UTC)
    night(store, s, now=start)
    submitted = len(batch_rows(store)["llm_batch_requests"])
    night(store, s, now=start + dt.timedelta(hours=1))  # not late yet: still waiting
    assert server.calls("generateContent") == [] and server.calls("batches.cancel") == []
    first_jobs = set(server.batch_jobs)
    _ctx, late = night(store, s, now=start + dt.timedelta(hours=3))
    assert {r.path.split(":")[0].removeprefix("/v1beta/") for r in server.calls("batches.cancel")} == first_jobs
    assert {server.batch_jobs[n].state for n in first_jobs} == {"BATCH_STATE_CANCELLED"}
    timed_out = [j for j in batch_rows(store)["llm_batch_jobs"] if j["state"] == "timed_out"]
    assert timed_out and all("unfinished after 2 h" in j["error"] for j in timed_out)
    assert len(server.calls("generateContent")) == submitted
    assert late["errors"] == late["fallbacks"] == 0


def test_the_serve_poll_collects_finished_jobs_and_runs_the_submitting_run_again(store, settings, server):
    s = batch_settings(settings, server)
    chat(store, s)
    now = dt.datetime(2026, 11, 5, 12, tzinfo=UTC)
    _ctx, first = night(store, s, now=now)
    rt = Runtime(store, s, clock=fixed_clock(now + dt.timedelta(minutes=10)), make_summarizer=llm)
    report = asyncio.run(run_job(rt, BATCH_POLL))  # nothing finished yet: nothing to run
    assert report["outcome"] == "ok" and report["batch_jobs_collected"] == 0 and report["run_ids"] == []
    server.finish_batches()
    report = asyncio.run(run_job(rt, BATCH_POLL))
    assert report["outcome"] == "ok" and report["batch_jobs_collected"] == 1 and len(report["run_ids"]) == 1
    rerun = store.run(report["run_ids"][0])
    assert (rerun["kind"], str(rerun["date_from"]), str(rerun["date_to"])) == ("replay", FIRST, LAST)
    assert rerun["status"] == "ok" and rerun["llm_calls"] > 0 and rerun["summarized"] > 0
    jobs = {j["name"]: j for j in batch_rows(store)["llm_batch_jobs"]}
    collected = [j for j in jobs.values() if j["state"] == "succeeded"]
    assert len(collected) == 1 and collected[0]["rerun_at"] is not None
    assert server.calls("generateContent") == []


def test_the_serve_poll_runs_again_the_run_of_a_failed_job(store, settings, server):
    """A job that failed is a job that ended: its run goes again (sending its requests
    interactively), not only at the next rollover."""
    s = batch_settings(settings, server)
    chat(store, s)
    now = dt.datetime(2026, 11, 5, 12, tzinfo=UTC)
    night(store, s, now=now)
    server.fail_batches()
    rt = Runtime(store, s, clock=fixed_clock(now + dt.timedelta(minutes=10)), make_summarizer=llm)
    report = asyncio.run(run_job(rt, BATCH_POLL))
    assert report["outcome"] == "ok" and report["batch_jobs_collected"] == 1 and len(report["run_ids"]) == 1
    rerun = store.run(report["run_ids"][0])
    assert rerun["status"] == "ok" and rerun["llm_calls"] > 0
    assert server.calls("generateContent")  # the failed job's requests, asked interactively
    again = asyncio.run(run_job(rt, BATCH_POLL))  # taken up once: not run again
    assert again["run_ids"] == [] or all(r != report["run_ids"][0] for r in again["run_ids"])


def test_an_in_chat_forget_in_a_batch_night_is_applied_and_fails_no_run(store, settings, server):
    """A chat forget is applied by the run itself (outside any item): its model request goes
    interactively — a Deferred there would fail the run, and every run after it."""
    s = batch_settings(settings, server)
    chat(store, s)
    # a fact for the forget to ask the model about (the canned answers extract none here)
    asyncio.run(remember(make_context(store, s), f"dm:{DM}", ANA, "Is building a drawbridge that really works",
                         requested_by=ANA))
    ingest_messages(store, [_msg(98, DM, ANA, "Please forget what I said about the drawbridge.", 4, 22, "Ana")], s)
    # the request is applied once the dailies are all made; the days it reaches are made again,
    # in batch too: the night's rounds start over once
    finish_the_night(store, s, server, rounds=2 * ROUNDS)
    with store.engine.connect() as conn:
        left = conn.execute(sa.text("SELECT text FROM memory_facts WHERE user_id = :u"), {"u": ANA}).scalars().all()
    assert not any("drawbridge" in t for t in left), left
    runs = store.runs(20)
    assert {r["status"] for r in runs} == {"ok"}, [(r["status"], r["error"]) for r in runs]
    assert sum(r["requests_forgotten"] for r in runs) == 1


def test_two_runs_submitting_at_once_make_one_job(store, db_kind, settings, server):
    """Two processes ending their rounds together read the same pending requests: one submits
    them (a lock on the database), the other finds nothing left — never a second, billed job."""
    from pipeline.llm.batch_jobs import submit

    if db_kind == "sqlite" and store.engine.url.database in (None, "", ":memory:"):
        pytest.skip("one in-memory SQLite database is one process")
    s = batch_settings(settings, server)
    now = dt.datetime(2026, 11, 5, 12, tzinfo=UTC)
    for i in range(3):
        store.record_batch_request(f"key-{i}", s.gemini.model_for("daily"),
                                   {"prompt": f"prompt {i}", "system": "system", "schema": None,
                                    "max_output_tokens": 64}, now)
    run = {"run_kind": "run", "date_from": None, "date_to": None, "guild_id": None}

    async def both():
        one, two = llm(s), llm(s)
        try:
            return await asyncio.gather(submit(store, one.client, s, run, now), submit(store, two.client, s, run, now))
        finally:
            await one.aclose()
            await two.aclose()
    first, second = asyncio.run(both())
    assert len(server.calls("batchGenerateContent")) == 1
    assert sorted([len(first), len(second)]) == [0, 1]
    assert [j["requests"] for j in batch_rows(store)["llm_batch_jobs"]] == [3]


def test_serve_schedules_the_poll_only_with_batch_on(settings, server):
    assert BATCH_POLL not in build_triggers(settings)
    s = batch_settings(settings, server, batch_poll_s=90)
    trigger = build_triggers(s)[BATCH_POLL]
    assert trigger.interval == dt.timedelta(seconds=90)


def test_erase_and_clear_leave_nothing_in_the_batch_tables(store, settings, server):
    s = batch_settings(settings, server)
    chat(store, s, canary="ZQXBATCHCANARY")
    night(store, s)  # submitted: the prompts quote the canary
    server.finish_batches()
    asyncio.run(execute(make_context(store, s, summarizer=llm(s)), "replay", dt.date(2026, 11, 3),
                        dt.date(2026, 11, 4)))  # answered and pending rows now
    found = tokens_in_tables(store.engine, re.compile(r"ZQXBATCHCANARY"))
    assert "llm_batch_requests" in found  # the scan sees batch rows
    erase(store, s, ANA, requested_by=ANA)
    found = tokens_in_tables(store.engine, re.compile(r"ZQXBATCHCANARY"))
    assert found == {}
    assert batch_rows(store)["llm_batch_requests"] == []
    night(store, s)  # asked again (Bo's items), then a forget drops them
    assert batch_rows(store)["llm_batch_requests"]
    ctx = make_context(store, s, summarizer=llm(s))

    async def forget_it():  # its merges ask interactively: no book outside a batching run
        try:
            await forget(ctx, f"guild:{G}", BO, "maps the ocean monument", requested_by=BO)
        finally:
            await ctx.summarizer.aclose()
    asyncio.run(forget_it())
    assert batch_rows(store)["llm_batch_requests"] == []
    night(store, s)  # asked again, then a clear drops them too
    assert batch_rows(store)["llm_batch_requests"]
    clear(store, s, BO, requested_by=BO)
    assert batch_rows(store)["llm_batch_requests"] == []


CANARY = re.compile(r"ZQXDELETEDCANARY")


def _dropped_by_deletion(item_key: str | None, day: str) -> bool:
    """What a deletion of a guild message of `day` drops: that day's daily requests, the guild's
    past weeks, every merge, anything unmarked (pipeline/store/batches.py drop_batch_requests)."""
    return (item_key is None or item_key == f"daily:guild:{G}:{day}" or item_key.startswith("merge:")
            or item_key.startswith(f"historical:guild:{G}:"))


def _batch_keys(store) -> dict:
    return {r["request_key"]: r["item_key"] for r in batch_rows(store)["llm_batch_requests"]}


@pytest.mark.parametrize("when", ["daily round", "historical round"])
def test_a_deleted_message_leaves_nothing_in_the_batch_tables(store, settings, server, when):
    from pipeline.ingest import delete_messages

    s = batch_settings(settings, server)
    chat(store, s)
    ingest_messages(store, [_msg(99, GENERAL, BO, "ZQXDELETEDCANARY is my new server password hint.", 3, 23, "Bo")], s)
    night(store, s)  # submitted: a daily prompt quotes the message
    for _ in range(ROUNDS if when == "historical round" else 0):  # on to a past week quoting its summary
        if any(k and k.startswith("historical:") for k, t in
               ((r["item_key"], str(r["request"])) for r in batch_rows(store)["llm_batch_requests"]) if CANARY.search(t)):
            break
        server.finish_batches()
        night(store, s)
    else:
        assert when == "daily round", "no past-week request quoted the message"
    assert "llm_batch_requests" in tokens_in_tables(store.engine, CANARY)
    before = _batch_keys(store)
    delete_messages(store, [(GENERAL, 1190000000000095099)], s)
    # at once in the batch tables (the summaries made from it go with the day's next run)
    assert "llm_batch_requests" not in tokens_in_tables(store.engine, CANARY)
    # the rest of the night's batch stays where it was (the DM's and the other days' requests)
    after = _batch_keys(store)
    assert after == {k: v for k, v in before.items() if not _dropped_by_deletion(v, "2026-11-03")} and after
    finish_the_night(store, s, server)  # asked again without it
    assert tokens_in_tables(store.engine, CANARY) == {}


def test_mempipe_batches_lists_the_jobs_and_runs_shows_the_deferred_items(store, db_url, settings, server):
    s = batch_settings(settings, server)
    chat(store, s)
    _ctx, run = night(store, s)
    runner = CliRunner()
    listed = runner.invoke(cli, ["--db", db_url, "batches"])
    assert listed.exit_code == 0, listed.output
    header, *lines = listed.output.splitlines()
    assert header.split() == ["name", "model", "state", "requests", "age", "run"]
    jobs = batch_rows(store)["llm_batch_jobs"]
    assert len(lines) == len(jobs) and all(" running " in line and "replay 2026-11-03..2026-11-04" in line
                                           for line in lines)
    as_json = json.loads(runner.invoke(cli, ["--db", db_url, "batches", "--json"]).output)
    assert {j["name"] for j in as_json} == {j["name"] for j in jobs}
    assert sum(j["requests"] for j in as_json) == len(batch_rows(store)["llm_batch_requests"])
    runs = runner.invoke(cli, ["--db", db_url, "runs"]).output.splitlines()
    assert runs[1].endswith(f"; {run['deferred']} deferred to a batch job")


def test_a_batch_answer_cut_short_is_asked_again_in_halves_in_the_next_round(store, settings):
    # answers far longer than estimated (each summary padded): the long day's batch answers come
    # back cut short at maxOutputTokens; its chunks are asked again as halves, in later rounds
    def wordy(request) -> str:
        out = json.loads(canned_answer(request))
        for item in out.get("summaries", []):
            item["summary"] += " and" * 300
        return json.dumps(out)
    with FakeGemini(wordy) as server:
        s = batch_settings(settings, server, max_output_tokens=700)
        chat(store, s)
        night(store, s)
        server.finish_batches()
        night(store, s)
        rows = batch_rows(store)["llm_batch_requests"]
        cut = [r for r in rows if r["answer_error"] and "MAX_TOKENS" in r["answer_error"]]
        assert cut and any(r["state"] == "submitted" for r in rows)  # the halves wait for the next round
        finish_the_night(store, s, server, rounds=12)
        inline = [r.prompt_text for r in server.requests if r.method == "inline"]
    assert len(set(inline)) == len(inline)  # no request sent again as it was
    run = store.runs(1)[0]
    assert run["fallbacks"] == 0 and run["errors"] == 0 and not run["deferred"], run
