"""Counts the CLI prints add up (issue 15): an import says what each row did, a run's items are
summarized, passed through without a model (and why) or failed — the same numbers in `run`,
`--json` and `runs` — and ids and guilds that cannot be right are usage errors."""

from __future__ import annotations

import json
import re

from pipeline.cli.report import REASONS
from tests.conftest import ROOT, SAMPLE

G1, ANA = 1150000000000000001, 1160000000000000001
FIXTURES = ROOT / "tests" / "fixtures" / "discord"
RANGE = ("--from", "2026-11-01", "--to", "2026-11-04")
RUN_LINE = re.compile(r"run (\d+) (\w+): (\d+) items \((\d+) partition-days, (\d+) past weeks, (\d+) contexts\) = "
                      r"(\d+) summarized \+ (\d+) passed through without a model \+ (\d+) failed")


def _import_json(mp, *paths) -> dict:
    return json.loads(mp("import", "--json", *map(str, paths)).stdout)


def _adds_up(counts: dict) -> None:
    assert counts["read"] == (counts["new"] + counts["edited"] + counts["unchanged"] + counts["skipped"]
                              + counts["deletions"])
    assert counts["skipped"] == sum(counts["skipped_by"].values())


def test_a_reimport_writes_nothing_and_says_so(mp, tmp_path):
    first = _import_json(mp, SAMPLE)
    assert (first["read"], first["new"], first["unchanged"]) == (90, 90, 0)
    again = mp("import", str(SAMPLE)).stdout
    assert again.startswith("read 90 messages: 0 new, 0 edited, 90 unchanged (already stored); skipped 0")
    # one message again with a later edit, one with the same (not newer) edit time: one edit
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()[:2]]
    rows[0] |= {"text": "edited later", "edited_ts": "2030-01-01T00:00:00+00:00"}
    path = tmp_path / "edits.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    edits = _import_json(mp, path)
    assert (edits["new"], edits["edited"], edits["unchanged"]) == (0, 1, 1)
    assert _import_json(mp, path)["edited"] == 0  # the stored text is that edit now
    for counts in (first, edits):
        _adds_up(counts)


def test_skipped_messages_are_counted_by_reason(mp):
    out = mp("import", str(FIXTURES / "guild-text-channel.json")).stdout
    assert "skipped 2 (bot author: 1, system message: 1)" in out
    counts = _import_json(mp, FIXTURES / "guild-text-channel.json", FIXTURES / "direct-messages.json")
    assert counts["skipped_by"] == {"bot author": 2, "system message": 1}
    assert counts["new"] == 2 and counts["unchanged"] == 6  # the guild channel's six were stored above
    _adds_up(counts)


def _parts(row: dict) -> tuple[int, int, int]:
    items = row["partition_days"] + row["historical_items"] + row["context_items"]
    passed = sum(row[column] for column, _long, _short in REASONS)
    return items, passed, row["summarized"] + passed + row["errors"]


def test_the_run_line_adds_up_and_matches_json_and_runs(mp):
    mp("import", str(SAMPLE))
    text = mp("replay", *RANGE).stdout
    as_json = json.loads(mp("replay", *RANGE, "--json").stdout)  # the same replay again: all unchanged
    runs = json.loads(mp("runs", "--json").stdout)
    assert runs[0] == as_json and set(runs[1]) == set(as_json)  # `run --json` is a `runs --json` row

    first = runs[1]
    m = RUN_LINE.match(text)
    assert m, text
    run_id, status, items, days, weeks, contexts, summarized, passed, failed = m.groups()
    assert (int(run_id), status) == (first["id"], "ok")
    assert [int(v) for v in (days, weeks, contexts, summarized, failed)] == \
        [first[k] for k in ("partition_days", "historical_items", "context_items", "summarized", "errors")]
    total, passed_sum, parts = _parts(first)
    assert int(items) == total == parts == int(summarized) + int(passed) + int(failed) and int(passed) == passed_sum
    # the reasons line names each nonzero reason with its count, and they sum to "passed through"
    reasons = re.search(r"passed through without a model: (.*)", text).group(1)
    named = {long_: first[column] for column, long_, _short in REASONS if first[column]}
    assert reasons == ", ".join(f"{n} {label}" for label, n in named.items()) and sum(named.values()) == int(passed)
    assert "by the extractive summarizer (in-process: no model)" in text

    table = mp("runs").stdout.splitlines()
    assert "items" in table[0] and "passed through (why)" in table[0]
    cells = table[2].split()  # the first run, listed second
    assert cells[0] == str(first["id"]) and int(cells[5]) == total and int(cells[6]) == first["summarized"]
    assert table[2].split("  ")[-1] == f"{passed_sum}: " + ", ".join(
        f"{first[column]} {short}" for column, _long, short in REASONS if first[column])

    total, passed_sum, parts = _parts(as_json)
    assert total == parts == passed_sum == as_json["passed_unchanged"] == 34 and as_json["summarized"] == 0


