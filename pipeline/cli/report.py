"""How `mempipe run`, `replay` and `runs` report a run: from its pipeline_runs row, the same
counts adding up the same way everywhere (sql/migrations/0010_run_counts.sql):

    items (partition-days + past weeks + contexts) = summarized + passed through + failed + deferred

"deferred" (gemini.batch): waiting for a batch job's answer; a later run makes them (0012_llm_batches).

"summarized": a summarizer operation made the item (the model's answer — or, when the model
failed, the extractive fallback's, marked degraded — or the extractive summarizer's). "passed
through": made or kept without one, for one of REASONS. A chunked day is one item and several
LLM requests, so requests are counted apart from items.
"""

from __future__ import annotations

# Exit codes of `mempipe run` / `replay` (the README's CLI section; cron wrappers alert on 3).
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_DEGRADED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

# Why an item made no summarizer call: pipeline_runs column, what the run line says after the
# count, and the short label of the `runs` table.
REASONS = (
    ("passed_fits", "daily texts already within their length target", "fit"),
    ("passed_week_rendered", "past weeks rendered (whole, or cut to fit)", "weeks rendered"),
    ("passed_recent_rendered", "recent parts rendered (whole, or cut to fit)", "recent rendered"),
    ("passed_no_recent", "contexts with nothing to merge (profile, last active)", "nothing to merge"),
    ("passed_reused", "past weeks reused (the same input as an earlier day)", "reused"),
    ("passed_unchanged", "unchanged since the last run", "unchanged"),
    ("passed_fold_waits", "today's few new messages left for a later fold (refresh.fold_min_chars)", "fold waits"),
)


def items(row: dict) -> int:
    return row["partition_days"] + row["historical_items"] + row["context_items"]


def passed(row: dict) -> int:
    return sum(row[column] for column, _long, _short in REASONS)


def exit_code(row: dict) -> int:
    """3 when a run finished but an item fell back to the extractive summary (its row is marked
    degraded) or failed (not written); later runs retry both."""
    if row["status"] == "ok" and not row["dry_run"] and (row["fallbacks"] or row["errors"]):
        return EXIT_DEGRADED
    return EXIT_OK


def as_json(row: dict) -> dict:
    """A run as `mempipe runs --json` and `run --json` print it: the row, and its duration."""
    seconds = (row["finished_at"] - row["started_at"]).total_seconds() if row["finished_at"] else None
    return row | {"duration_s": round(seconds, 3) if seconds is not None else None}


def _reasons(row: dict, short: bool = False) -> str:
    return ", ".join(f"{row[c]} {s if short else long_}" for c, long_, s in REASONS if row[c])


def _requests(row: dict) -> str:
    return (f"{row['llm_calls']} LLM requests, {row['retries']} retries, {row['prompt_tokens']} prompt + "
            f"{row['output_tokens']} output tokens, ~${row['estimated_cost']:.4f}")


def run_lines(row: dict, summarizer: str, stale: int = 0) -> list[str]:
    """A finished (or failed) run: the sum, then what the summarized and passed-through items were."""
    lines = [f"run {row['id']} {row['status']}: {items(row)} items ({row['partition_days']} partition-days, "
             f"{row['historical_items']} past weeks, {row['context_items']} contexts) = {row['summarized']} "
             f"summarized + {passed(row)} passed through without a model + {row['errors']} failed"
             + _deferred(row)]
    if summarizer == "extractive" and not row["llm_calls"]:
        if row["summarized"]:
            lines.append(f"  summarized: {row['summarized']} by the extractive summarizer (in-process: no model)")
    elif row["summarized"] or row["llm_calls"]:
        fell_back = (f"; {row['fallbacks']} of them by the extractive fallback after the model failed (degraded)"
                     if row["fallbacks"] else "")
        lines.append(f"  summarized: {row['summarized']} by the model ({_requests(row)}){fell_back}")
    if passed(row):
        lines.append(f"  passed through without a model: {_reasons(row)}")
    notes = []
    if row["dropped_user_ids"]:
        notes.append(f"{row['dropped_user_ids']} user ids the summarizer returned that did not speak were dropped")
    if stale:
        notes.append(f"{stale} contexts made as of a later day were left alone")
    lines += [f"  {n}" for n in notes]
    return lines


