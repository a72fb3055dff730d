"""In-chat memory requests (README, "In-chat memory requests"; issue 17 item 2), end to end on both
databases, with the offline summarizer (phrases) and with Gemini (the fake server's answers carry
`requests`): "remember that I'm vegetarian" in a public group becomes Tomás's guild_public fact
and shows in his profile; "forget what I said about the hospital" in his DM removes the DM fact
and leaves the word in no row but the chat itself and forgotten_facts; Bob's "remember that Ana
is …" changes nothing of Ana's and is counted as refused; a replay applies nothing twice and makes
no model call."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re

import pytest
import sqlalchemy as sa

from pipeline.cli.report import table_line
from pipeline.controls import user_audit
from pipeline.ingest import delete_messages, ingest_messages
from pipeline.llm.gemini import GeminiClient
from pipeline.runner import execute
from pipeline.summarize.llm import LLMSummarizer
from tests.conftest import ROOT
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.responders import canned_answer, message_lines
from tests.helpers import make_context, tokens_in_tables

UTC = dt.timezone.utc
G, BOARD, DM = 1150000000000001701, 1170000000000001701, 1170000000000001702
TOMAS, ANA, BOB = 6021337410, 6021337411, 6021337412
NAMES = {TOMAS: "Tomás", ANA: "Ana", BOB: "Bob"}
REMEMBER = "Remember that I'm vegetarian when you order food on Saturday, please!"
ABOUT_ANA = "Remember that Ana is allergic to peanuts."
SECRET = "Between us: I'm nervous about my new job at the hospital starting Monday."
FORGET = "Please forget what I said about the hospital."
HOSPITAL = re.compile(r"(?i)hospital")


def _msg(mid: int, channel: int, user: int, text: str, day: int, hour: int) -> dict:
    row = {"message_id": 1190000000000170000 + mid, "channel_id": channel, "user_id": user,
           "user_name": NAMES[user], "text": text, "ts": dt.datetime(2026, 11, day, hour, tzinfo=UTC)}
    if channel == BOARD:
        return row | {"guild_id": G, "visibility": "public", "channel_name": "Lisbon Board Gamers"}
    return row | {"guild_id": None, "visibility": "dm", "is_group": False}


DAY_3 = [
    _msg(1, BOARD, ANA, "I finally painted all the miniatures for the dungeon crawler campaign.", 3, 9),
    _msg(2, BOARD, TOMAS, REMEMBER, 3, 10),
    _msg(3, BOARD, BOB, ABOUT_ANA, 3, 11),
    _msg(4, BOARD, BOB, "I can't remember the rules of the trading phase, don't forget the dice.", 3, 12),
    _msg(5, DM, TOMAS, SECRET, 3, 20),
    _msg(8, DM, TOMAS, "I start my new job at the hospital on Monday.", 3, 21),  # a fact the offline extractor finds
]
DAY_4 = [_msg(6, DM, TOMAS, FORGET, 4, 9), _msg(7, BOARD, ANA, "Saturday works for me, I will bring the expansion.", 4, 10)]


def _model_answer(request):
    """The fake model: canned summaries and facts, plus the requests a model would report."""
    answer = canned_answer(request)
    prompt = request.prompt_text
    if "<messages>" not in prompt:
        return answer
    out = json.loads(answer)
    for item in out["summaries"]:
        item["requests"] = []
        for number, speaker, _reply, text in message_lines(prompt):
            if speaker != item["speaker"]:
                continue
            if text.startswith("Remember that I"):
                item["requests"].append({"kind": "remember", "text": "Is vegetarian", "about_self": True, "source": number})
            elif text.startswith("Remember that Ana"):
                item["requests"].append({"kind": "remember", "text": "Ana is allergic to peanuts",
                                         "about_self": False, "source": number})
            elif text.startswith("Please forget"):
                item["requests"].append({"kind": "forget", "text": "the hospital", "about_self": True, "source": number})
    return json.dumps(out)


@pytest.fixture(params=["extractive", "gemini"])
def run(request, store, settings):
    """run(first, last) replays the range with the parametrized summarizer; returns the run's row."""
    if request.param == "extractive":
        def go(first: str, last: str) -> dict:
            ctx = make_context(store, settings)
            asyncio.run(execute(ctx, "replay", dt.date.fromisoformat(first), dt.date.fromisoformat(last)))
            return store.runs(1)[0]
        go.kind = "extractive"
        yield go
        return
    with FakeGemini(_model_answer) as server:
        s = settings.model_copy(deep=True)
        s.summarizer = "gemini"
        g = s.gemini
        g.base_url, g.timeout_s, g.backoff_initial_s, g.backoff_max_s, g.limits = server.url, 5.0, 0.01, 0.05, {}
        s.summary = s.summary.model_copy(update={"daily_chars": 40, "historical_chars": 40, "context_chars": 80})

        def go(first: str, last: str) -> dict:
            async def one():
                client = GeminiClient("test-key", base_url=server.url, timeout_s=5.0)
                summarizer = LLMSummarizer(s, client)
                try:
                    await execute(make_context(store, s, summarizer=summarizer), "replay",
                                  dt.date.fromisoformat(first), dt.date.fromisoformat(last))
                finally:
                    await summarizer.aclose()
            asyncio.run(one())
            return store.runs(1)[0]
        go.kind = "gemini"
        yield go