def test_a_dry_run_after_a_run_estimates_every_stage(mp):
    mp("import", str(SAMPLE))
    first = mp("replay", *RANGE, "--dry-run").stdout  # every partition-day would change: daily stage only
    assert first.startswith("dry run: 14 partition-days with messages: 14 would be summarized")
    assert "The estimate covers only the daily stage" in first
    mp("replay", *RANGE)
    again = mp("replay", *RANGE, "--dry-run").stdout
    assert again.startswith("dry run: 34 items (14 partition-days, 10 past weeks, 10 contexts): 0 would be "
                            "summarized") and "34 would pass through without a model: 34 unchanged" in again
    assert "covers only" not in again
    assert again.rstrip().endswith("Nothing was written (but this dry run's own `runs` row).")
    dry = json.loads(mp("replay", *RANGE, "--dry-run", "--json").stdout)
    assert dry["dry_run"] is True and dry["planned_llm_calls"] == 0 and _parts(dry)[0] == 34


def test_guild_ids_are_checked_before_anything_runs(mp, tmp_path):
    mp("import", str(SAMPLE))
    unknown = mp("run", "--guild", "999", ok=False)
    assert unknown.exit_code == 2 and "guild 999 has no messages" in unknown.output
    assert "1150000000000000001, 1150000000000000002" in unknown.output  # few: listed
    bad = mp("replay", *RANGE, "--guild", "abc", ok=False)
    assert bad.exit_code == 2 and "'abc' is not a guild id" in bad.output and "string of digits" in bad.output
    assert "integer range" not in bad.output
    assert json.loads(mp("runs", "--json").stdout) == []  # neither started a run

    many = tmp_path / "many.jsonl"
    many.write_text("".join(json.dumps({
        "message_id": str(i), "guild_id": str(1150000000000000100 + i), "channel_id": str(1170000000000000100 + i),
        "visibility": "public", "user_id": str(ANA), "user_name": "Ana", "text": "hello",
        "ts": "2026-11-02T10:00:00+00:00"}) + "\n" for i in range(12)), encoding="utf-8")
    mp("import", str(many))
    listed = mp("run", "--guild", "999", ok=False)
    assert listed.exit_code == 2 and "14 guilds have messages, e.g. " in listed.output
    assert "SELECT DISTINCT guild_id FROM channels" in listed.output
    assert mp("run", "--guild", str(G1), "--date", "2026-11-04").exit_code == 0


def test_facts_commands_print_one_json_object(mp):
    mp("import", str(SAMPLE))
    mp("replay", *RANGE)
    kept = json.loads(mp("facts", "remember", "--scope", f"guild:{G1}", "--user", str(ANA), "--json",
                         "Ana speaks Portuguese").stdout)
    assert kept["fact"] == "Speaks Portuguese" and kept["user_id"] == str(ANA) and kept["scope"] == f"guild:{G1}"
    assert kept["facts_added"] == 1 and kept["contexts_written"] >= 1 and kept["llm_calls"] == 0
    gone = json.loads(mp("facts", "forget", "--scope", f"guild:{G1}", "--user", str(ANA), "--json",
                         "speaks Portuguese").stdout)
    assert gone["found"] is True and gone["fact"] == "speaks Portuguese" and gone["contexts_written"] >= 1
    missing = json.loads(mp("facts", "forget", "--scope", f"guild:{G1}", "--user", str(ANA), "--json",
                            "owns a zeppelin").stdout)
    assert missing["found"] is False
