"""9. Scaling out (bench/sections/scale.py): its targets and its RESULTS.md section."""

from __future__ import annotations

from ..env import ordinal

TARGET = 0.9



def targets(res: dict) -> list[tuple[str, str, bool | None]]:
    if "skipped" in res:
        return [("workers share the quota", res["skipped"], None)]
    out = []
    for n in res["nights"]:
        sv, w = n["server"], n["workers"]
        over = f"busiest window {sv['max_in_window']}/{res['limit']}, {sv['rejected']} × 429"
        if n["capacity"] >= 1 and sv["share"] is None:  # fewer requests than the limit: no pair to measure
            out.append((f"{w} workers: ≥ {TARGET} of the limit, never over", f"too few requests to measure; {over}", None))
        elif n["capacity"] >= 1:
            out.append((f"{w} workers: ≥ {TARGET} of the limit, never over", f"{sv['share']:.2f}; {over}",
                        sv["share"] >= TARGET and sv["max_in_window"] <= res["limit"] and sv["rejected"] == 0))
        else:
            out.append((f"{w} worker{'s' if w > 1 else ''}: never over the limit", over,
                        sv["max_in_window"] <= res["limit"] and sv["rejected"] == 0))
        out.append((f"{w} worker{'s' if w > 1 else ''}: requests = minimum, rows = one process's",
                    f"{sv['admitted']:,} vs {res['minimum']:,}; rows {'equal' if n['rows_equal'] else 'differ'}",
                    sv["admitted"] == res["minimum"] and n["rows_equal"]))
    b = res.get("batch") or {}
    if not b.get("measured"):
        out.append(("batch night: requests and cost vs interactive", f"not measured: {b.get('reason')}", None))
    else:
        out.append(("batch night: requests = minimum, rows = one process's, all by batch",
                    f"{b['requests']:,} vs {res['minimum']:,} ({b['interactive']} interactive) in {b['rounds']} rounds; "
                    f"rows {'equal' if b['rows_equal'] else 'differ'}",
                    b["done"] and b["requests"] == res["minimum"] and b["interactive"] == 0 and b["rows_equal"]))
        out.append(("batch night: estimated cost = batch_price_factor × interactive",
                    f"{b['cost_ratio']}× (${b['estimated_cost']:.4f} vs ${b['interactive_cost']:.4f})", None))
    return out


def _cpu(cpu: dict | None) -> str:
    if not cpu:
        return "–"
    return f"{' + '.join(f'{x:.0f}' for x in cpu['workers_s'])} + {cpu['command_s']:.0f}; {cpu['machine_busy']:.0%}"


def _cpus(res: dict) -> str:
    return str(next((n["cpu"]["cpus"] for n in res["nights"] if n.get("cpu")), "?"))


def _slice_label(cut: list[int] | None) -> str:
    if not cut:
        return ""
    return (f"of a slice: every {ordinal(cut[0])} guild from the {ordinal(cut[1] + 1)}, its restricted channels and "
            f"every {ordinal(cut[0])} DM; ")


