"""`mempipe user show|export|pause|resume|clear|erase|audit`, run in-process with click's CliRunner
on SQLite and PostgreSQL over the dataset of tests/integration/test_controls.py (imported with
`mempipe import`, summarised by `mempipe replay`). The CLI acts as the operator."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pipeline.cli import cli
from tests.integration.test_controls import ANA, BO, DM_ANA, G, MODS, anas, others

COMMANDS = ("show", "export", "pause", "resume", "clear", "erase", "audit")


@pytest.fixture
def community(mp, tmp_path):
    path = tmp_path / "community.jsonl"
    path.write_text("".join(json.dumps(m, default=str) + "\n" for m in anas() + others()), encoding="utf-8")
    mp("import", str(path))
    mp("replay", "--from", "2026-11-03", "--to", "2026-11-04")
    mp("facts", "remember", "--scope", f"guild:{G}", "--user", str(ANA), "Collects zqxanacoins.")
    return mp


def actions(mp, user=ANA) -> list[str]:
    return [r["action"] for r in json.loads(mp("user", "audit", "--user", str(user), "--json").output)]


def test_every_user_command_says_it_runs_as_the_operator(mp):
    for name in COMMANDS:
        out = CliRunner().invoke(cli, ["user", name, "--help"]).output
        assert "Runs as the operator: always allowed" in " ".join(out.split()), name
    out = CliRunner().invoke(cli, ["user", "--help"]).output
    assert all(name in out for name in COMMANDS)


def test_show_text_and_json(community):
    mp = community
    text = mp("user", "show", "--user", str(ANA)).output
    assert f"== guild:{G}  built from guild:{G}" in text
    assert f"== channel:{MODS}  built from channel:{MODS}, guild:{G}" in text
    assert "Collects zqxanacoins" in text and "-- context (as of 2026-11-04)" in text
    doc = json.loads(mp("user", "show", "--user", str(ANA), "--scope", f"guild:{G}", "--json").output)
    assert doc["user_id"] == str(ANA) and [s["scope"] for s in doc["scopes"]] == [f"guild:{G}"]
    assert all(isinstance(f["id"], str) for f in doc["scopes"][0]["facts"])
    assert doc["scopes"][0]["daily_summaries"][0]["day"] == "2026-11-03"
    assert mp("user", "show", "--user", "1.5e18", ok=False).exit_code == 2
    assert mp("user", "show", "--user", str(ANA), "--scope", "guild:x", ok=False).exit_code == 2


def test_export_prints_one_json_document(community):
    doc = json.loads(community("user", "export", "--user", str(ANA)).output)
    assert doc["schema"] == "mempipe-export-1" and doc["user_id"] == str(ANA)
    assert len(doc["tables"]["chat_history"]) == 4
    assert {r["message_id"] for r in doc["tables"]["chat_history"]} >= {"1190000000000090001"}
    assert [r["action"] for r in doc["tables"]["control_actions"]] == ["remember", "export"]


def test_pause_resume(community):
    mp = community
    assert "paused guild:" in mp("user", "pause", "--user", str(ANA), "--scope", f"guild:{G}").output
    assert "already paused" in mp("user", "pause", "--user", str(ANA), "--scope", f"guild:{G}").output
    assert "paused everywhere" in mp("user", "pause", "--user", str(ANA)).output
    shown = mp("user", "show", "--user", str(ANA)).output
    assert "paused everywhere since" in shown and f"== guild:{G} (paused)" in shown
    done = mp("user", "resume", "--user", str(ANA), "--scope", f"guild:{G}")
    assert f"resumed guild:{G}" in done.output and "still paused: everywhere" in done.stderr
    doc = json.loads(mp("user", "resume", "--user", str(ANA), "--json").output)
    assert doc == {"user_id": str(ANA), "resumed": ["*"], "still_paused": []}
    assert "was not paused" in mp("user", "resume", "--user", str(ANA)).output
    assert actions(mp) == ["remember", "pause", "pause", "pause", "show", "resume", "resume", "resume"]


def test_clear_asks_unless_yes(community, db_url):
    mp, db = community, db_url
    before = mp("user", "export", "--user", str(ANA)).output
    refused = mp("user", "clear", "--user", str(ANA), ok=False)  # no answer on stdin: aborted
    assert refused.exit_code == 1 and "Aborted" in refused.output
    said_no = CliRunner().invoke(cli, ["--db", db, "user", "clear", "--user", str(ANA)], input="n\n")
    assert said_no.exit_code == 1 and "Delete the memory of user" in said_no.output
    assert json.loads(mp("user", "export", "--user", str(ANA)).output)["tables"]["daily_summaries"] == \
        json.loads(before)["tables"]["daily_summaries"]
    said_yes = CliRunner().invoke(cli, ["--db", db, "user", "clear", "--user", str(ANA), "--scope", f"dm:{DM_ANA}"],
                                  input="y\n")
    assert said_yes.exit_code == 0 and f"cleared user {ANA} dm:{DM_ANA}: daily_summaries" in said_yes.output
    doc = json.loads(mp("user", "clear", "--user", str(ANA), "--include-history", "--yes", "--json").output)
    assert doc["scope"] is None and doc["rows"]["chat_history"] == 4
    assert actions(mp)[-2:] == ["clear", "clear"]


def test_erase_refuses_without_yes_and_leaves_only_a_hashed_row(community):
    mp = community
    refused = mp("user", "erase", "--user", str(ANA), ok=False)
    assert refused.exit_code == 2 and "cannot be undone: pass --yes" in refused.output
    assert json.loads(mp("user", "export", "--user", str(ANA)).output)["tables"]["chat_history"]
    out = mp("user", "erase", "--user", str(ANA), "--yes").output
    assert f"erased user {ANA} (audit subject erased:" in out and "chat_history 4" in out
    assert "no controls recorded" in mp("user", "audit", "--user", str(ANA)).stderr
    doc = json.loads(mp("user", "export", "--user", str(ANA)).output)
    assert {t: rows for t, rows in doc["tables"].items() if rows} == {"control_actions": doc["tables"]["control_actions"]}
    assert [r["action"] for r in doc["tables"]["control_actions"]] == ["export"]  # this export's own row
    mp("run")
    assert "zqxana" not in mp("contexts", "--json").output.lower()
    assert actions(mp, BO) == []


def test_audit_lists_every_control_with_who_asked(community):
    mp = community
    mp("facts", "forget", "--scope", f"guild:{G}", "--user", str(ANA), "zqxanacoins")
    mp("user", "pause", "--user", str(ANA), "--scope", f"channel:{MODS}")
    lines = mp("user", "audit", "--user", str(ANA)).output.splitlines()
    assert [ln.split()[3] for ln in lines] == ["remember", "forget", "pause"]
    assert all("by operator" in ln for ln in lines) and "zqxana" not in "".join(lines).lower()
    assert f"channel:{MODS}" in lines[-1] and "(memory_exclusions 1)" in lines[-1]
    rows = json.loads(mp("user", "audit", "--user", str(ANA), "--json").output)
    assert rows[1]["detail"] == {"by": "operator", "rows": {"forgotten_facts": 1}, "found": True}
    assert rows[0]["subject_key"] == str(ANA) and rows[0]["requested_by"] is None
