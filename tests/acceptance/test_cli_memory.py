"""`mempipe profile`, `facts show` and `memory-files`, run in-process with click's CliRunner on
SQLite and PostgreSQL, over real data: messages imported with `mempipe import`, summarised by
`mempipe replay`, facts added by `mempipe facts remember` (and, in the extraction test, facts the
daily stage extracted, superseded and promoted to global)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import re

import pytest
from click.testing import CliRunner
from freezegun import freeze_time

import pipeline.ingest  # noqa: F401  (the CLI imports these lazily; pydantic cannot build their models under
import pipeline.runner  # noqa: F401   freeze_time's fake datetime, so they are imported before it)
import pipeline.stages.facts  # noqa: F401
import pipeline.summarize  # noqa: F401
from pipeline.cli import cli
from pipeline.memory.files import journal_text, write_memory_files
from pipeline.memory.views import fact_line, facts_for

G = 1150000000000000701
GENERAL, SECRET, DM_ANA = 1170000000000000701, 1170000000000000702, 1170000000000000703
ANA, BO = 1160000000000000701, 1160000000000000702
NOW = "2026-09-03 18:00:00"  # the CLI reads the system clock: facts remembered "today" are dated 2026-09-03


def _line(mid: int, channel: int, user: int, text: str, ts: str) -> dict:
    row = {"message_id": str(1190000000000070000 + mid), "channel_id": str(channel), "user_id": str(user),
           "user_name": {ANA: "Ana", BO: "Bo"}[user], "text": text, "ts": ts}
    if channel == DM_ANA:
        return row | {"guild_id": None, "visibility": "dm", "is_group": False}
    return row | {"guild_id": str(G), "visibility": "public" if channel == GENERAL else "restricted"}


MESSAGES = [
    _line(1, GENERAL, ANA, "I live in Lisbon and I work as a nurse.", "2026-09-01T10:00:00+00:00"),
    _line(2, GENERAL, BO, "My favourite game is Celeste, I play it every evening.", "2026-09-01T11:00:00+00:00"),
    _line(3, SECRET, ANA, "I have a cat named Miso and she sleeps on my keyboard.", "2026-09-02T10:00:00+00:00"),
    _line(4, DM_ANA, ANA, "I am allergic to peanuts, please remember that.", "2026-09-02T12:00:00+00:00"),
    _line(5, GENERAL, ANA, "I love hiking in the mountains on weekends.", "2026-09-03T10:00:00+00:00"),
]


@pytest.fixture
def community(mp, tmp_path):
    """The messages imported and replayed, and one fact remembered in each of Ana's audiences."""
    path = tmp_path / "community.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in MESSAGES), encoding="utf-8")
    with freeze_time(NOW):
        assert "read 5 messages" in mp("import", str(path)).output
        mp("replay", "--from", "2026-09-01", "--to", "2026-09-03")
        mp("facts", "remember", "--scope", f"guild:{G}", "--user", str(ANA), "Ana speaks Portuguese")
        mp("facts", "remember", "--scope", f"channel:{SECRET}", "--user", str(ANA), "Ana keeps bees")
        mp("facts", "remember", "--scope", f"dm:{DM_ANA}", "--user", str(ANA), "Ana is training for a marathon")
        mp("run")
    return mp


def _manual(out: str) -> set[str]:
    return {t for t in ("Speaks Portuguese", "Keeps bees", "Is training for a marathon") if t in out}


# ---------------------------------------------------------------- facts show

