"""6. Cost: tokens and price of the LLM summarizer against the fake Gemini server (no latency,
canned answers built from the prompts), and prompt tokens read per chat token.

On a slice of the corpus (every k-th guild with its restricted channels, every k-th DM; k from
env.PLANS, 1 = all): the model client costs a few milliseconds of CPU per request, and a live
day refreshes every partition every hour.

1. Replay: days 1..N-1 of the slice, cold, as of day N-1 (this is also the state the live day
   starts from).
2. Steady nightly: day N ingested at once, one run as of day N (on a copy of the database after 1).
3. Live day: day N's messages ingested hour by hour (in the UTC hour they were sent), each hour
   followed by `execute(ctx, "refresh", None, None, only_guilds=…)` with the clock at that hour's
   59th minute, as tests/integration/test_refresh.py does, for the partitions whose local day is
   day N at that time: every partition gets exactly its own local day N — the rollover at its
   midnight, then a refresh every hour — and none rolls on to day N+1. Then one `run` as of
   day N an hour after the last refresh: it completes day N (a fold that was still waiting —
   `refresh.fold_min_chars` — is made there, as the next rollover would), so work a refresh put
   off is counted, not left outside the measurement; only its daily-stage requests about day N
   are counted (its merges stand for day N+1's rollover, as day N's rollover is counted at the
   start).

Prompt tokens include the system instruction: the fake server counts only the contents
(`len // 4 + 1`), Gemini also bills the system instruction, so each request adds
`estimate_tokens(system text)`. Chat tokens = characters of the messages / 4. The estimate is
checked against the wire: the fake records each request body's size (`RecordedRequest.body_bytes`:
prompt, system instruction, response schema and the JSON around them), reported as bytes / 4.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import shutil
import time
from collections import defaultdict
from pathlib import Path

from pipeline.clock import fixed_clock
from pipeline.ingest import import_files, ingest_messages
from pipeline.llm.client import estimate_tokens
from pipeline.llm.gemini import GeminiClient
from pipeline.runner import execute
from pipeline.stages.context import RunContext
from pipeline.store import Store
from pipeline.summarize.llm import LLMSummarizer, system_text

from .. import expected
from ..env import Env, log, ordinal

TITLE = "Cost"
TARGET = 1.5
ON_DEMAND = 2.09
UTC = dt.timezone.utc
OPS = ("daily", "fold", "reduce", "earlier days", "historical", "merge")


def _slice(env: Env, k: int, offset: int) -> tuple[Path, list[dict], dict]:
    """Days 1..N-1 of the slice as a JSONL file; day N's rows in sending order; counts."""
    last, tzs, zones = env.days[-1], env.timezones, {}
    before_path = env.work / f"cost-slice{k}-{offset}-before.jsonl"
    day_rows: list[dict] = []
    per_user: dict[tuple[str, str], int] = defaultdict(int)
    stats = {"guilds": set(), "partitions": set(), "users_before": set(), "users_day": set(),
             "chars_before": 0, "chars_day": 0, "messages_before": 0, "messages_day": 0}
    with env.corpus_path.open(encoding="utf-8") as src, before_path.open("w", encoding="utf-8") as out:
        for line in src:
            row = json.loads(line)
            if not expected.in_slice(row, k, offset):
                continue
            stats["partitions"].add(expected.partition_of(row))
            if row["guild_id"]:
                stats["guilds"].add(row["guild_id"])
            part = "day" if expected.local_day_of(row, tzs, zones) == last else "before"
            stats[f"users_{part}"].add(row["user_id"])
            stats[f"chars_{part}"] += len(row["text"])
            stats[f"messages_{part}"] += 1
            if part == "day":
                day_rows.append(row)
            else:
                out.write(line)
            per_user[(part, row["user_id"])] += 1
    day_rows.sort(key=lambda r: dt.datetime.fromisoformat(r["ts"]))
    counts = {k2: (len(v) if isinstance(v, set) else v) for k2, v in stats.items()}
    for part in ("before", "day"):
        n = sorted(v for (p, _u), v in per_user.items() if p == part)
        counts[f"median_messages_per_user_{part}"] = n[len(n) // 2] if n else 0
    return before_path, day_rows, counts


class _Model:
    """The fake server and a fresh LLM summarizer per run (the runner closes it)."""

    def __init__(self, settings):
        from tests.fakes.gemini_server import FakeGemini
        from tests.fakes.responders import canned_answer

        self.server = FakeGemini(canned_answer).start()
        self.settings = settings.model_copy(deep=True)
        self.settings.summarizer = "gemini"
        self.settings.gemini.base_url = self.server.url
        self.settings.gemini.limits = {}  # the quota is section 4's subject; here only tokens count
        self.system_tokens = estimate_tokens(system_text())

    def summarizer(self) -> LLMSummarizer:
        g = self.settings.gemini
        return LLMSummarizer(self.settings, GeminiClient("bench-key", base_url=g.base_url, timeout_s=g.timeout_s))

    def run(self, store, kind, first, last, clock_at, new_day: dt.date | None = None, only_guilds=None,
            only_ops: tuple[str, ...] | None = None) -> dict:
        """One run; its counts. `only_ops`: count only requests of these operations (`_operation`)."""
        ctx = RunContext(store=store, summarizer=self.summarizer(), settings=self.settings,
                         clock=fixed_clock(clock_at))
        asyncio.run(execute(ctx, kind, first, last, only_guilds=only_guilds))
        by_op: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        calls = self.server.calls()
        kept = [r for r in calls if only_ops is None or _operation(r.prompt_text, new_day) in only_ops]
        for req in kept:
            entry = by_op[_operation(req.prompt_text, new_day)]
            entry[0] += 1
            entry[1] += req.prompt_tokens + self.system_tokens
            entry[2] += req.body_bytes
        self.server.reset()  # the fake keeps every request: free them
        row = store.runs(1)[0]
        out = {k: row[k] for k in ("summarizer_calls", "llm_calls", "prompt_tokens", "output_tokens", "estimated_cost")}
        if only_ops is not None:  # this run's share: the kept requests, as the server counted them
            prices = self.settings.gemini.prices.get(self.settings.gemini.model_for("daily"))
            out = {"summarizer_calls": len(kept), "llm_calls": len(kept),
                   "prompt_tokens": sum(r.prompt_tokens for r in kept),
                   "output_tokens": sum(r.output_tokens for r in kept)}
            out["estimated_cost"] = (out["prompt_tokens"] * prices.input_per_million + out["output_tokens"]
                                     * prices.output_per_million) / 1e6 if prices else 0.0
        return out | {"by_operation": dict(by_op)}

    def close(self):
        self.server.stop()


_DAY = re.compile(r'<day date="(\d{4}-\d\d-\d\d)">')


def _operation(prompt: str, new_day: dt.date | None) -> str:
    """Which prompt template made this request (the markers of prompts/*.xml.j2); with new_day,
    daily-stage requests about an earlier day are told apart ("… earlier day")."""
    if "<messages>" in prompt:
        name = "fold" if "<summaries>" in prompt else "daily"
    elif "<partials>" in prompt:
        name = "reduce"
    else:
        return next((n for m, n in (("<person ", "historical"), ("<past_week>", "merge")) if m in prompt), "other")
    day = _DAY.search(prompt)
    if new_day is not None and day and dt.date.fromisoformat(day.group(1)) < new_day:
        return "earlier days"
    return name


def _totals(runs: list[dict], model: _Model, chars: int, users: int) -> dict:
    t = {k: sum(r[k] for r in runs) for k in ("summarizer_calls", "llm_calls", "prompt_tokens", "output_tokens",
                                               "estimated_cost")}
    by_op: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for r in runs:
        for op, (n, tokens, wire) in r["by_operation"].items():
            by_op[op][0] += n
            by_op[op][1] += tokens
            by_op[op][2] += wire
    t["by_operation"] = {op: {"requests": n, "prompt_tokens": tok, "per_chat_token": round(tok / (chars / 4), 3),
                              "wire_bytes": wire, "wire_per_chat_token": round(wire / chars, 3)}
                         for op, (n, tok, wire) in sorted(by_op.items(), key=lambda kv: -kv[1][1])}
    wire = sum(op[2] for op in by_op.values())
    prompt = t["prompt_tokens"] + t["llm_calls"] * model.system_tokens
    prices = model.settings.gemini.prices.get(model.settings.gemini.model_for("daily"))
    price = (prompt * prices.input_per_million + t["output_tokens"] * prices.output_per_million) / 1e6 if prices else 0.0
    chat = chars / 4
    return t | {"runs": len(runs), "prompt_tokens_with_system": prompt, "price_usd": round(price, 4),
                "chat_tokens": round(chat), "active_users": users,
                "prompt_per_chat_token": round(prompt / chat, 3) if chat else None,
                "wire_bytes": wire, "wire_per_chat_token": round(wire / chars, 3) if chars else None,
                "prompt_per_user": round(prompt / users) if users else None,
                "output_per_user": round(t["output_tokens"] / users) if users else None,
                "price_per_user_usd": round(price / users, 6) if users else None}


def run(env: Env) -> dict:
    k, offset = env.plan["cost_slice"]
    settings = env.settings()
    before, day_rows, counts = _slice(env, k, offset)
    first, last = env.days[0], env.days[-1]
    prev = last - dt.timedelta(days=1)
    hours = sorted({dt.datetime.fromisoformat(r["ts"]).astimezone(UTC).replace(minute=0, second=0, microsecond=0)
                    for r in day_rows})
    start = hours[0]
    res: dict = {"slice": [k, offset], "counts": counts, "system_tokens": None}
    model = _Model(settings)
    res["system_tokens"] = model.system_tokens
    url = env.sqlite_url("cost")
    store = Store.open(url, check_schema=False)
    store.upgrade()
    try:
        import_files(store, [before], settings, fmt="jsonl")
        t0 = time.perf_counter()
        replay = model.run(store, "replay", first, prev, start)
        log(f"cost: replay of days 1-{len(env.days) - 1} done in {time.perf_counter() - t0:.1f} s")
        res["replay"] = _totals([replay], model, counts["chars_before"], counts["users_before"])

        # the steady nightly run, on a copy of the database as the replay left it
        store.close()
        copy = env.sqlite_url("cost-nightly")
        src = Path(url.removeprefix("sqlite:///"))
        for f in src.parent.glob(src.name + "*"):
            shutil.copy(f, copy.removeprefix("sqlite:///") + f.name[len(src.name):])
        nightly_store = Store.open(copy, check_schema=False)
        ingest_messages(nightly_store, day_rows, settings)
        nightly = model.run(nightly_store, "run", None, last, hours[-1] + dt.timedelta(hours=1), new_day=last)
        nightly_store.close()
        res["nightly"] = _totals([nightly], model, counts["chars_day"], counts["users_day"])

        store = Store.open(url, check_schema=False)
        by_hour: dict[dt.datetime, list[dict]] = defaultdict(list)
        for r in day_rows:
            by_hour[dt.datetime.fromisoformat(r["ts"]).astimezone(UTC).replace(minute=0, second=0, microsecond=0)].append(r)
        refreshes = []
        t0 = time.perf_counter()
        hour = start
        while hour <= hours[-1]:
            if by_hour.get(hour):
                ingest_messages(store, by_hour[hour], settings)
            at = hour + dt.timedelta(minutes=59)

            def on_day_n(guild: int | None, at=at) -> bool:  # partitions whose local day is day N now
                return at.astimezone(settings.timezones.for_guild(guild)).date() == last

            refreshes.append(model.run(store, "refresh", None, None, at, new_day=last, only_guilds=on_day_n))
            hour += dt.timedelta(hours=1)
        # the day completed (what the next rollover does for day N): folds still waiting are made;
        # only its day-N daily-stage requests are day N's (the rollover's merges and past weeks
        # belong to day N+1, as day N's own rollover is counted at its start)
        refreshes.append(model.run(store, "run", None, last, hours[-1] + dt.timedelta(hours=1), new_day=last,
                                   only_ops=("daily", "fold", "reduce")))
        log(f"cost: live day, {len(refreshes) - 1} hourly refreshes and the completing run in "
            f"{time.perf_counter() - t0:.1f} s")
        res["live"] = _totals(refreshes, model, counts["chars_day"], counts["users_day"])
        res["live"]["first_hour"], res["live"]["last_hour"] = start.isoformat(), hours[-1].isoformat()
        res["live"]["completed"] = True  # the last of its runs completes the day (results before: no such run)
    finally:
        store.close()
        model.close()
        env.drop_sqlite("cost")
        env.drop_sqlite("cost-nightly")
    res["model"] = model.settings.gemini.model_for("daily")
    res["condense"] = model.settings.summary.condense
    price = model.settings.gemini.prices.get(res["model"])
    res["prices"] = price.model_dump() if price else None
    for part in ("replay", "nightly", "live"):
        res[part]["met"] = res[part]["prompt_per_chat_token"] <= TARGET
    return res


_TARGETS = (("replay", "replay"), ("nightly", "steady nightly"), ("live", "live day, hourly refreshes"))


def targets(res: dict) -> list[tuple[str, str, bool | None]]:
    return [(f"prompt tokens per chat token ≤ {TARGET} ({label})", f"{res[part]['prompt_per_chat_token']:.2f}",
             res[part].get("met")) for part, label in _TARGETS if part in res]


def _optional(value) -> str:
    """A per-chat-token figure, or "–" in results written before it was measured."""
    return "–" if value is None else f"{value:.2f}"


def render(res: dict) -> list[str]:
    c = res["counts"]
    n_days = "1–6"
    k, offset = res["slice"]
    slice_text = ("the whole corpus" if k == 1 else
                  f"a slice of the corpus: every {k}th guild by size from the {ordinal(offset + 1)} "
                  f"({'the busiest guild among them' if offset == 0 else 'so not the busiest guild'}) with its "
                  f"restricted channels, and every {k}th DM")
    out = [f"LLM summarizer (`{res['model']}` for every operation, the default) through the real google-genai client "
           f"against the fake server with no latency and answers built from the prompts "
           f"(`tests/fakes/responders.canned_answer`), on {slice_text}: {c['guilds']} guilds, {c['partitions']} "
           f"partitions, {c['messages_before']:,} messages in days {n_days} and {c['messages_day']:,} on day 7. "
           f"Prompt tokens include the system instruction ({res['system_tokens']} tokens a request; the fake leaves "
           f"it out of its count, Gemini bills it). Chat tokens = message characters / 4. Price at "
           f"`gemini.prices` (${res['prices']['input_per_million']:g} / ${res['prices']['output_per_million']:g} "
           f"per million input / output tokens).", "",
           "| run | runs | requests | prompt tokens | output tokens | price (USD) | active users | prompt / user | "
           "price / user (USD) | **prompt tokens per chat token** | request bytes / 4 per chat token | |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = (("replay", f"replay of days {n_days}, cold"),
            ("nightly", "steady nightly: day 7 at once, one run"),
            ("live", f"live day 7: hourly ingest + refresh, {res['live']['first_hour'][:16].replace('T', ' ')} … "
                     f"{res['live']['last_hour'][:16].replace('T', ' ')} UTC"
                     + (", then the run completing day 7" if res["live"].get("completed") else "")))
    for part, label in rows:
        r = res[part]
        verdict = "" if "met" not in r else ("met" if r["met"] else "**missed**")
        out.append(f"| {label} | {r['runs']} | {r['llm_calls']:,} | {r['prompt_tokens_with_system']:,} | "
                   f"{r['output_tokens']:,} | {r['price_usd']:.2f} | {r['active_users']:,} | {r['prompt_per_user']:,} | "
                   f"{r['price_per_user_usd']:.4f} | **{r['prompt_per_chat_token']:.2f}** | "
                   f"{_optional(r.get('wire_per_chat_token'))} | {verdict} |")
    out += ["", "Prompt tokens by operation (requests · prompt tokens · per chat token · request bytes / 4 per chat "
            "token: the whole body on the wire, response schema and JSON framing included). \"earlier days\": daily, "
            "reduce or fold requests about days 1–6 made after day 7's messages arrived (a partition-day whose input "
            "changed: see below).", "",
            "| run | " + " | ".join(OPS) + " |", "|---|" + "---|" * len(OPS)]
    for part, label in rows:
        ops = res[part]["by_operation"]
        cells = [f"{ops[o]['requests']:,} · {ops[o]['prompt_tokens']:,} · {ops[o]['per_chat_token']:.2f} · "
                 f"{_optional(ops[o].get('wire_per_chat_token'))}" if o in ops else "–" for o in OPS]
        out.append(f"| {label.split(':')[0].split(',')[0]} | " + " | ".join(cells) + " |")
    live, night = res["live"], res["nightly"]

    def part(r, ops, key="per_chat_token"):
        return sum(r["by_operation"].get(o, {}).get(key, 0) for o in ops)

    def wire(r, ops):
        return part(r, ops, "wire_per_chat_token")

    wire_note = "" if "wire_per_chat_token" not in night else (  # results from before bytes were counted
        f" ({wire(night, ('daily', 'reduce')):.2f} and {wire(live, ('daily', 'fold', 'reduce')):.2f} counting "
        f"request bytes / 4: the response schema and the JSON around the prompt travel with every request too)")

    rereads = part(night, ("historical", "merge", "reduce")) + part(live, ("historical", "merge", "reduce"))
    condense = res.get("condense", "model")  # results from before the setting: the model condensed
    out += ["", f"**What bounds it.** Reading the chat itself (daily, fold and reduce requests about day 7) costs "
            f"{part(night, ('daily', 'reduce')):.2f} prompt tokens per chat token in the nightly run and "
            f"{part(live, ('daily', 'fold', 'reduce')):.2f} in the live day{wire_note}: the prompt's fixed part "
            f"(instructions, the system text, the speaker list, repeated in every request and every chunk) weighs "
            f"on short chat messages (median 40 characters; the median active user wrote "
            f"{c['median_messages_per_user_day']} message(s) on day 7, {c['median_messages_per_user_before']} in "
            f"days {n_days}), and each message line adds its number and speaker (`12 p3: `). A busy day is read "
            f"in chunks within the input budget (16,000 tokens for Gemini 2.5) whose speakers' expected answers fit "
            f"one answer (`answer_tokens`, pipeline/summarize/budget.py; the model's output limit, 65,536 for Gemini "
            f"2.5), each chunk repeating the fixed part. The live day's folds "
            + (f"(each a daily request on the new messages under \"cut\", counted as daily: "
               f"{part(live, ('daily', 'fold')):.2f}) " if condense == "cut" else f"({part(live, ('fold',)):.2f}) ")
            + "read a few new messages each"
            + (", and the fixed part again for each" if condense == "cut" else
               " and again the running summaries of the people who wrote them: a user who writes in many hours "
               "is folded once per such fold")
            + f" (a fold waits while its new text is under `refresh.fold_min_chars`"
            + ("" if condense == "cut" else " or under those running summaries")
            + f", at most `refresh.fold_max_wait_h` (3 h), or `refresh.fold_quiet_wait_h` (12 h) for a trickle under "
            f"`refresh.fold_quiet_chars` (less text than the fold's own fixed part); a day still waiting at the "
            f"last refresh is folded by the run "
            f"completing it). "
            + (f"No request reads a summary again (`[summary] condense = \"{condense}\"`: a big day's partial "
               f"summaries, a fold's new part, a past week and a recent part over their budgets are cut to fit "
               f"without a call, pipeline/stages/recent.py): no reduce, historical or merge request, and no "
               f"running summary in a fold. " if not rereads else
               f"Summaries read again (`[summary] condense = \"{condense}\"`): every (partition, user) with a "
               f"message in days 1–6 whose week does not fit gets a historical call that reads all their daily "
               f"summaries again ({part(night, ('historical',)):.2f} per chat token at night), every context that "
               f"does not fit a merge that reads their day-1 and historical summaries "
               f"({part(night, ('merge',)):.2f}; in the live day at most once per day 1: "
               f"{part(live, ('merge',)):.2f}), and a big day read in chunks a reduce "
               f"({part(night, ('reduce',)):.2f}). ")
            + (f"\"Earlier days\" ({part(live, ('earlier days',)):.2f} live, {part(night, ('earlier days',)):.2f} at "
               f"night): partition-days of days 1–6 summarised again after day 7's messages arrived (an input "
               f"changed). " if part(live, ("earlier days",)) or part(night, ("earlier days",))
               else "")
            + f"Section 2 counts the historical "
            f"calls whose input did not change since the day before."]
    out += ["", f"Target ≤ {TARGET} prompt tokens per chat token; an on-demand design measured on a comparable "
            f"workload reads {ON_DEMAND} while seeing only half of each day's messages. Active users: users with a "
            f"message in the period. The live day's {live['runs'] - bool(live.get('completed'))} hourly refreshes"
            + (" (then one `run` as of day 7 that completes the day: folds a refresh left waiting are made and "
               "counted there — only its daily-stage requests about day 7; its merges stand for the next day's "
               "rollover, as day 7's own rollover is counted at the start)" if live.get("completed") else "")
            + f" each cover the partitions whose "
            f"local day is day 7 at that hour (`execute(…, only_guilds=…)`), so each partition gets exactly its own "
            f"day: the rollover at its local midnight (historical summaries of days 1–6, new contexts) and an "
            f"ingest + refresh every hour; the steady nightly row is the same day computed once, after the fact."]
    return out
