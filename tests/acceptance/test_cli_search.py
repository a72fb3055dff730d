"""`mempipe search` and `mempipe context --query`, run in-process with click's CliRunner on SQLite
and PostgreSQL, over real data: messages imported with `mempipe import`, summarised by
`mempipe replay`, facts added by `mempipe facts remember` — one in each of Ana's audiences (a
guild, a restricted channel of it, her one-to-one DM), so the audience rule shows through the CLI."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from freezegun import freeze_time

import pipeline.ingest  # noqa: F401  (the CLI imports these lazily; pydantic cannot build their models under
import pipeline.runner  # noqa: F401   freeze_time's fake datetime, so they are imported before it)
import pipeline.stages.facts  # noqa: F401
import pipeline.summarize  # noqa: F401
from tests.acceptance.test_cli_memory import ANA, BO, DM_ANA, NOW, SECRET, G, _line
from tests.acceptance.test_cli_memory import MESSAGES as MEMORY_MESSAGES
from tests.conftest import ROOT, SAMPLE

# The messages of tests/acceptance/test_cli_memory.py, and one from weeks before: in a daily
# summary, but in no context of 2026-09-03 (not today, not the past week).
MESSAGES = [*MEMORY_MESSAGES,
            _line(6, SECRET, ANA, "the tram was late again near the old cathedral, Miso hid under the sofa",
                  "2026-08-20T10:00:00+00:00")]
HIT_KEYS = {"rank", "kind", "text", "partition", "level", "day", "confidence", "score", "fact_id"}
LINE = re.compile(r"(\d+)\. \[(fact|daily|historical) · (\d{4}-\d\d-\d\d) · "
                  r"(dm|channel_restricted|guild_public|global) (\S+) · (\d+\.\d\d)\] (.+)")
GUILD, CHANNEL, DM = f"guild:{G}", f"channel:{SECRET}", f"dm:{DM_ANA}"


@pytest.fixture
def community(mp, tmp_path):
    """The messages imported and replayed, and one fact remembered in each of Ana's audiences."""
    path = tmp_path / "community.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in MESSAGES), encoding="utf-8")
    with freeze_time(NOW):
        mp("import", str(path))
        mp("replay", "--from", "2026-08-20", "--to", "2026-09-03")
        mp("facts", "remember", "--scope", GUILD, "--user", str(ANA), "Ana speaks Portuguese")
        mp("facts", "remember", "--scope", CHANNEL, "--user", str(ANA), "Ana keeps bees")
        mp("facts", "remember", "--scope", DM, "--user", str(ANA), "Ana is training for a marathon")
    return mp


def search(mp, scope: str, query: str, *more: str, user: int = ANA, ok: bool = True):
    return mp("search", "--scope", scope, "--user", str(user), query, *more, ok=ok)


def hits(mp, scope: str, query: str, *more: str, user: int = ANA) -> list[dict]:
    return json.loads(search(mp, scope, query, "--json", *more, user=user).stdout)


def texts(mp, scope: str, query: str, user: int = ANA) -> str:
    return "\n".join(h["text"] for h in hits(mp, scope, query, "--limit", "100", user=user))


# ---------------------------------------------------------------- finding

def test_search_finds_a_fact_and_a_summary_one_hit_per_line(community):
    mp = community
    out = search(mp, GUILD, "Does she speak Portuguese?").stdout.splitlines()
    first = LINE.fullmatch(out[0])
    assert first, out
    assert first.groups() == ("1", "fact", "2026-09-03", "guild_public", GUILD, first[6], "Speaks Portuguese")
    assert float(first[6]) > 0
    # a word of a daily summary (the extractive summarizer quotes her message), found by its stem
    lines = search(mp, GUILD, "mountain hikes").stdout.splitlines()
    assert lines and all(LINE.fullmatch(ln) for ln in lines)
    assert [int(LINE.fullmatch(ln)[1]) for ln in lines] == list(range(1, len(lines) + 1))
    daily = [LINE.fullmatch(ln) for ln in lines if LINE.fullmatch(ln)[2] == "daily"]
    assert daily and daily[0][3] == "2026-09-03" and "mountains" in daily[0][7]
    assert "Lisbon" in texts(mp, GUILD, "lisbon")  # case folded