def test_facts_show_lists_what_each_scope_may_read(community):
    mp = community
    everything = mp("facts", "show", "--user", str(ANA)).output
    assert _manual(everything) == {"Speaks Portuguese", "Keeps bees", "Is training for a marathon"}
    assert f"[guild_public · other · 1.00 · 2026-09-03] Speaks Portuguese  (guild:{G}; manual)" in everything
    assert f"[channel_restricted · other · 1.00 · 2026-09-03] Keeps bees  (channel:{SECRET}; manual)" in everything
    assert f"[dm · other · 1.00 · 2026-09-03] Is training for a marathon  (dm:{DM_ANA}; manual)" in everything
    # the audience rule: a guild reads its own facts; a restricted channel its own and its guild's;
    # Ana's one-to-one DM every partition she posted in
    assert _manual(mp("facts", "show", "--user", str(ANA), "--scope", f"guild:{G}").output) == {"Speaks Portuguese"}
    assert _manual(mp("facts", "show", "--user", str(ANA), "--scope", f"channel:{SECRET}").output) == {
        "Speaks Portuguese", "Keeps bees"}
    assert _manual(mp("facts", "show", "--user", str(ANA), "--scope", f"dm:{DM_ANA}").output) == _manual(everything)
    for scope, levels in ((f"guild:{G}", {"guild_public", "global"}),
                          (f"channel:{SECRET}", {"guild_public", "global", "channel_restricted"})):
        rows = json.loads(mp("facts", "show", "--user", str(ANA), "--scope", scope, "--json").output)
        assert rows and {r["level"] for r in rows} <= levels
    # one fact per line, each in the documented shape
    for line in everything.splitlines():
        assert re.fullmatch(r"\[(dm|channel_restricted|guild_public|global) · \S+ · [01]\.\d\d · [-0-9.]+.*\] .+  \(.+\)", line)


def test_facts_show_json_has_every_column_and_ids_as_strings(community):
    rows = json.loads(community("facts", "show", "--user", str(ANA), "--json").output)
    assert {"id", "user_id", "partition", "level", "category", "text", "fact_key", "confidence", "event_day",
            "first_seen", "last_seen", "sources", "origin", "status", "superseded_on"} <= set(rows[0])
    assert all(isinstance(r["id"], str) and r["id"].isdigit() and r["user_id"] == str(ANA) for r in rows)
    for r in rows:  # an extracted fact names the messages it rests on
        assert r["origin"] == "manual" or all(re.fullmatch(r"[0-9]+:[0-9]+", s) for s in r["sources"])
    manual = next(r for r in rows if r["text"] == "Speaks Portuguese")
    assert manual["sources"] == ["manual"] and manual["origin"] == "manual" and manual["first_seen"] == "2026-09-03"
    assert json.loads(community("facts", "show", "--user", "5", "--json").output) == []


def test_facts_show_needs_a_user_and_checks_the_scope(community):
    assert community("facts", "show", "--scope", f"guild:{G}", ok=False).exit_code == 2
    bad = community("facts", "show", "--user", str(ANA), "--scope", "server:1", ok=False)
    assert bad.exit_code == 2 and "guild:<guild_id>" in bad.output
    nothing = community("facts", "show", "--user", "5")
    assert nothing.stdout == "" and "no active facts about user 5" in nothing.stderr


# ---------------------------------------------------------------- profile

def test_profile_prints_the_stored_profile(community):
    mp = community
    text = mp("profile", "--scope", f"channel:{SECRET}", "--user", str(ANA)).output
    assert text.startswith("# Ana: long-term memory") and "Speaks Portuguese" in text and "Keeps bees" in text
    assert "marathon" not in text  # a DM fact stays out of the channel's profile
    row = json.loads(mp("profile", "--scope", f"guild:{G}", "--user", str(ANA), "--json").output)
    assert row["user_id"] == str(ANA) and row["scope"] == f"guild:{G}" and row["as_of_day"] == "2026-09-03"
    assert "Speaks Portuguese" in row["profile"] and "bees" not in row["profile"] and row["fact_count"] >= 1


def test_profile_missing_says_to_run(community):
    missing = community("profile", "--scope", f"guild:{G}", "--user", "5", ok=False)
    assert missing.exit_code == 1
    assert "no profile for user 5 in guild:" in missing.output and "mempipe run" in missing.output


# ---------------------------------------------------------------- memory-files

def _has_profile(mp, scope: str, user: int) -> bool:
    """Whether (scope, user) has a profile: Bo's depends on what the offline extractor finds in
    his message, which these tests do not pin down."""
    return mp("profile", "--scope", scope, "--user", str(user), ok=False).exit_code == 0


def _files(root) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in sorted(root.rglob("*")) if p.is_file()}


