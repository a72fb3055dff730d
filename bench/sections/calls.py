"""2. LLM calls per nightly run: summarizer calls recorded in pipeline_runs against the minimum
computed from the corpus (bench/expected.py) and against an on-demand design."""

from __future__ import annotations

import datetime as dt

from .. import expected
from ..env import Env
from . import nightly_runs

TITLE = "LLM calls per nightly run"


def run(env: Env) -> dict:
    runs = nightly_runs.results(env)
    pg_note = nightly_runs.pg_note(env)
    act = nightly_runs.corpus_activity(env)
    days, last = env.days, env.days[-1]
    before = last - dt.timedelta(days=1)  # the steady run finds the historical rows as of this day 1
    lengths = env.settings().summary  # what fits is passed through without a call (pipeline/stages/recent.py)
    res = {
        "corpus": {"messages": env.meta["counts"]["messages"], "guilds": env.meta["counts"]["guilds"],
                   "active_users": len(act.users(days)), "partitions": len(act.kind), "days": len(days)},
        "minimum_cold": expected.minimum(act, days, last, lengths=lengths),
        "minimum_steady": expected.minimum(act, [last], last, stored_day1=before, lengths=lengths),
        "steady_history_unchanged": expected.same_history(act, last, before, [last]),
        "history_reused": True,  # the minimum leaves those out (results before the reuse counted them)
        "stable_names": True,  # days before day 1 keep their inputs (results before that counted renamed days)
        "renders": True,  # a week or a context that fits its budget costs no call (results before that counted them)
        "condense": lengths.condense,  # "cut": one over its budget costs none either
        "on_demand": expected.on_demand(act, days),
        "runs": {},
    }
    for db, r in runs.items():
        res["runs"][db] = {
            "cold": {"calls": r["cold"]["summarizer_calls"], "by_operation": r["cold"]["by_operation"]},
            "unchanged": {"calls": r["unchanged"]["summarizer_calls"]},
            "steady": {"calls": r["steady"]["summarizer_calls"], "by_operation": r["steady"]["by_operation"]},
        }
    cold = [v["cold"]["calls"] for v in res["runs"].values()]
    res["cold_equals_minimum"] = all(c == res["minimum_cold"]["total"] for c in cold)
    res["steady_equals_minimum"] = all(v["steady"]["calls"] == res["minimum_steady"]["total"] for v in res["runs"].values())
    res["unchanged_zero"] = all(v["unchanged"]["calls"] == 0 for v in res["runs"].values())
    res["pg_note"] = pg_note
    return res


def targets(res: dict) -> list[tuple[str, str, bool | None]]:
    mc, out = res["minimum_cold"], []
    for db, r in res["runs"].items():
        out.append((f"{db}: cold nightly calls = minimum", f"{r['cold']['calls']:,} vs {mc['total']:,}",
                    r["cold"]["calls"] == mc["total"]))
        out.append((f"{db}: unchanged replay = 0 calls", f"{r['unchanged']['calls']:,}", r["unchanged"]["calls"] == 0))
    return out


def _ops(by: dict) -> str:
    daily = by.get("daily", 0) + by.get("fold", 0)
    return f"{daily:,} / {by.get('historical', 0):,} / {by.get('merge', 0):,}"


