"""The pure parts of batch mode: a request's key, how pending requests become jobs, and how a
run's report adds deferred items up (pipeline/llm/batch.py, batch_jobs.py, pipeline/cli/report.py)."""

from __future__ import annotations

from pipeline.cli import report
from pipeline.llm import batch_jobs
from pipeline.llm.batch import request_key
from pipeline.summarize.schemas import DailyOut, MergeOut
from pipeline.web.metrics import item_columns

BASE = dict(model="gemini-2.5-flash", system="sys", prompt="p", schema=DailyOut, max_output_tokens=8192,
            thinking_budget=0)


def test_a_request_key_changes_with_everything_the_model_sees_and_nothing_else():
    key = request_key(**BASE)
    assert request_key(**BASE) == key
    for name, other in (("model", "gemini-2.5-pro"), ("system", "sys2"), ("prompt", "p2"), ("schema", MergeOut),
                        ("max_output_tokens", 100), ("thinking_budget", -1)):
        assert request_key(**(BASE | {name: other})) != key, name


def _pending(key: str, model: str, chars: int) -> dict:
    return {"request_key": key, "model": model, "request": {"prompt": "x" * chars, "system": "s"}}


def test_pending_requests_become_one_job_per_model_each_under_the_size_limit():
    rows = [_pending(f"a{i}", "m1", 10_000) for i in range(5)] + [_pending("b0", "m2", 10)]
    jobs = batch_jobs.split_jobs(rows, max_bytes=30_000)
    assert [(model, [r["request_key"] for r in rs]) for model, rs in jobs] == [
        ("m1", ["a0", "a1"]), ("m1", ["a2", "a3"]), ("m1", ["a4"]), ("m2", ["b0"])]
    assert all(sum(batch_jobs._size(r) for r in rs) <= 30_000 for _m, rs in jobs)


def _row(**counts) -> dict:
    row = {c: 0 for c in ("partition_days", "historical_items", "context_items", "summarized", "errors",
                          "fallbacks", "llm_calls", "retries", "prompt_tokens", "output_tokens",
                          "dropped_user_ids", "deferred", "estimated_cost", "facts_added", "facts_updated")}
    row |= {c: 0 for c, _l, _s in report.REASONS}
    return row | {"id": 7, "status": "ok", "dry_run": False, "kind": "run", "date_from": None, "date_to": None,
                  "duration_s": 1.0, "error": None} | counts


def test_the_run_line_and_the_runs_table_add_deferred_items_up():
    row = _row(partition_days=10, historical_items=2, summarized=3, passed_fits=4, deferred=5)
    first = report.run_lines(row, "gemini")[0]
    assert first.endswith("= 3 summarized + 4 passed through without a model + 0 failed + 5 deferred to a batch job")
    assert report.table_line(row).endswith("; 5 deferred to a batch job")
    quiet = _row(partition_days=2, summarized=2)
    assert "deferred" not in report.run_lines(quiet, "gemini")[0] and "deferred" not in report.table_line(quiet)
    assert report.exit_code(row) == report.EXIT_OK  # waiting for a batch is not a degraded run


def test_the_items_metric_counts_deferred_as_an_outcome():
    assert "deferred" in item_columns()


def test_a_dry_run_line_shows_its_priced_estimate():
    row = _row(partition_days=3, summarized=3, planned_llm_calls=3, planned_prompt_tokens=900, estimated_cost=0.0123,
               dry_run=True)
    assert ", ~$0.0123 for the input)" in report.dry_run_lines(row, "gemini", None)[0]
    assert "for the input" not in report.dry_run_lines(row | {"estimated_cost": 0.0}, "gemini", None)[0]