def test_search_limit_and_order(community):
    mp = community
    every = hits(mp, DM, "Lisbon nurse mountains peanuts Miso bees marathon Portuguese", "--limit", "100")
    assert len(every) >= 6
    assert [h["rank"] for h in every] == list(range(1, len(every) + 1))
    assert [h["score"] for h in every] == sorted((h["score"] for h in every), reverse=True)
    assert hits(mp, DM, "Lisbon nurse mountains peanuts Miso bees marathon Portuguese", "--limit", "2") == every[:2]
    assert len(search(mp, DM, "Lisbon nurse mountains peanuts Miso bees", "--limit", "1").stdout.splitlines()) == 1


def test_search_json_shape_ids_as_strings(community):
    rows = hits(community, GUILD, "Portuguese Lisbon")
    assert rows and all(set(r) == HIT_KEYS for r in rows)
    fact = next(r for r in rows if r["kind"] == "fact")
    assert fact["text"] == "Speaks Portuguese" and fact["level"] == "guild_public" and fact["partition"] == GUILD
    assert isinstance(fact["fact_id"], str) and fact["fact_id"].isdigit()
    assert fact["day"] == "2026-09-03" and fact["confidence"] == 1.0 and isinstance(fact["score"], float)
    summaries = [r for r in rows if r["kind"] != "fact"]
    assert summaries and all(r["fact_id"] is None and r["confidence"] is None for r in summaries)
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d", r["day"]) for r in rows)
    assert hits(community, GUILD, "zeppelin") == []


def test_nothing_found_says_so(community):
    none = search(community, GUILD, "zeppelin")
    assert none.stdout == "" and f"no memory of user {ANA} that {GUILD} may read matches 'zeppelin'" in none.stderr
    filler = search(community, GUILD, "what did I tell you about it?")
    assert filler.stdout == "" and "nothing to search for" in filler.stderr and "only common words" in filler.stderr
    stranger = search(community, GUILD, "Portuguese", user=5)
    assert stranger.stdout == "" and "no memory of user 5" in stranger.stderr


def test_a_forgotten_fact_is_not_found_by_the_next_search(community):
    mp = community
    assert "Speaks Portuguese" in texts(mp, GUILD, "Portuguese")
    with freeze_time(NOW):
        mp("facts", "forget", "--scope", GUILD, "--user", str(ANA), "speaks Portuguese")
    assert "Portuguese" not in texts(mp, GUILD, "Portuguese")


# ---------------------------------------------------------------- the audience rule

def test_scope_filtering_shows_through_the_cli(community):
    mp = community
    # the restricted channel's words: not in its guild, found in the channel and in Ana's one-to-one DM
    for word, private in (("Miso", "Miso"), ("bees", "Keeps bees")):
        assert hits(mp, GUILD, word) == []
        assert private in texts(mp, CHANNEL, word) and private in texts(mp, DM, word)
    # the DM's words: nowhere but the DM
    for word, private in (("peanuts", "peanuts"), ("marathon", "Is training for a marathon")):
        assert hits(mp, GUILD, word) == [] and hits(mp, CHANNEL, word) == []
        assert private in texts(mp, DM, word)
    # the guild's words: readable in its restricted channel too
    assert "Speaks Portuguese" in texts(mp, CHANNEL, "Portuguese")
    levels = {h["level"] for h in hits(mp, CHANNEL, "Lisbon Miso bees Portuguese peanuts marathon", "--limit", "100")}
    assert levels <= {"guild_public", "channel_restricted", "global"} and "channel_restricted" in levels
    # another guild, another user: nothing of Ana's
    assert hits(mp, "guild:5", "Portuguese Lisbon") == []
    assert hits(mp, GUILD, "Portuguese Lisbon Miso", user=BO) == []
    assert "Celeste" in texts(mp, GUILD, "Celeste", user=BO)