def test_memory_files_layout_follows_the_audience_rule(community, tmp_path):
    mp = community
    out = tmp_path / "dm"
    done = mp("memory-files", str(out), "--scope", f"dm:{DM_ANA}")
    assert "1 user(s); 4 file(s) written, 0 unchanged, 0 removed" in done.stdout
    files = _files(out)
    assert sorted(files) == [f"{ANA}/MEMORY.md", f"{ANA}/journal/2026-09-01.md", f"{ANA}/journal/2026-09-02.md",
                             f"{ANA}/journal/2026-09-03.md"]
    assert files[f"{ANA}/MEMORY.md"] == mp("profile", "--scope", f"dm:{DM_ANA}", "--user", str(ANA)).output
    # two partitions on one day: one file, the DM's own section first
    day2 = files[f"{ANA}/journal/2026-09-02.md"]
    assert day2.startswith(f"# 2026-09-02\n\n## dm:{DM_ANA}\n\n")
    assert day2.index("peanuts") < day2.index(f"## channel:{SECRET}") < day2.index("Miso")

    guild = tmp_path / "guild"
    mp("memory-files", str(guild), "--scope", f"guild:{G}")
    files = _files(guild)
    assert sorted(files) == sorted([f"{ANA}/MEMORY.md", f"{ANA}/journal/2026-09-01.md", f"{ANA}/journal/2026-09-03.md",
                                    f"{BO}/journal/2026-09-01.md"] + [f"{BO}/MEMORY.md"] * _has_profile(mp, f"guild:{G}", BO))
    joined = "\n".join(files.values())
    for private in ("peanuts", "Miso", "bees", "marathon", f"dm:{DM_ANA}", f"channel:{SECRET}"):
        assert private not in joined
    assert "Celeste" in files[f"{BO}/journal/2026-09-01.md"] and "Lisbon" not in files[f"{BO}/journal/2026-09-01.md"]

    one = tmp_path / "one"
    mp("memory-files", str(one), "--scope", f"channel:{SECRET}", "--user", str(BO))
    assert sorted(_files(one)) == [f"{BO}/journal/2026-09-01.md"]  # Bo's guild day, which the channel may read


def test_memory_files_rebuild_is_idempotent(community, tmp_path, db_url):
    mp = community
    out = tmp_path / "memory"
    scope = ["--scope", f"guild:{G}"]
    mp("memory-files", str(out), *scope)
    bo = int(_has_profile(mp, f"guild:{G}", BO))  # Bo's MEMORY.md, when he has a profile
    memory = out / str(ANA) / "MEMORY.md"
    journal = out / str(ANA) / "journal"
    old = 1_000_000_000
    for p in out.rglob("*.md"):
        os.utime(p, ns=(old, old))
    (out / "notes.txt").write_text("mine")  # not ours: never touched
    (journal / "todo.md").write_text("mine")
    (journal / "2020-01-01.md").write_text("a day with no summary any more")
    again = mp("memory-files", str(out), *scope, "--json")
    assert json.loads(again.stdout) == {"users": 2, "written": 0, "unchanged": 4 + bo, "removed": 1}
    assert all(p.stat().st_mtime_ns == old for p in out.rglob("*.md") if p.name != "todo.md")
    assert not (journal / "2020-01-01.md").exists()
    assert (out / "notes.txt").read_text() == "mine" and (journal / "todo.md").read_text() == "mine"

    # a new fact changes the profile: MEMORY.md alone is rewritten
    with freeze_time(NOW):
        mp("facts", "remember", *scope, "--user", str(ANA), "Ana collects vinyl records")
    changed = json.loads(mp("memory-files", str(out), *scope, "--json").stdout)
    assert changed == {"users": 2, "written": 1, "unchanged": 3 + bo, "removed": 0}
    assert "Collects vinyl records" in memory.read_text() and memory.stat().st_mtime_ns != old
    assert (journal / "2026-09-01.md").stat().st_mtime_ns == old
    assert not [p for p in out.rglob("*.tmp")]

    # the daily summaries age out, and the profiles with their contexts: every file of ours goes
    config = tmp_path / "short.toml"
    config.write_text("retention_days = 8\n")
    with freeze_time("2026-09-30"):
        mp("--config", str(config), "retention")
    gone = json.loads(mp("memory-files", str(out), *scope, "--json").stdout)
    assert gone == {"users": 2, "written": 0, "unchanged": 0, "removed": 4 + bo}
    assert sorted(_files(out)) == sorted(["notes.txt", f"{ANA}/journal/todo.md"])