def _planned_cost(row: dict) -> str:
    """A dry run's input cost from [gemini.prices] (at batch prices with gemini.batch), when priced."""
    return f", ~${row['estimated_cost']:.4f} for the input" if row["estimated_cost"] else ""


def _deferred(row: dict) -> str:
    """The items waiting for a batch job's answer (gemini.batch), when there are any."""
    return f" + {row['deferred']} deferred to a batch job" if row.get("deferred") else ""


def dry_run_lines(row: dict, summarizer: str, estimated: str | None) -> list[str]:
    """What a run would do. A stage reads what the earlier ones make, which a dry run does not:
    when the partition-days (`estimated` "daily") or the past weeks ("historical") would change,
    the estimate stops there and says so."""
    model = summarizer != "extractive"
    would = (f"{row['summarized']} would be summarized"
             + (f" (~{row['planned_llm_calls']} LLM requests{'' if estimated else ' at most'}, "
                f"~{row['planned_prompt_tokens']} prompt tokens, estimated at 4 characters per token"
                f"{_planned_cost(row)})" if model
                else " by the extractive summarizer (in-process: no model)"))
    why = f": {_reasons(row)}" if passed(row) else ""
    if estimated == "daily":
        scope = f"{row['partition_days']} partition-days with messages"
        stop = ("The estimate covers only the daily stage: the past weeks and contexts of the changed "
                "partition-days are made from daily summaries this dry run does not make.")
    elif estimated == "historical":
        scope = (f"{items(row)} items ({row['partition_days']} partition-days, {row['historical_items']} "
                 f"past weeks)")
        stop = ("The estimate covers the daily stage and the past weeks only: the contexts are made from "
                "past weeks this dry run does not make.")
    else:
        scope = (f"{items(row)} items ({row['partition_days']} partition-days, {row['historical_items']} "
                 f"past weeks, {row['context_items']} contexts)")
        stop = None
    lines = [f"dry run: {scope}: {would}, {passed(row)} would pass through without a model{why}."]
    return lines + ([stop] if stop else []) + ["Nothing was written (but this dry run's own `runs` row)."]


TABLE_HEADER = (f"{'id':>4} {'kind':6} {'status':7} {'range':23} {'secs':>7} {'items':>6} {'summ':>5} {'errs':>4} "
                f"{'llm':>5} {'retry':>5} {'fallb':>5} {'tokens':>8} {'cost$':>7} {'facts+':>6} {'upd':>4} {'rej':>4}  "
                f"passed through (why)")


def table_line(r: dict) -> str:
    """One `runs` row: items = summ + passed + errs, as in the run line."""
    span = f"{r['date_from'] or 'today'}..{r['date_to'] or 'today'}"
    secs = r["duration_s"] if r["duration_s"] is not None else "-"
    rejected = sum(v for k, v in r.items() if k.startswith("facts_rejected_"))
    why = f"{passed(r)}" + (f": {_reasons(r, short=True)}" if passed(r) else "")
    return (f"{r['id']:>4} {r['kind']:6} {r['status']:7} {span:23} {secs:>7} {items(r):>6} {r['summarized']:>5} "
            f"{r['errors']:>4} {r['llm_calls']:>5} {r['retries']:>5} {r['fallbacks']:>5} "
            f"{r['prompt_tokens'] + r['output_tokens']:>8} {r['estimated_cost']:>7.4f} {r['facts_added']:>6} "
            f"{r['facts_updated']:>4} {rejected:>4}  {why}"
            f"{_deferred(r).replace(' + ', '; ', 1)}{_chat_requests(r)}"
            f"{'  ' + r['error'] if r['error'] else ''}{'  (dry run)' if r['dry_run'] else ''}")


def _chat_requests(r: dict) -> str:
    """In-chat memory requests (pipeline/stages/requests.py): applied by kind, refused by reason."""
    refused = {k[len("requests_refused_"):]: v for k, v in r.items() if k.startswith("requests_refused_") and v}
    if not (r.get("requests_remembered") or r.get("requests_forgotten") or refused):
        return ""
    why = ", ".join(f"{k} {v}" for k, v in sorted(refused.items()))
    return (f"  chat requests: remembered {r.get('requests_remembered', 0)}, forgotten {r.get('requests_forgotten', 0)}, "
            f"refused {sum(refused.values())}" + (f" ({why})" if why else ""))