def _facts(store, user: int) -> list[dict]:
    with store.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(sa.text(
            "SELECT partition, level, text, confidence, sources, origin FROM memory_facts WHERE user_id = :u"), {"u": user})]


def _sources(row) -> list:
    return row["sources"] if isinstance(row["sources"], list) else json.loads(row["sources"])


def _request_message(store, user: int, word: str) -> str:
    """"channel:message" of the user's one message saying `word` (a request's fact source)."""
    with store.engine.connect() as conn:
        [(channel, message)] = conn.execute(sa.text(
            "SELECT channel_id, message_id FROM chat_history WHERE user_id = :u AND lower(text) LIKE :w"),
            {"u": user, "w": f"%{word}%"}).all()
    return f"{channel}:{message}"


def _remembered_and_forgotten(store, guild: int) -> None:
    """Tomás's "remember that I'm vegetarian" in the group is his one guild_public fact there and in
    his profile; the DM's hospital is in no row but the chat itself and what he forgot."""
    tomas = _facts(store, TOMAS)
    veg = [f for f in tomas if "vegetarian" in f["text"].lower()]
    assert len(veg) == 1, tomas  # the request's fact, not also an extracted one
    assert veg[0]["level"] == "guild_public" and veg[0]["partition"] == f"guild:{guild}"
    assert veg[0]["confidence"] == 1.0 and _sources(veg[0]) == [_request_message(store, TOMAS, "vegetarian")]
    with store.engine.connect() as conn:
        profile = conn.execute(sa.text("SELECT profile FROM memory_profiles WHERE scope = :s AND user_id = :u"),
                               {"s": f"guild:{guild}", "u": TOMAS}).scalar_one()
    assert "vegetarian" in profile.lower()
    assert set(tokens_in_tables(store.engine, HOSPITAL)) == {"chat_history", "forgotten_facts"}


def _check_requests_applied(store, settings) -> None:
    _remembered_and_forgotten(store, G)
    # Bob's request about Ana changed nothing of hers, and was refused and counted
    assert not any("peanut" in f["text"].lower() for f in _facts(store, ANA) + _facts(store, BOB))
    runs = store.runs(10)
    total = {k: sum(r[k] for r in runs) for k in ("requests_remembered", "requests_forgotten",
                                                   "requests_refused_other_person", "requests_refused_unsafe")}
    assert total == {"requests_remembered": 1, "requests_forgotten": 1, "requests_refused_other_person": 1,
                     "requests_refused_unsafe": 0}
    audit = user_audit(store, settings, TOMAS, requested_by=TOMAS)
    chat = [(a["action"], a["requested_by"], a["detail"].get("via")) for a in audit if a["detail"].get("via")]
    assert chat == [("remember", TOMAS, "chat"), ("forget", TOMAS, "chat")]
    refused = [a for a in user_audit(store, settings, BOB, requested_by=BOB) if a["detail"].get("via")]
    assert [(a["action"], a["detail"]["refused"]) for a in refused] == [("remember", "other_person")]
    assert not user_audit(store, settings, ANA, requested_by=ANA)


def test_requests_in_one_run(store, settings, run):
    ingest_messages(store, DAY_3 + DAY_4, settings)
    first = run("2026-11-03", "2026-11-04")
    _check_requests_applied(store, settings)
    assert "chat requests: remembered 1, forgotten 1, refused 1 (other_person 1)" in table_line(first | {"duration_s": 1})
    # replayed unchanged: nothing applied twice, no model call, the same rows
    facts, audit = _facts(store, TOMAS), user_audit(store, settings, TOMAS, requested_by=TOMAS)
    again = run("2026-11-03", "2026-11-04")
    assert again["llm_calls"] == 0 and again["requests_remembered"] == again["requests_forgotten"] == 0
    assert _facts(store, TOMAS) == facts and user_audit(store, settings, TOMAS, requested_by=TOMAS) == audit
    _check_requests_applied(store, settings)