def test_full_text_syntax_in_the_query_is_read_as_words(community):
    mp = community
    for query in ('"a" OR x:*', "NEAR(", "NEAR(Miso bees, 3)", "body:secret", "user_id:1", "*", "^Miso", "-", "(",
                  ")", '"', "'", "Miso\" OR \"bees", "Lisbon AND", "NOT Lisbon", "OR", "a & b | !c", "x:* <-> y",
                  "\\", "'; DROP TABLE memory_items; --", "Lisbon\x00", "café ☕ 東京"):
        result = search(mp, GUILD, query, ok=False)
        assert result.exit_code == 0, (query, result.output)
        assert "Error" not in result.output, (query, result.output)
        assert json.loads(search(mp, GUILD, query, "--json").stdout) is not None
    # a column filter or an operator never widens a search: the restricted channel's and Bo's words stay out
    for query in ("Miso OR user_id:*", f'user_id : "{BO}" OR Celeste', "body : Miso", "NEAR(Miso", "Mis*"):
        found = texts(mp, GUILD, query)
        assert "Miso" not in found and "Celeste" not in found, query
    # the words themselves still count: "Lisbon" inside an operator soup is found
    assert "Lisbon" in texts(mp, GUILD, '"Lisbon" OR x:*')
    assert "Lisbon" in texts(mp, GUILD, "NEAR(Lisbon")


# ---------------------------------------------------------------- bad input

def test_bad_input_is_a_usage_error_that_says_what_to_fix(community):
    mp = community
    scope = search(mp, "server:1", "Lisbon", ok=False)
    assert scope.exit_code == 2 and "guild:<guild_id>" in scope.output
    for user in ("1.16e18", "ana", "-5", "99999999999999999999"):
        bad = mp("search", "--scope", GUILD, "--user", user, "Lisbon", ok=False)
        assert bad.exit_code == 2 and "--user" in bad.output, (user, bad.output)
    for query in ("", "   ", "\n\t"):
        empty = search(mp, GUILD, query, ok=False)
        assert empty.exit_code == 2 and "the query is empty" in empty.output
    for limit in ("0", "-1", "101", "five"):
        bad = search(mp, GUILD, "Lisbon", "--limit", limit, ok=False)
        assert bad.exit_code == 2 and "--limit" in bad.output, (limit, bad.output)
    missing = mp("search", "--scope", GUILD, "--user", str(ANA), ok=False)
    assert missing.exit_code == 2 and "QUERY" in missing.output
    assert mp("search", "--user", str(ANA), "Lisbon", ok=False).exit_code == 2  # --scope is required


