"""Canaries: plant a unique token in every (partition, author) and every display name, run the
pipeline as an attacker would, then check every row of every table and every model request
against the audience rule (ARCHITECTURE.md, "scope"). Tables are found by reflecting the
database, so a table added later is scanned without editing this file: a row is judged by its
`partition` column, else by its `scope` (+ `user_id`) column, else it may hold no token at all.

Dataset (one guild-day, then a second day):
  guild G1: public channel PUB1, restricted channel RES1 (user C posts only here)
  guild G2: public channel PUB2
  DM1: a one-to-one DM of A (is_group false)   DMG: a group DM of A and B (is_group true)
  DMU: a DM of A that does not say what it is  DMS: a group DM where only A has spoken yet
Attacks: a mention of C in PUB1; a message id reused in RES1 with a newer edit; A forgets a
DM-only fact; display names that differ per partition. Every message is a first-person statement
(a favourite, a home): facts are extracted from all of them, and only a `global` fact — promoted
from a public partition alone — may follow its own user into other scopes.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
import re

import pytest
import sqlalchemy as sa

from pipeline.db.tables import SEARCH_INDEX, is_search_index
from pipeline.errors import InputError
from pipeline.ingest import import_files
from pipeline.stages.facts import forget
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.responders import canned_answer
from tests.helpers import make_context, replay
from tests.integration.test_gemini import gemini_settings

TOKEN = re.compile(r"ZQX[A-Z0-9]+")
G1, G2 = 1150000000000000501, 1150000000000000502
CH = {"PUB1": 1170000000000000501, "RES1": 1170000000000000502, "PUB2": 1170000000000000503,
      "DM1": 1170000000000000504, "DMG": 1170000000000000505, "DMU": 1170000000000000506,
      "DMS": 1170000000000000507}
USER = {"A": 1160000000000000501, "B": 1160000000000000502, "C": 1160000000000000503}
GUILD = {"PUB1": G1, "RES1": G1, "PUB2": G2}
VIS = {"PUB1": "public", "RES1": "restricted", "PUB2": "public"}
# who speaks where (C only in the restricted channel; A never in G2; DMS: only A so far, but it
# is a group)
SPEAKERS = {"PUB1": "AB", "RES1": "ABC", "PUB2": "B", "DM1": "A", "DMG": "AB", "DMU": "A", "DMS": "A"}


def partition_of(code: str) -> str:
    if code in ("PUB1", "RES1", "PUB2"):
        return f"guild:{GUILD[code]}" if VIS[code] == "public" else f"channel:{CH[code]}"
    return f"dm:{CH[code]}"


def name_token(code: str, user: str) -> str:
    """Display names differ per partition (a DM shows the account's global name, a guild its
    nickname): each is a canary of its partition."""
    return f"ZQXNAME{code}{user}"


def text_token(code: str, user: str) -> str:
    return f"ZQX{code}{user}"


def _row(mid: int, code: str, user: str, text: str, day: int, hour: int, **extra) -> dict:
    row = {"message_id": str(mid), "channel_id": str(CH[code]), "user_id": str(USER[user]),
           "user_name": name_token(code, user), "text": text,
           "ts": f"2026-11-0{day}T{hour:02d}:00:00+00:00"}
    if code in GUILD:
        row |= {"guild_id": str(GUILD[code]), "visibility": VIS[code]}
    else:
        row |= {"guild_id": None, "visibility": "dm"}
        if code == "DM1":
            row["is_group"] = False
        elif code in ("DMG", "DMS"):
            row["is_group"] = True  # DMU says nothing: it must be treated as a group
    return row | extra


def dataset() -> list[dict]:
    rows, ids = [], itertools.count(1190000000000000501)
    for day in (1, 2):
        for code, speakers in SPEAKERS.items():
            for hour, user in enumerate(speakers, 9):
                token = text_token(code, user)
                rows.append(_row(next(ids), code, user,
                                 f"I told my friends that {token} is my favourite word and I live in {token}ville.",
                                 day, hour))
    # B mentions C (who has only ever posted in the restricted channel) in the public channel
    rows.append(_row(next(ids), "PUB1", "B", f"hey <@{USER['C']}> I saw {text_token('PUB1', 'B')} yesterday", 2, 15))
    return rows


def reused_id_attack(rows: list[dict]) -> dict:
    """A restricted message by another user with a public message's id and a newer edit."""
    public = next(r for r in rows if r["channel_id"] == str(CH["PUB1"]))
    return _row(int(public["message_id"]), "RES1", "C", f"I confess {text_token('RES1', 'C')} is where I keep it",
                1, 20, edited_ts="2026-11-01T21:00:00+00:00")


# ---------------------------------------------------------------- the audience rule

def token_origins() -> dict[str, tuple[str, str]]:
    """token -> (partition, author code)"""
    out = {}
    for code, speakers in SPEAKERS.items():
        for user in speakers:
            out[text_token(code, user)] = (partition_of(code), user)
            out[name_token(code, user)] = (partition_of(code), user)
    return out


ORIGINS = token_origins()
ONE_TO_ONE = {partition_of("DM1"): "A"}  # the only DM the data says is one-to-one


def allowed_for_partition(partition: str) -> set[str]:
    return {t for t, (p, _u) in ORIGINS.items() if p == partition}


def allowed_for_scope(scope: str, user_id: int | None) -> set[str]:
    kind, _, ident = scope.partition(":")
    if kind == "guild":
        return allowed_for_partition(scope)
    if kind == "channel":
        guild = next(GUILD[c] for c, ch in CH.items() if ch == int(ident))
        return allowed_for_partition(scope) | allowed_for_partition(f"guild:{guild}")
    owner = ONE_TO_ONE.get(scope)
    if owner is not None and user_id == USER[owner]:
        # the user's own rows from every partition they posted in (those rows may quote others
        # there: the user can read those partitions)
        theirs = {p for p, u in ORIGINS.values() if u == owner}
        return {t for t, (p, _u) in ORIGINS.items() if p in theirs}
    return allowed_for_partition(scope)