def render(res: dict) -> list[str]:
    c, mc, ms, od = res["corpus"], res["minimum_cold"], res["minimum_steady"], res["on_demand"]
    out = [f"{c['messages']:,} messages, {c['guilds']} guilds, {c['partitions']:,} partitions, "
           f"{c['active_users']:,} active users, {c['days']} days. Summarizer: `bench/instant.py` "
           f"(a call is a call whatever the model; the count comes from `pipeline_runs.summarizer_calls`).", "",
           "| run | database | calls | daily / historical / merge | minimum | daily / historical / merge | |",
           "|---|---|---|---|---|---|---|"]
    for db, r in res["runs"].items():
        out.append(f"| cold nightly: replay of the {c['days']} days | {db} | {r['cold']['calls']:,} | "
                   f"{_ops(r['cold']['by_operation'])} | {mc['total']:,} | {mc['daily']:,} / {mc['historical']:,} / "
                   f"{mc['merge']:,} | {'= minimum' if r['cold']['calls'] == mc['total'] else '**≠ minimum**'} |")
        out.append(f"| the same replay again, data unchanged | {db} | {r['unchanged']['calls']:,} | | 0 | | "
                   f"{'met' if r['unchanged']['calls'] == 0 else '**missed**'} |")
        out.append(f"| steady nightly: days 1–{c['days'] - 1} done, day {c['days']} new | {db} | {r['steady']['calls']:,} | "
                   f"{_ops(r['steady']['by_operation'])} | {ms['total']:,} | {ms['daily']:,} / {ms['historical']:,} / "
                   f"{ms['merge']:,} | {'= minimum' if r['steady']['calls'] == ms['total'] else '**≠ minimum**'} |")
    first = next(iter(res["runs"].values()), None)
    reuse = (", unless a stored row as of an earlier day 1 has the same input (steady run: below)"
             if res.get("history_reused") else "")
    out += ["", "**Minimum** (computed from the corpus, not from the pipeline's tables; `bench/expected.py`): one "
            "daily call per partition-day with messages among the days the run must compute; " + (
                f"one historical call per (partition, user) with a message in days 2–7 whose dated dailies do not fit "
                f"the room a context leaves for the past week{reuse}; one merge per context (scope, user) whose day-1 "
                f"and historical summaries of its sources do not fit `[summary] context_chars` (what fits is passed "
                f"through as dated lines, no call: `pipeline/stages/recent.py`; lengths of `bench/instant.py`'s "
                f"answers)" + (f"; with `[summary] condense = \"cut\"` (this run) neither is called: a week or "
                               f"recent part over its budget is cut to fit" if res.get("condense") == "cut" else "")
                + ". " if res.get("renders") else
                f"one historical call per (partition, user) with a message in days 2–7{reuse}; one merge per context "
                f"(scope, user) whose sources give at least two non-empty inputs among facts, day-1 and historical "
                f"summaries (the corpus has no facts, so: a day-1 and a historical summary). ") +
            f"Contexts written: {mc['contexts']:,}, of which {mc['merge']:,} need a merge call. " + (
                f"In the steady run no partition-day of days 1–{c['days'] - 1} needs a call: its input keeps the "
                f"names of its time (a member's first post or a rename on day {c['days']} changes none)."
                if res.get("stable_names") else
                f"In the steady run the minimum also counts the {res.get('steady_renamed_days', 0):,} partition-days "
                f"of days 1–{c['days'] - 1} that mention someone who first posted in that guild on day {c['days']}: "
                f"the importer learned display names from authors, so such a mention read \"@someone\" before and "
                f"\"@Name\" then, and that day's input changed."), ""]
    if first:
        ratio = od["total"] / first["cold"]["calls"] if first["cold"]["calls"] else float("nan")
        ratio_steady = od["total"] / first["steady"]["calls"] if first["steady"]["calls"] else float("nan")
        out += [f"**On-demand design** (summarise per user per read): each of the {od['reads']:,} (partition, user) "
                f"pairs active in the week is read once a day; a read summarises each of that user's active days "
                f"({od['day_summaries']:,} calls) and merges them ({od['merges']:,} calls; none when one day only): "
                f"**{od['total']:,} calls per day** — {ratio:.2f}× the cold 7-day replay and "
                f"**{ratio_steady:.1f}× the steady nightly run**, and this is its floor: every further read costs "
                f"as much again, where ours costs nothing.", ""]
    unchanged = res["steady_history_unchanged"]
    if not res.get("history_reused"):  # a result from before the reuse (e.g. a committed large run)
        out += [f"In the steady nightly run {unchanged:,} of the {ms['historical']:,} historical calls have the same "
                f"input as the day before; this result predates their reuse by input hash, and its minimum counts them."]
    elif res.get("renders"):
        out += [f"In the steady nightly run {unchanged:,} (partition, user) pairs with a message in days 2–7 have the "
                f"same historical input as the day before (the user wrote nothing in that partition on the new day 2 "
                f"and nothing aged out of day 7): a condensed row among them is copied from yesterday's by input hash "
                f"and a rendered one costs no call either way, so the minimum counts {ms['historical']:,} historical "
                f"calls."]
    else:
        out += [f"In the steady nightly run {unchanged:,} of the {ms['historical'] + unchanged:,} (partition, user) "
                f"pairs with a message in days 2–7 have the same historical input as the day before (the user wrote "
                f"nothing in that partition on the new day 2 and nothing aged out of day 7): their rows are copied "
                f"from yesterday's by input hash, no call, so the minimum counts {ms['historical']:,} historical calls."]
    if res.get("pg_note"):
        out += ["", res["pg_note"]]
    return out