def test_search_on_a_database_behind_says_to_upgrade(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from pipeline.cli import cli

    monkeypatch.delenv("MEMPIPE_DATABASE_URL", raising=False)
    result = CliRunner().invoke(cli, ["--db", f"sqlite:///{tmp_path}/new.db", "search", "--scope", GUILD,
                                      "--user", str(ANA), "Lisbon"])
    assert result.exit_code == 1 and "mempipe db upgrade" in result.output


# ---------------------------------------------------------------- the sample community

def _readme_search_example() -> list[tuple[list[str], list[str]]]:
    """The README's `$ mempipe search …` lines, each with the lines printed under it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### mempipe search"):]
    block = next(b for b in re.findall(r"```\n(.*?)```", section, re.S) if b.startswith("$ mempipe search"))
    out: list[tuple[list[str], list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            out.append((shlex.split(line)[2:], []))
        else:
            out[-1][1].append(line)
    return out


def test_search_over_the_sample_community_prints_the_readme_example(mp, db_kind):
    mp("import", str(SAMPLE))
    mp("replay", "--from", "2026-11-01", "--to", "2026-11-04")
    ana, guild = 1160000000000000001, "guild:1150000000000000001"
    rows = json.loads(mp("search", "--scope", guild, "--user", str(ana), "shulker shells", "--json").stdout)
    assert rows and "shulker" in rows[0]["text"].lower() and rows[0]["partition"] == guild
    examples = _readme_search_example()
    assert len(examples) == 2
    for args, shown in examples:
        result = mp(*args)
        printed = (result.stdout or result.stderr).splitlines()
        if db_kind == "sqlite":
            assert printed == shown, args
        else:  # ts_rank_cd, not bm25: the same hits, scores and near-tie order of their own
            def unscored(lines: list[str]) -> set[str]:
                return {re.sub(r"^\d+\. (.*) · \d+\.\d\d\]", r"\1]", ln) for ln in lines}
            assert unscored(printed) == unscored(shown), args


# ---------------------------------------------------------------- mempipe context --query / --budget

def context(mp, scope: str, *more: str, user: int = ANA, ok: bool = True):
    return mp("context", "--scope", scope, "--user", str(user), *more, ok=ok)


def test_context_with_a_query_appends_what_the_scope_may_read(community):
    mp = community
    plain = context(mp, CHANNEL).stdout
    assert "Related memories:" not in plain
    asked = context(mp, CHANNEL, "--query", "How is Miso doing?")
    assert asked.stdout.startswith(plain.rstrip("\n") + "\n\nRelated memories:\n- ")
    related = asked.stdout.split("Related memories:\n", 1)[1]
    assert "Miso" in related and all(ln.startswith("- ") for ln in related.splitlines())
    # the guild may not read the channel: its context gets nothing, said on stderr, the stored text as it is
    guild = context(mp, GUILD, "--query", "How is Miso doing?")
    assert guild.stdout == context(mp, GUILD).stdout and "Miso" not in guild.stdout
    assert "no related memories added for 'How is Miso doing?'" in guild.stderr


def test_context_json_carries_the_hits_ids_as_strings(community):
    mp = community
    row = json.loads(context(mp, DM, "--query", "peanuts Miso", "--json").stdout)
    assert row["hits"] and all(set(h) == HIT_KEYS for h in row["hits"])
    assert [h["rank"] for h in row["hits"]] == list(range(1, len(row["hits"]) + 1))
    assert all(h["text"] in row["text"] or " ".join(h["text"].split()) in row["text"] for h in row["hits"])
    assert all(h["fact_id"] is None or (isinstance(h["fact_id"], str) and h["fact_id"].isdigit()) for h in row["hits"])
    assert json.loads(context(mp, DM, "--json").stdout)["hits"] == []


def test_context_budget_never_cuts_the_stored_text(community):
    mp = community
    plain = context(mp, CHANNEL).stdout
    tight = context(mp, CHANNEL, "--query", "Miso", "--budget", "1")
    assert tight.stdout == plain and "within 1 tokens" in tight.stderr
    roomy = context(mp, CHANNEL, "--query", "Miso", "--budget", "100000")
    assert roomy.stdout != plain and "Related memories:" in roomy.stdout


def test_context_with_hits_alone_and_with_nothing(community):
    mp = community
    # Bo has no context row in the restricted channel; what the channel may read of his still answers
    assert context(mp, CHANNEL, user=BO, ok=False).exit_code == 1
    only_hits = context(mp, CHANNEL, "--query", "Celeste", user=BO)
    assert only_hits.stdout.startswith("Related memories:\n- ") and "Celeste" in only_hits.stdout
    nothing = context(mp, CHANNEL, "--query", "zeppelin", user=BO, ok=False)
    assert nothing.exit_code == 1 and "no memory channel:" in nothing.output and "matches 'zeppelin'" in nothing.output


def test_context_query_and_budget_input_errors(community):
    mp = community
    for query in ("", "  "):
        empty = context(mp, GUILD, "--query", query, ok=False)
        assert empty.exit_code == 2 and "the query is empty" in empty.output
    alone = context(mp, GUILD, "--budget", "50", ok=False)
    assert alone.exit_code == 2 and "--budget" in alone.output and "--query" in alone.output
    for budget in ("0", "-3", "many"):
        bad = context(mp, GUILD, "--query", "Lisbon", "--budget", budget, ok=False)
        assert bad.exit_code == 2 and "--budget" in bad.output
    syntax = context(mp, GUILD, "--query", '"a" OR x:* NEAR(')
    assert syntax.exit_code == 0 and syntax.stdout == context(mp, GUILD).stdout
