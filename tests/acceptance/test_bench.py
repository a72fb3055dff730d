"""The benchmark harness runs end to end (tiny corpus) and writes every figure; the nightly call
count equals the minimum computed from the corpus, and an unchanged replay makes no call."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

SECTIONS = {"ingest", "calls", "overhead", "quota", "read", "cost", "memory", "search", "scale"}


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench")
    out = tmp / "RESULTS.md"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMPIPE_") or k.endswith("_PG_URL")}
    proc = subprocess.run([sys.executable, "-m", "bench", "--size", "tiny", "--out", str(out), "--work", str(tmp / "work")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads((tmp / "results" / "tiny.json").read_text()), out.read_text(), proc.stdout


def test_every_section_is_measured_and_reported(bench):
    data, text, stdout = bench
    assert set(data["sections"]) == SECTIONS
    assert stdout.strip() == text.strip()  # printed as written
    for title in ("Ingest", "LLM calls per nightly run", "Pipeline overhead", "Quota use", "Bot read", "Cost",
                  "Memory quality", "Memory search", "Scaling out"):
        assert f". {title} (tiny)" in text
    assert text.count("this section alone: `python -m bench --size tiny --seed 1 --only ") == len(SECTIONS)
    s = data["sections"]
    assert s["ingest"]["sqlite"]["msgs_per_s"] > 0
    # how fast this machine runs Python, so absolute times of two runs can be compared
    assert data["machine"]["python_loop_s"] > 0
    assert f"a 10M-step Python loop in {data['machine']['python_loop_s']:.2f} s" in text
    assert s["overhead"]["databases"]["sqlite"]["wall_s"] > 0
    assert s["overhead"]["databases"]["sqlite"]["peak_rss_mb"] > 0
    if (os.cpu_count() or 1) > 1:  # the batched run again, its stages shared out to one process per CPU
        spread = s["overhead"]["databases"]["sqlite"]["spread"]
        assert spread["processes"] == os.cpu_count() and spread["wall_s"] > 0 and spread["peak_rss_mb"] > 0
        assert "processes |" in text
        # where its CPU went: the run's own process and the stage process it waited for both worked
        assert spread["cpu"]["self_s"] > 0 and spread["cpu"]["children_s"] > 0
    used = s["overhead"]["databases"]["sqlite"]["cpu"]
    assert used["self_s"] > 0 and used["cpus"] == (os.cpu_count() or 1)
    assert "CPU-s: run + rest of the machine" in text and "CPU-s (" in text
    assert s["ingest"]["sqlite"]["cpu"]["self_s"] > 0  # the importer; its reader process only above 10 MiB
    assert 0 < s["quota"]["variants"][0]["share"] <= 1.0
    assert s["quota"]["variants"][0]["max_in_window"] <= s["quota"]["variants"][0]["limit"]
    assert s["read"]["databases"]["sqlite"]["get_context"]["p99_ms"] > 0
    assert isinstance(s["read"]["databases"]["sqlite"]["pinned"], bool)
    for part in ("replay", "nightly", "live"):
        assert s["cost"][part]["prompt_tokens_with_system"] > 0 and s["cost"][part]["prompt_per_chat_token"] > 0
    if os.environ.get("CI") == "true":  # CI has PostgreSQL: its halves must have run
        assert s["ingest"]["postgresql"] is not None and "postgresql" in s["read"]["databases"]
        pg = s["ingest"]["postgresql"]
        assert pg["cpu"]["rest_s"] is not None and pg["raw_copy_cpu"]["self_s"] > 0


def test_nightly_calls_equal_the_minimum_and_unchanged_replay_costs_nothing(bench):
    calls = bench[0]["sections"]["calls"]
    assert calls["runs"], "no nightly run was measured"
    for db, run in calls["runs"].items():
        assert run["unchanged"]["calls"] == 0, db
        assert run["cold"]["calls"] == calls["minimum_cold"]["total"], db
        assert run["steady"]["calls"] == calls["minimum_steady"]["total"], db
    assert calls["minimum_cold"]["total"] < calls["on_demand"]["total"]


def test_memory_quality_is_measured_for_both_summarizers(bench):
    """The figures' shape, not the targets (those are a benchmark matter)."""
    mem = bench[0]["sections"]["memory"]
    assert mem["plants"]["facts"] > 0 and set(mem["summarizers"]) == {"extractive", "gemini"}
    for name, s in mem["summarizers"].items():
        recall = s["recall"]["30"]
        assert recall["checked"] > 0, name
        for key in ("full", "cut"):
            assert 0.0 <= recall[key] <= 1.0 and recall[f"found_{key}"] <= recall["checked"], name
        assert recall["found_cut"] <= recall["found_full"], name  # a cut row holds no more than the whole one
        assert s["superseded"]["checked"] >= 0 and s["superseded"]["replaced"] <= s["superseded"]["checked"]
        leaks = s["leaks"]
        assert all(type(leaks[k]) is int and leaks[k] >= 0 for k in ("private_to_guild", "cross_guild", "other"))
        assert leaks["total"] == leaks["private_to_guild"] + leaks["cross_guild"] + leaks["other"], name
        assert s["nights"] == mem["corpus"]["days"] and s["llm_calls"]["total"] >= 0, name
    assert mem["summarizers"]["extractive"]["llm_calls"]["total"] == 0
    assert "Memory quality" in bench[1] and "leaks" in bench[1]


def test_search_is_measured_with_every_hit_checked(bench):
    """The figures' shape, not the targets (those are a benchmark matter)."""
    search = bench[0]["sections"]["search"]
    assert "sqlite" in search["databases"]
    for db, r in search["databases"].items():
        q = r["quality"]
        assert r["items"] == sum(r["by_kind"].values()) > 0 and r["build"]["items_per_s"] > 0, db
        assert set(q["by_class"]) == {"same", "different"}, db
        for s in (q["overall"], *q["by_class"].values()):
            assert 0.0 <= s["recall"] <= 1.0 and 0.0 <= s["mrr"] <= s["recall"] and s["found"] <= s["questions"], db
        assert q["overall"]["questions"] == sum(s["questions"] for s in q["by_class"].values()), db
        assert sum(p["asks"] for p in q["probes"].values()) > 0, db
        assert q["leaks"]["total"] == q["leaks"]["in_questions"] + q["leaks"]["in_probes"], db
        assert r["latency"]["search"]["p99_ms"] > 0 and r["latency"]["raw"]["p99_ms"] > 0, db
    if os.environ.get("CI") == "true":
        assert "postgresql" in search["databases"]
    assert "Memory search" in bench[1] and "recall@5" in bench[1]


def test_scale_workers_make_one_process_requests_and_rows_within_the_limit(bench):
    """Counts, not speed: every worker count makes the single process's requests and rows, and the
    server never sees more than the limit in a window (the shares are a benchmark matter)."""
    scale = bench[0]["sections"]["scale"]
    if "skipped" in scale:
        assert os.environ.get("CI") != "true", scale["skipped"]  # CI has PostgreSQL
        return
    assert scale["minimum"] > 0 and scale["nights"]
    for night in scale["nights"]:
        server = night["server"]
        assert server["admitted"] == scale["minimum"] and night["rows_equal"], night["workers"]
        assert server["max_in_window"] <= scale["limit"] and server["rejected"] == 0, night["workers"]
        assert night["status"] == ["ok"], night["workers"]
    assert "Scaling out" in bench[1] and "one process cannot spend it" in bench[1]