def all_audiences() -> list[set[str]]:
    scopes = {p for p, _u in ORIGINS.values()}
    return [allowed_for_scope(s, uid) for s in scopes for uid in USER.values()]


def tokens_in(value) -> set[str]:
    if value is None or isinstance(value, (int, float, bool, dt.date, dt.datetime)):
        return set()
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return set(TOKEN.findall(text))


def global_tokens(conn) -> tuple[dict[int, set[str]], list[str]]:
    """The tokens of each user's `global` facts — validated as safe everywhere, they follow that
    user (and only that user) into every scope — and a violation for any global fact said where
    not everyone in its guild could read it (only guild_public facts may be promoted)."""
    tokens: dict[int, set[str]] = {}
    violations = []
    for row in conn.execute(sa.text("SELECT user_id, partition, text FROM memory_facts WHERE level = 'global'")):
        if not row.partition.startswith("guild:"):
            violations.append(f"memory_facts: a global fact from {row.partition}: {row.text!r}")
        tokens.setdefault(row.user_id, set()).update(tokens_in(row.text))
    return tokens, violations


def scan_tables(engine) -> list[str]:
    """Every row of every table (reflected) against its audience."""
    meta = sa.MetaData()
    meta.reflect(engine)
    violations = []
    with engine.connect() as conn:
        followers, violations = global_tokens(conn)
        for table in meta.sorted_tables:
            if is_search_index(table.name) and table.name != SEARCH_INDEX:
                continue  # the FTS engine's own tables: their text is memory_items', scanned with its partition
            cols = table.c.keys()
            for row in conn.execute(sa.select(table)).mappings():
                found = set().union(*(tokens_in(v) for v in row.values()))
                if not found:
                    continue
                if "partition" in cols:
                    allowed = allowed_for_partition(row["partition"])
                elif "scope" in cols:
                    allowed = allowed_for_scope(row["scope"], row.get("user_id")) | followers.get(row.get("user_id"), set())
                else:
                    allowed = set()
                leaked = found - allowed
                if leaked:
                    where = row.get("partition") or row.get("scope") or "(no audience)"
                    violations.append(f"{table.name} [{where}, user {row.get('user_id')}]: {sorted(leaked)}")
    return violations


def scan_requests(prompts: list[str]) -> list[str]:
    """A request may only carry what one audience may read."""
    audiences = all_audiences()
    violations = []
    for prompt in prompts:
        found = tokens_in(prompt)
        if found and not any(found <= a for a in audiences):
            violations.append(f"request mixing audiences: {sorted(found)}: {prompt[:160]!r}")
    return violations


# ---------------------------------------------------------------- the attack

def attack(store, settings, tmp_path, summarizer=None) -> None:
    """summarizer: a factory (each run closes its summarizer's client), None for the extractive."""
    def kw() -> dict:
        return {"summarizer": summarizer()} if summarizer else {}

    rows = dataset()
    path = tmp_path / "canaries.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    import_files(store, [path], settings)
    again = tmp_path / "reused-id.jsonl"
    again.write_text(json.dumps(reused_id_attack(rows)) + "\n")
    try:
        import_files(store, [again], settings)
    except InputError:
        pass  # refusing the conflicting row is one correct answer; moving the text is not
    now = dt.datetime(2026, 11, 3, 12, tzinfo=dt.timezone.utc)
    replay(store, settings, "2026-11-01", "2026-11-02", now=now, **kw())
    ctx = make_context(store, settings, now=now, **kw())

    async def forget_and_close():
        try:
            await forget(ctx, partition_of("DM1"), USER["A"], f"{text_token('DM1', 'A')} is my favourite word")
        finally:
            if hasattr(ctx.summarizer, "aclose"):
                await ctx.summarizer.aclose()
    asyncio.run(forget_and_close())
    replay(store, settings, "2026-11-01", "2026-11-02", now=now, force=True, **kw())


def test_no_table_holds_a_canary_its_audience_may_not_read_offline(store, settings, tmp_path):
    attack(store, settings, tmp_path)
    assert scan_tables(store.engine) == []


@pytest.fixture
def gemini(settings, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")  # the fake server takes any key
    with FakeGemini(canned_answer) as server:
        # short targets, so that every text needs the model (text that fits passes through)
        yield server, gemini_settings(settings, server)


def test_no_row_and_no_model_request_crosses_an_audience_with_gemini(store, gemini, tmp_path):
    from pipeline.summarize import make_summarizer

    server, settings = gemini
    attack(store, settings, tmp_path, summarizer=lambda: make_summarizer(settings))
    prompts = [r.prompt_text for r in server.calls()]
    assert prompts, "the model was never asked: the test would prove nothing"
    assert scan_requests(prompts) == []
    assert scan_tables(store.engine) == []


def test_the_scan_sees_a_planted_leak(store, settings, tmp_path):
    """The scanner itself: a DM token written into a guild context is found."""
    attack(store, settings, tmp_path)
    with store.engine.begin() as conn:
        conn.execute(sa.text("UPDATE memory_context SET context = context || ' ZQXDM1A' WHERE scope = :s"),
                     {"s": f"guild:{G1}"})
    assert any("ZQXDM1A" in v for v in scan_tables(store.engine))
    assert scan_requests(["ZQXDM1A and ZQXPUB2B"]) and not scan_requests(["ZQXPUB1B and ZQXRES1C"])