def test_memory_files_refuses_a_file_and_reports_nothing_to_write(community, tmp_path):
    target = tmp_path / "taken"
    target.write_text("a file")
    refused = community("memory-files", str(target), "--scope", f"guild:{G}", ok=False)
    assert refused.exit_code == 1 and "is not a directory" in refused.output and "give a directory" in refused.output
    assert target.read_text() == "a file"
    empty = community("memory-files", str(tmp_path / "empty"), "--scope", "guild:5")
    assert "0 user(s)" in empty.stdout and "nothing to write" in empty.stderr and "mempipe run" in empty.stderr


# ---------------------------------------------------------------- library, with extracted facts

def test_extracted_superseded_and_global_facts(store, settings, db_url, tmp_path):
    """Facts the daily stage extracted (tests/integration/test_memory.py's scripted summarizer):
    superseded rows only with --all, a global fact readable in another guild, sources listed."""
    from pipeline.ingest import ingest_messages
    from pipeline.runner import execute
    from pipeline.testing import RecordingSummarizer
    from tests.helpers import make_context
    from tests.integration.test_memory import ANA as A, D1, G as G9, G2, GENERAL as GEN, OTHER, Proposing, msg, script

    later = D1 + dt.timedelta(days=20)
    ingest_messages(store, [msg(1, GEN, A, "We moved to Lisbon", D1), msg(2, GEN, A, "Celeste is the best game", D1, 13),
                            msg(3, OTHER, A, "hello other server", D1, 14),
                            msg(4, GEN, A, "Now we live in Porto", later)], settings)
    ctx = make_context(store, settings, now=dt.datetime.combine(later, dt.time(12), dt.timezone.utc),
                       summarizer=RecordingSummarizer(Proposing(settings, script)))
    asyncio.run(execute(ctx, "replay", D1, later))

    active = facts_for(store, A, f"guild:{G9}")
    assert [r["text"] for r in active] == ["Favourite game is Celeste", "Moved to Porto"]  # global first
    history = facts_for(store, str(A), f"guild:{G9}", include_superseded=True)
    assert [(r["text"], r["status"]) for r in history][-1] == ("Moved to Lisbon", "superseded")
    assert [r["text"] for r in facts_for(store, A, f"guild:{G2}")] == ["Favourite game is Celeste"]

    lisbon = fact_line(history[-1])
    assert lisbon == (f"[guild_public · identity · 0.90 · {D1} · superseded {later}] Moved to Lisbon  "
                      f"(guild:{G9}; extracted; sources {GEN}:1190000000000090001)")
    runner = CliRunner()
    shown = runner.invoke(cli, ["--db", db_url, "facts", "show", "--user", str(A), "--scope", f"guild:{G9}", "--all"])
    assert shown.exit_code == 0, shown.output
    assert shown.output.splitlines()[-1] == lisbon
    assert "Lisbon" not in runner.invoke(cli, ["--db", db_url, "facts", "show", "--user", str(A)]).output

    counts = write_memory_files(store, tmp_path / "g2", f"guild:{G2}")
    assert counts["users"] == 1 and "Celeste" in (tmp_path / "g2" / str(A) / "MEMORY.md").read_text()


def test_journal_text_and_fact_line_shapes():
    day = dt.date(2026, 9, 2)
    assert journal_text(day, [("dm:1", "Ana: “hi”\n"), ("guild:2", "Ana: “yo”")]) == \
        "# 2026-09-02\n\n## dm:1\n\nAna: “hi”\n\n## guild:2\n\nAna: “yo”\n"
    row = {"level": "guild_public", "category": "event", "confidence": 0.8, "first_seen": day,
           "last_seen": day + dt.timedelta(days=3), "event_day": dt.date(2026, 9, 20), "status": "active",
           "superseded_on": None, "sources": [f"1:{i}" for i in range(5)], "origin": "extracted",
           "text": "Runs a marathon", "partition": "guild:2"}
    assert fact_line(row) == ("[guild_public · event · 0.80 · 2026-09-02..2026-09-05 · event 2026-09-20] "
                              "Runs a marathon  (guild:2; extracted; sources 1:0, 1:1, 1:2 +2 more)")