def render(res: dict) -> list[str]:
    if "skipped" in res:
        return [f"Not measured: {res['skipped']}."]
    lo, hi = res["latency"]
    mean, ref = (lo + hi) / 2, res["reference"]
    k = res["time_scale"]
    rb = ref["server"]["by_operation"]
    out = [
        f"The corpus's cold night ({_slice_label(res['slice'])}"
        f"`mempipe replay` of its days) on PostgreSQL with the LLM summarizer, handed to `mempipe worker` "
        f"processes (`[workers] enabled = true`, so the quota is counted in the database and shared), against the "
        f"fake Gemini server (canned answers, `tests/fakes/responders.py`) answering after a seeded latency "
        f"uniform in {lo:.2g}–{hi:.2g} s. " + (
            f"Times are real ones divided by {k:g}: a {res['window_s']:g} s window (`gemini.rate_window_s` = the "
            f"server's window) stands for a minute, the latency for 1–3 s. The pipeline's own work per item (reading, "
            f"writing, handing out jobs) is not divided: it weighs {k:g}× more against the latency than at real scale."
            if k else f"A {res['window_s']:g} s window (`gemini.rate_window_s` = the server's window): not a real "
            f"ratio of window to latency (this size checks the section's shape, not its targets)."), "",
        f"**The limit is chosen so that one process cannot spend it**: one worker has at most "
        f"`gemini.concurrency` = {res['concurrency']} requests in flight (its {res['worker_jobs']} jobs at once share "
        f"them), so over a mean latency of {mean:.2g} s it can send at most {res['concurrency']} × "
        f"{res['window_s']:g} / {mean:.2g} = {res['one_worker_per_window']:g} requests per window; the limit is "
        f"{res['limit_factor']:g}× that, **{res['limit']} per {res['window_s']:g} s**" + (
            f" (at real scale: {res['limit']} requests per minute against one process's "
            f"{res['one_worker_per_window']:g}; a paid tier allows more still)" if k else "") + ". "
        f"It is set both in the server (429 beyond it) and in `gemini.limits` (tpm and rpd out of reach). One worker "
        f"can use at most {1 / res['limit_factor']:.2f} of it; two or more can fill it, so the share target applies "
        f"to them.", "",
        "| workers | wall (s) | requests | minimum | share of the limit, daily stage | whole night | busiest window "
        "| 429s | rows = one process's | capacity / limit | CPU s: workers + run; machine busy | |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for n in res["nights"]:
        sv = n["server"]
        share = f"**{sv['share']:.2f}**" if sv["share"] is not None else "–"
        night = f"{sv['share_night']:.2f}" if sv["share_night"] is not None else "–"
        out.append(f"| {n['workers']} | {n['wall_s']:.1f} | {sv['admitted']:,} | {res['minimum']:,} | {share} "
                   f"({sv['busy_s']:.0f} s) | {night} ({sv['night_s']:.0f} s) | {sv['max_in_window']} / {res['limit']} | "
                   f"{sv['rejected']} | {'yes' if n['rows_equal'] else '**no**'} | {n['capacity']:.2f} | "
                   f"{_cpu(n.get('cpu'))} | {'met' if n['met'] else '**missed**'} |")
    out += _bound(res)
    out += [
        "", f"Wall = the run's `pipeline_runs` row, started to finished (the workers were started and listening "
        f"before it). **Minimum** = the requests of one in-process run of the same night (`mempipe replay` without "
        f"workers, same server, no latency, no limit reached): {res['minimum']:,} ({rb.get('daily', 0):,} daily "
        f"stage, {rb.get('historical', 0):,} historical, {rb.get('merge', 0):,} merge), {ref['wall_s']:.1f} s; "
        f"`bench/expected.py` computes the minimum for `bench/instant.py`'s answer lengths, not the canned answers', "
        f"so the count comes from that run (the calls section checks that one process's night makes exactly the "
        f"computed minimum). Every worker count is compared with that one run; \"rows\" = its daily, historical and "
        f"context texts, row for row (md5 of each table).",
        "", f"Share = quota.py's achieved share: request *i* may arrive once request *i − limit* has left the window, "
        f"so window / the mean gap between their arrivals (no window alignment, no start-up credit). The busy period "
        f"is the daily stage (the partition-days, {rb.get('daily', 0):,} of the {res['minimum']:,} requests): the "
        f"stages after it are a few requests among database work, and a run finishes one stage before deferring the "
        f"next, so no number of workers fills the quota there — the whole night's share shows it. Busiest window = "
        f"the most arrivals in any window, whatever its start (`FakeGemini.max_requests_in_window`). Bound: the "
        f"limiter counts a request from when it is sent until one window after its answer, so at most "
        f"window / (window + mean latency) = {res['bound']:.2f} of the limit can be used. Capacity / limit = "
        f"workers × {res['concurrency']} × window / mean latency / limit (what their slots could send if every "
        f"item were a request and nothing else). CPU: the seconds each worker process and the `mempipe replay` "
        f"command used during the night, and the share of the machine's {_cpus(res)} CPUs busy meanwhile (everything: "
        f"PostgreSQL, the fake server, other processes): a night that stays under the limit with the machine near "
        f"100 % busy is bound by CPU there, not by the quota."]
    b = res.get("batch") or {}
    if not b.get("measured"):
        out += ["", f"**Batch mode** (`gemini.batch = true`): not measured: {b.get('reason')}."]
        return out
    per = ", ".join(f"{r['deferred'][-1] if r['deferred'] else 0:,}" for r in b["per_round"])
    out += ["", f"**Batch mode** (`gemini.batch = true`, one process: batch mode is in-process runs only): the same "
            f"night as rounds of `mempipe replay` against the same fake server without latency; between rounds the "
            f"server finishes every submitted job at once (the Batch API's turnaround, hours per round at worst, is "
            f"not in these times: the rounds are what counts).", "",
            "| rounds | batch jobs | requests in jobs | interactive requests | minimum | rows = one process's "
            "| estimated cost | interactive night's | ratio | command time (s) |", "|---|---|---|---|---|---|---|---|---|---|",
            f"| {b['rounds']} | {b['jobs']} | {b['inline']:,} | {b['interactive']:,} | {res['minimum']:,} | "
            f"{'yes' if b['rows_equal'] else '**no**'} | ${b['estimated_cost']:.4f} | ${b['interactive_cost']:.4f} | "
            f"{b['cost_ratio']}× | {b['command_s']:.1f} |", "",
            f"Items deferred at the end of each round: {per}{'' if b['done'] else ' (not done: still deferring)'}. "
            f"Cost = the runs' `estimated_cost` summed (tokens × `gemini.prices` × `gemini.batch_price_factor` for "
            f"batch answers); the interactive night's = the reference night's."]
    return out


def _bound(res: dict) -> list[str]:
    """What bounds each night that missed the share target, from what was measured alongside."""
    lines = []
    for n in res["nights"]:
        sv, cpu = n["server"], n.get("cpu") or {}
        if n["met"] or n["capacity"] < 1 or sv["share"] is None:
            continue
        busy = cpu.get("machine_busy")
        if busy is not None and busy >= 0.85:
            why = (f"the machine's {cpu.get('cpus')} CPUs were {busy:.0%} busy during the night (workers "
                   f"{sum(cpu.get('workers_s', [])):.0f} CPU s, the run {cpu.get('command_s', 0):.0f} s, the rest "
                   f"PostgreSQL and the fake server): the night is bound by CPU here, not by the quota — the "
                   f"pipeline's own work per item is not divided by the time scale, so it weighs "
                   f"{res['time_scale'] or 1:g}× more against the window than at real scale")
        else:
            why = (f"the machine was {busy:.0%} busy" if busy is not None else "no CPU figure") + (
                ": not CPU; the stage barriers and the job hand-out (each item a job, fetched by a worker) "
                "leave slots idle")
        lines.append(f"- {n['workers']} workers: share {sv['share']:.2f} < {TARGET}: {why}.")
    return ["", "**What bounds it.**", *lines] if lines else []