def test_forget_on_a_later_day_removes_the_earlier_fact(store, settings, run):
    ingest_messages(store, DAY_3, settings)
    run("2026-11-03", "2026-11-03")
    dm = [f for f in _facts(store, TOMAS) if f["level"] == "dm"]
    assert any(HOSPITAL.search(f["text"]) for f in dm), dm  # the DM fact the forget is about
    ingest_messages(store, DAY_4, settings)
    run("2026-11-03", "2026-11-04")
    assert not any(f["level"] == "dm" and HOSPITAL.search(f["text"]) for f in _facts(store, TOMAS))
    _check_requests_applied(store, settings)
    again = run("2026-11-03", "2026-11-04")
    assert again["llm_calls"] == 0 and again["requests_forgotten"] == 0


TELEGRAM = ROOT / "tests" / "fixtures" / "telegram"
BOT = 8000000001          # MemoBot, the bot of the personal chat (skipped: --bot-user-id)
TG_GROUP = 1824466019     # "Lisbon Board Gamers", a private supergroup: guild = channel = chat id


def test_requests_in_the_telegram_exports(store, settings, run):
    """The issue's acceptance on the real-format exports: both imported together, one replay."""
    from pipeline.ingest import import_files

    report = import_files(store, sorted(TELEGRAM.glob("*.json")), settings, fmt="telegram", bot_user_ids={BOT})
    assert report.skipped_by["bot's own message"] == 1  # MemoBot's reply is not chat
    first = run("2026-11-02", "2026-11-03")
    _remembered_and_forgotten(store, TG_GROUP)
    assert first["requests_remembered"] == 1 and first["requests_forgotten"] == 1
    again = run("2026-11-02", "2026-11-03")
    assert again["llm_calls"] == 0 and again["requests_remembered"] == again["requests_forgotten"] == 0


def test_two_overlapping_runs_apply_a_request_once(store, settings):
    """A `mempipe run` during serve's refresh: both read the pending request before either has
    handled it; the one that claims it applies it, the other skips it — one fact, one audit row."""
    import threading

    from pipeline.stages.requests import apply_requests

    ingest_messages(store, [DAY_3[1]], settings)
    msg = DAY_3[1]
    store.record_requests([{"channel_id": msg["channel_id"], "message_id": msg["message_id"], "user_id": TOMAS,
                            "partition": f"guild:{G}", "day": msg["ts"].date(), "ts": msg["ts"], "kind": "remember",
                            "text": "Is vegetarian", "reason": None, "detected_at": msg["ts"]}])
    both_read = threading.Barrier(2, timeout=30)
    read = store.pending_requests

    class Overlapping:  # the store, whose pending read waits until the other run has read too
        def __getattr__(self, name):
            return getattr(store, name)

        def pending_requests(self):
            rows = read()
            both_read.wait()
            return rows

    ctxs = [make_context(Overlapping(), settings) for _ in range(2)]
    errors: list[BaseException] = []

    def one(ctx):
        try:
            asyncio.run(apply_requests(ctx))
        except BaseException as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    threads = [threading.Thread(target=one, args=(c,)) for c in ctxs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert sum(c.stats.requests_remembered for c in ctxs) == 1
    audit = [a for a in user_audit(store, settings, TOMAS, requested_by=TOMAS) if a["detail"].get("via")]
    assert [(a["action"], a["detail"]["via"]) for a in audit] == [("remember", "chat")]
    assert len([f for f in _facts(store, TOMAS) if "vegetarian" in f["text"].lower()]) == 1
    assert store.pending_requests() == []


def _pending(msg: dict, partition: str, kind: str, text: str) -> dict:
    return {"channel_id": msg["channel_id"], "message_id": msg["message_id"], "user_id": msg["user_id"],
            "partition": partition, "day": msg["ts"].date(), "ts": msg["ts"], "kind": kind, "text": text,
            "reason": None, "detected_at": msg["ts"]}


def test_clear_deletes_the_requests_of_its_scope_and_they_are_never_applied(store, settings):
    from pipeline.controls import clear
    from pipeline.stages.requests import apply_requests

    ingest_messages(store, DAY_3 + DAY_4, settings)
    store.record_requests([_pending(DAY_3[1], f"guild:{G}", "remember", "Is vegetarian"),
                           _pending(DAY_4[0], f"dm:{DM}", "forget", "the hospital")])
    clear(store, settings, TOMAS, requested_by=TOMAS, scope=f"guild:{G}")
    # the group's request is gone with the rest of his memory there; the DM's is out of reach
    assert [(r["partition"], r["kind"]) for r in store.pending_requests()] == [(f"dm:{DM}", "forget")]
    ctx = make_context(store, settings)
    asyncio.run(apply_requests(ctx))
    assert ctx.stats.requests_remembered == 0 and ctx.stats.requests_forgotten == 1
    assert not any("vegetarian" in f["text"].lower() for f in _facts(store, TOMAS))
    clear(store, settings, TOMAS, requested_by=TOMAS)  # everywhere: the handled row too
    with store.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM chat_requests")).scalar_one() == 0


def test_drop_and_prune_chat_requests(store, settings):
    """The store's deletions for message deletion (by message, in the caller's transaction) and
    for retention (handled requests older than a cutoff, in batches; pending ones kept)."""
    msgs = [_msg(20 + i, BOARD, TOMAS, f"Remember that I like game {i}", 3, 9 + i) for i in range(4)]
    store.record_requests([_pending(m, f"guild:{G}", "remember", f"Likes game {i}") for i, m in enumerate(msgs)])
    for m in msgs[:3]:  # handled: the first three; the last one still pending
        assert store.claim_request(m["channel_id"], m["message_id"], "applied", None, m["ts"])
    key = (msgs[0]["channel_id"], msgs[0]["message_id"])
    with pytest.raises(RuntimeError), store.transaction() as conn:  # the caller's transaction fails: kept
        store.drop_chat_requests([key], conn=conn)
        raise RuntimeError
    with store.transaction() as conn:
        assert store.drop_chat_requests([key, key, (1, 2)], conn=conn) == 1
    assert store.drop_chat_requests([]) == 0
    assert store.prune_chat_requests(msgs[1]["ts"] + dt.timedelta(minutes=1), 10) == 1  # said before: msgs[1]
    assert store.prune_chat_requests(msgs[3]["ts"] + dt.timedelta(hours=1), 1) == 1  # msgs[2]; msgs[3] pending
    assert [r["message_id"] for r in store.pending_requests()] == [msgs[3]["message_id"]]
    with store.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM chat_requests")).scalar_one() == 1



def test_deleting_the_request_message_takes_the_remembered_fact_back(store, settings, run):
    """The fact rests on the message that asked for it: a bot's delete event for that message
    removes it (and the contexts made again say nothing of it), as for an extracted fact."""
    ask = _msg(40, BOARD, TOMAS, "Remember that I'm training for the Lisbon marathon.", 3, 9)
    chat = _msg(41, BOARD, ANA, "The dice tower arrived, finally.", 3, 10)
    ingest_messages(store, [ask, chat], settings)
    assert run("2026-11-03", "2026-11-03")["requests_remembered"] == 1
    source = f"{BOARD}:{ask['message_id']}"
    [fact] = [f for f in _facts(store, TOMAS) if _sources(f) == [source]]  # its text: the model's words
    assert fact["confidence"] == 1.0 and fact["origin"] == "manual"
    counts = delete_messages(store, [(BOARD, ask["message_id"])], settings, clock=lambda: dt.datetime(2026, 11, 4, tzinfo=UTC))
    assert counts["facts_deleted"] == 1
    assert _facts(store, TOMAS) == []
    run("2026-11-03", "2026-11-03")  # the queued day made again: the request is gone with its message
    assert _facts(store, TOMAS) == []
    assert not tokens_in_tables(store.engine, re.compile(re.escape(fact["text"]) + "|marathon", re.IGNORECASE))


def test_a_remember_takes_the_level_of_its_partition(store, settings, run):
    """README: in a restricted channel a `channel_restricted` fact of that channel, in a DM `dm`."""
    mods = 1170000000000001703
    restricted = _msg(30, BOARD, TOMAS, "Remember that I'm allergic to cats.", 3, 9) | {
        "channel_id": mods, "visibility": "restricted", "channel_name": "mods"}
    dm = _msg(31, DM, TOMAS, "Remember that I'm learning the cello.", 3, 10)
    ingest_messages(store, [restricted, dm], settings)
    assert run("2026-11-03", "2026-11-03")["requests_remembered"] == 2
    levels = {(f["partition"], f["level"]) for f in _facts(store, TOMAS)
              if _sources(f) in ([f"{mods}:{restricted['message_id']}"], [f"{DM}:{dm['message_id']}"])}
    assert levels == {(f"channel:{mods}", "channel_restricted"), (f"dm:{DM}", "dm")}
