"""7. Memory quality: are durable facts said once in chat still in the user's context 30 and 90
days later, does a changed preference replace the old one, and does anything said in a
restricted channel, a DM or another guild reach a context whose readers may not see it?

Corpus: bench/memory_corpus.py. Per summarizer, on a fresh SQLite database, for each day D in
order: the messages of local day D are ingested (`ingest_messages`, as a bot writes them), then
cron's two lines run with the clock fixed at D+1 12:00 UTC (every zone's day D is over): `run` as
of D (`execute` on `App(settings, store, clock).run_context()`) and `apply_retention`. Contexts are
read after every night. Summarizers: extractive (default), and the LLM one against the fake
Gemini server (`canned_answer`, no latency, no quota limiter: quota is section 4's subject)."""

from __future__ import annotations

import asyncio
import collections
import datetime as dt
import json
import os
import re
import time
from unittest import mock
from zoneinfo import ZoneInfo

import sqlalchemy as sa

from pipeline.app import App
from pipeline.clock import fixed_clock
from pipeline.config import Timezones, load_settings
from pipeline.ingest import ingest_messages
from pipeline.llm.client import estimate_tokens
from pipeline.retention import apply_retention
from pipeline.runner import execute
from pipeline.store import Store

from .. import memory_corpus
from ..env import Env, log

TITLE = "Memory quality"
BUDGET_TOKENS = 1500
CUT_CHARS = BUDGET_TOKENS * 4  # pipeline.llm.client.estimate_tokens: characters / 4
TARGET_FULL, TARGET_CUT = 0.9, 0.7
SUMMARIZERS = ("extractive", "gemini")
LEAK_KINDS = ("private_to_guild", "cross_guild", "other")
UTC = dt.timezone.utc


def run(env: Env) -> dict:
    spec, path = memory_corpus.SIZES[env.size], env.work / "memory.jsonl"
    meta = memory_corpus.write(spec, env.seed, path)
    log(f"memory: corpus {meta['counts']}")
    nights = _nights(path, meta)
    res = {"corpus": meta["counts"], "spec": meta["spec"], "database": "sqlite", "budget_tokens": BUDGET_TOKENS,
           "plants": {"facts": len(meta["plants"]), "checkpoints": list(spec.checkpoints)}
           | {f"by_{k}": dict(collections.Counter(f[k] for f in meta["plants"])) for k in ("kind", "level")},
           "summarizers": {}}
    for kind in SUMMARIZERS:
        log(f"memory: {len(nights)} nights with the {kind} summarizer")
        res["summarizers"][kind] = _simulate(env, kind, meta, nights)
    return res


def _nights(path, meta) -> dict[dt.date, list[dict]]:
    """Messages by the local day they were sent on (the guild's zone; DMs UTC)."""
    tzs = {g: ZoneInfo(tz) for g, tz in meta["world"]["timezones"].items()}
    out: dict[dt.date, list[dict]] = collections.defaultdict(list)
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            tz = tzs[row["guild_id"]] if row["guild_id"] else UTC
            out[dt.datetime.fromisoformat(row["ts"]).astimezone(tz).date()].append(row)
    return out


class Scorer:
    """Keywords, checkpoints and who may read what, from the corpus metadata."""

    def __init__(self, meta: dict):
        spec, self.plants, self.world = meta["spec"], meta["plants"], meta["world"]
        self.base = self.world["user_base"]
        self.last = dt.date.fromisoformat(spec["first_day"]) + dt.timedelta(days=spec["days"] - 1)
        self.patterns = {f["id"]: [memory_corpus.keyword_re(k) for k in f["keywords"]] for f in self.plants}
        self.checks: dict[dt.date, list[tuple[dict, int]]] = collections.defaultdict(list)
        self.changes: dict[dt.date, list[dict]] = collections.defaultdict(list)
        for f in self.plants:
            said = dt.date.fromisoformat(f["said"][-1])  # the last time it was said
            for off in spec["checkpoints"]:
                at = said + dt.timedelta(days=off)
                # an old preference is checked only while it is still the user's preference
                if at <= self.last and ("superseded_on" not in f or at < dt.date.fromisoformat(f["superseded_on"])):
                    self.checks[at].append((f, off))
            if f["kind"] == "change" and (at := said + dt.timedelta(days=spec["supersede_after"])) <= self.last:
                self.changes[at].append(f)
        self.old = {f["id"]: [memory_corpus.keyword_re(f["old"])] for f in self.plants if f["kind"] == "change"}
        words = sorted({k for f in self.plants for k in f["keywords"]}, key=len, reverse=True)
        self.any_keyword = re.compile("|".join(r"(?<!\w)" + re.escape(k) + r"(?!\w)" for k in words), re.IGNORECASE)
        self.by_keyword = collections.defaultdict(list)
        for f in self.plants:
            for k in f["keywords"]:
                self.by_keyword[k.lower()].append(f)

    def has(self, fact_id: str, text: str) -> bool:
        return all(p.search(text) for p in self.patterns[fact_id])

    def readers(self, partition: str) -> set[int]:
        kind, cid = partition.split(":")
        w = self.world
        members = {"guild": lambda: w["guilds"][cid]["members"], "channel": lambda: w["channels"][cid]["members"],
                   "dm": lambda: [w["dms"][cid]]}[kind]()
        return {self.base + u for u in members}

    def guild_of(self, scope: str) -> str | None:
        kind, cid = scope.split(":")
        return cid if kind == "guild" else self.world["channels"][cid]["guild"]

    def leak(self, f: dict, scope: str, user: int) -> str | None:
        """None when the context (scope, user) may hold fact f, else the kind of leak. A context
        may hold what every one of its readers may read (README, Scopes); a favourite game or band
        said in public may be promoted to `global` and is never a leak."""
        if f["global_ok"]:
            return None
        kind, cid = scope.split(":")
        p = f["partition"]
        if kind == "guild":
            ok = p == scope
        elif kind == "channel":
            ok = p in (scope, f"guild:{self.world['channels'][cid]['guild']}")
        else:
            ok = self.world["dms"].get(cid) is not None and self.base + self.world["dms"][cid] in self.readers(p)
        if ok:
            return None
        if p.split(":")[0] in ("channel", "dm") and kind == "guild":
            return "private_to_guild"
        if p.startswith("guild:") and kind in ("guild", "channel") and self.guild_of(scope) != f["guild_id"]:
            return "cross_guild"
        return "other"

    def facts_in(self, text: str) -> list[dict]:
        found = {m.group(0).lower() for m in self.any_keyword.finditer(text)}
        return [f for k in found for f in self.by_keyword[k] if self.has(f["id"], text)]


def _date_re(day: str) -> re.Pattern:
    d = dt.date.fromisoformat(day)
    months = f"(?:{d.strftime('%B')}|{d.strftime('%b')}\\.?)"
    n = rf"0?{d.day}(?:st|nd|rd|th)?"
    return re.compile(rf"{d.isoformat()}|{months}\s+{n}\b|\b{n}(?:\s+of)?\s+{months}", re.IGNORECASE)


def _stage(store, scorer: Scorer, f: dict, row: dict | None, fresh: bool) -> str:
    """Where a missed fact was lost: extraction (memory_facts), profile (memory_profiles), the
    context row (missing, stale) or the context text."""
    where = "no context row" if row is None else ("stale context row" if not fresh else "not in the context text")
    insp = sa.inspect(store.engine)
    if not (insp.has_table("memory_facts") and insp.has_table("memory_profiles")):
        return f"no memory tables; {where}"
    with store.engine.connect() as conn:
        facts = conn.execute(sa.text("SELECT text, status FROM memory_facts WHERE user_id = :u"),
                             {"u": f["user_id"]}).all()
        profile = conn.execute(sa.text("SELECT profile FROM memory_profiles WHERE scope = :s AND user_id = :u"),
                               {"s": f["partition"], "u": f["user_id"]}).scalar()
    matched = [status for text, status in facts if scorer.has(f["id"], text)]
    if not matched:
        return "not extracted"
    if "active" not in matched:
        return "extracted, no longer active"
    if profile is None or not scorer.has(f["id"], profile):
        return "extracted, not in the profile"
    return f"in the profile; {where}"


def _simulate(env: Env, kind: str, meta: dict, nights: dict) -> dict:
    from tests.fakes.gemini_server import FakeGemini
    from tests.fakes.responders import canned_answer

    scorer = Scorer(meta)
    settings = load_settings()
    settings.timezones = Timezones(default="UTC", guilds={int(g): tz for g, tz in meta["world"]["timezones"].items()})
    settings.summarizer = kind
    server = FakeGemini(canned_answer).start() if kind == "gemini" else None
    if server is not None:
        settings.gemini.base_url, settings.gemini.limits = server.url, {}
    key = mock.patch.dict(os.environ, {settings.gemini.api_key_env: "bench-key"} if server else {})
    name = f"memory-{kind}"
    store = Store.open(env.sqlite_url(name), check_schema=False)
    store.upgrade()
    per_night, checks, changes, misses, runs, leaks = [], [], [], collections.Counter(), collections.Counter(), {}
    t0 = time.perf_counter()
    key.start()
    try:
        first = dt.date.fromisoformat(meta["spec"]["first_day"])
        for i in range(meta["spec"]["days"]):
            day = first + dt.timedelta(days=i)
            at = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(12), UTC)
            if nights.get(day):
                ingest_messages(store, nights[day], settings, clock=fixed_clock(at))
            t = time.perf_counter()
            asyncio.run(execute(App(settings, store, fixed_clock(at)).run_context(), "run", None, day))
            apply_retention(store, settings, now=at)
            row = store.runs(1)[0]
            for k in ("summarizer_calls", "llm_calls", "fallbacks", "errors", *[c for c in row if c[:6] == "facts_"]):
                runs[k] += row.get(k) or 0
            llm = len(server.calls("generateContent")) if server is not None else 0
            if server is not None:
                server.reset()  # the fake keeps every request: free them
            per_night.append({"llm": llm, "calls": row["summarizer_calls"], "s": round(time.perf_counter() - t, 3)})
            contexts = store.contexts()
            _scan_leaks(scorer, contexts, day, leaks)
            _checkpoints(store, scorer, contexts, day, checks, changes, misses)
            if i % 10 == 9:
                log(f"memory/{kind}: night {i + 1}, {len(contexts)} context rows, {llm} LLM calls")
        sizes = [estimate_tokens(c["context"]) for c in store.contexts()]
    finally:
        key.stop()
        if server is not None:
            server.stop()
        store.close()
        env.drop_sqlite(name)
    wall = time.perf_counter() - t0
    return _summary(kind, checks, changes, misses, leaks, per_night, runs, sizes, wall, scorer)


def _scan_leaks(scorer: Scorer, contexts: list[dict], day: dt.date, leaks: dict) -> None:
    for c in contexts:
        for f in scorer.facts_in(c["context"]):
            what = scorer.leak(f, c["scope"], c["user_id"])
            key = (f["id"], c["scope"], c["user_id"])
            if what and key not in leaks:
                leaks[key] = {"kind": what, "fact": f["id"], "said_in": f["partition"], "scope": c["scope"],
                              "user_id": c["user_id"], "first_seen": day.isoformat()}


def _checkpoints(store, scorer: Scorer, contexts, day, checks, changes, misses) -> None:
    rows = {(c["scope"], c["user_id"]): c for c in contexts}
    for f, off in scorer.checks.get(day, ()):
        row = rows.get((f["partition"], f["user_id"]))
        fresh = row is not None and str(row["as_of_day"]) == day.isoformat()
        text = row["context"] if row else ""
        full, cut = fresh and scorer.has(f["id"], text), fresh and scorer.has(f["id"], text[:CUT_CHARS])
        dated = bool(_date_re(f["event_day"]).search(text)) if f["kind"] == "trip" and full else None
        stage = None if cut else "cut by the 1,500-token budget" if full else _stage(store, scorer, f, row, fresh)
        checks.append({"fact": f["id"], "kind": f["kind"], "level": f["level"], "offset": off, "full": full,
                       "cut": cut, "lenient": row is not None and scorer.has(f["id"], text), "fresh": fresh,
                       "dated": dated, "stage": stage})
        if stage:
            misses[(off, stage)] += 1
    for f in scorer.changes.get(day, ()):
        row = rows.get((f["partition"], f["user_id"]))
        fresh = row is not None and str(row["as_of_day"]) == day.isoformat()
        text = row["context"] if row else ""
        new, old = scorer.has(f["id"], text), any(p.search(text) for p in scorer.old[f["id"]])
        changes.append({"fact": f["id"], "fresh": fresh, "new": fresh and new, "old": fresh and old,
                        "replaced": fresh and new and not old})


def _ratio(n: int, d: int) -> float | None:
    return round(n / d, 3) if d else None


def _summary(kind, checks, changes, misses, leaks, per_night, runs, sizes, wall, scorer) -> dict:
    recall = {}
    for off in sorted({c["offset"] for c in checks}):
        cs = [c for c in checks if c["offset"] == off]
        recall[str(off)] = {"checked": len(cs), "found_full": sum(c["full"] for c in cs),
                            "found_cut": sum(c["cut"] for c in cs), "found_any_row": sum(c["lenient"] for c in cs),
                            "fresh_rows": sum(c["fresh"] for c in cs),
                            "full": _ratio(sum(c["full"] for c in cs), len(cs)),
                            "cut": _ratio(sum(c["cut"] for c in cs), len(cs)),
                            **{f"by_{key}": {k: [sum(c["full"] for c in cs if c[key] == k),
                                                 sum(c[key] == k for c in cs)] for k in sorted({c[key] for c in cs})}
                               for key in ("kind", "level")}}
    trips = [c for c in checks if c["dated"] is not None]
    llm = [n["llm"] for n in per_night]
    leak_counts = {k: sum(v["kind"] == k for v in leaks.values()) for k in LEAK_KINDS}
    return {
        "summarizer": kind, "recall": recall,
        "superseded": {"checked": len(changes), "replaced": sum(c["replaced"] for c in changes),
                       "new_present": sum(c["new"] for c in changes), "old_present": sum(c["old"] for c in changes),
                       "share": _ratio(sum(c["replaced"] for c in changes), len(changes))},
        "leaks": leak_counts | {"total": sum(leak_counts.values())},
        "leak_examples": list(leaks.values())[:10],
        "trip_dates": {"recalled_trips": len(trips), "with_date": sum(c["dated"] for c in trips)},
        "lost": [{"offset": off, "stage": stage, "count": n} for (off, stage), n in sorted(misses.items())],
        "missed": [[c["fact"], c["offset"], c["stage"]] for c in checks if c["stage"]][:200],
        "llm_calls": {"total": sum(llm), "per_night_mean": round(sum(llm) / len(llm), 1), "per_night_max": max(llm)},
        "runs": dict(runs),
        "context_tokens": {"rows": len(sizes), "mean": round(sum(sizes) / len(sizes)) if sizes else 0,
                           "max": max(sizes, default=0), "over_budget": sum(s > BUDGET_TOKENS for s in sizes)},
        "nights": len(per_night), "wall_s": round(wall, 1),
        "night_s": {"mean": round(sum(n["s"] for n in per_night) / len(per_night), 3),
                    "max": max(n["s"] for n in per_night)},
    }


# ------------------------------------------------------------------------------ report


def _f(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def _recalls(s: dict, key: str) -> tuple[str, bool]:
    r = s["recall"]
    offs = sorted(r, key=int)
    target = TARGET_FULL if key == "full" else TARGET_CUT
    text = "; ".join(f"+{o} d: {_f(r[o][key])} ({r[o]['found_' + key]}/{r[o]['checked']})" for o in offs)
    return text or "no checkpoint", bool(offs) and all(r[o][key] is not None and r[o][key] >= target for o in offs)


def targets(res: dict) -> list[tuple[str, str, bool | None]]:
    out = []
    for kind, s in res["summarizers"].items():
        for key, target, what in (("full", TARGET_FULL, "the default budget"),
                                  ("cut", TARGET_CUT, f"{BUDGET_TOKENS:,} tokens")):
            text, met = _recalls(s, key)
            out.append((f"{kind}: recall ≥ {target} at {what}", text, met))
        lk = s["leaks"]
        out.append((f"{kind}: 0 leaks", f"{lk['total']} (restricted/DM → guild {lk['private_to_guild']}, "
                    f"cross-guild {lk['cross_guild']}, other {lk['other']})", lk["total"] == 0))
    return out


def _bound(s: dict) -> str:
    """What bounds the recall: the stages where the missed facts were lost, most first."""
    by = sum((collections.Counter({e["stage"]: e["count"]}) for e in s["lost"]), collections.Counter())
    return ", ".join(f"{stage} {n}" for stage, n in by.most_common()) or "nothing lost"


def render(res: dict) -> list[str]:
    c, p, spec, sums = res["corpus"], res["plants"], res["spec"], res["summarizers"]
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(p["by_kind"].items()))
    levels = ", ".join(f"{k} {n}" for k, n in sorted(p["by_level"].items()))
    out = [f"Corpus `bench/memory_corpus.py`: {c['users']} users, {c['guilds']} guilds (three public channels and "
           f"one restricted channel each), {c['dms']} one-to-one DMs with the bot, {c['days']} days from "
           f"{spec['first_day']}, {c['messages']:,} messages. {p['facts']} planted facts ({kinds}; said in "
           f"{levels}), each said once or twice in first-person chat among small talk; `change` is a favourite "
           f"game or band replaced {spec['change_gap'][0]}–{spec['change_gap'][1]} days after the first value. "
           f"Simulation on {res['database']} (PostgreSQL not measured here): each night the day's messages are "
           f"ingested, then `run` as of that day and retention, as cron would.", "",
           f"| summarizer | recall, default budget | recall, first {BUDGET_TOKENS:,} tokens | superseded replaced | "
           f"leaks (restricted/DM → guild / cross-guild / other) | LLM calls (per night mean / max) | time (s) |",
           "|---|---|---|---|---|---|---|"]
    for kind, s in sums.items():
        sup, lk, llm = s["superseded"], s["leaks"], s["llm_calls"]
        out.append(f"| {kind} | {_recalls(s, 'full')[0]} | {_recalls(s, 'cut')[0]} | {_f(sup['share'])} "
                   f"({sup['replaced']}/{sup['checked']}; new value in {sup['new_present']}, old value still in "
                   f"{sup['old_present']}) | **{lk['total']}** ({lk['private_to_guild']} / "
                   f"{lk['cross_guild']} / {lk['other']}) | {llm['total']:,} ({llm['per_night_mean']} / "
                   f"{llm['per_night_max']}) | {s['wall_s']:.1f} |")
    offs = sorted({o for s in sums.values() for o in s["recall"]}, key=int)
    for o in offs:
        ks = sorted({k for s in sums.values() for k in s["recall"].get(o, {}).get("by_kind", {})})
        ls = sorted({k for s in sums.values() for k in s["recall"].get(o, {}).get("by_level", {})})
        out += ["", f"Recall at +{o} days (default budget), found / checked:", "",
                "| summarizer | " + " | ".join(ks + ls) + " | rows current on the day | found in any row |",
                "|---|" + "---|" * (len(ks) + len(ls) + 2)]
        for kind, s in sums.items():
            if not (r := s["recall"].get(o)):
                continue
            cells = [f"{a}/{b}" for a, b in (r["by_kind"].get(k, [0, 0]) for k in ks)]
            cells += [f"{a}/{b}" for a, b in (r["by_level"].get(k, [0, 0]) for k in ls)]
            out.append(f"| {kind} | " + " | ".join(cells) + f" | {r['fresh_rows']}/{r['checked']} | "
                       f"{r['found_any_row']}/{r['checked']} |")
    out += ["", "Where the missed facts were lost (checkpoint: stage: count):", ""]
    for kind, s in sums.items():
        lost = "; ".join(f"+{e['offset']}: {e['stage']}: {e['count']}" for e in s["lost"]) or "nothing lost"
        t, rn, ct = s["trip_dates"], s["runs"], s["context_tokens"]
        facts = ", ".join(f"{k.removeprefix('facts_')} {v:,}" for k, v in rn.items() if k.startswith("facts_") and v)
        out.append(f"- **{kind}**: {lost}. Trips recalled with their date: {t['with_date']}/{t['recalled_trips']}. "
                   f"Summarizer calls {rn.get('summarizer_calls', 0):,}, LLM calls {rn.get('llm_calls', 0):,}, "
                   f"fallbacks {rn.get('fallbacks', 0)}, errors {rn.get('errors', 0)}; fact counters: "
                   f"{facts or 'none recorded'}. Context rows on the last night: {ct['rows']}, {ct['mean']:,} tokens "
                   f"on average, at most {ct['max']:,} ({ct['over_budget']} over {BUDGET_TOKENS:,}). "
                   f"Nights: {s['night_s']['mean']:.2f} s on average, at most {s['night_s']['max']:.2f} s.")
        for e in s["leak_examples"][:5]:
            out.append(f"  - leak ({e['kind']}): fact {e['fact']} said in `{e['said_in']}` found in `{e['scope']}` "
                       f"of user {e['user_id']} from {e['first_seen']}")
    missed = [(k, s) for k, s in sums.items() if not all(m for _t, _m, m in targets({"summarizers": {k: s}}))]
    if missed:
        out += ["", "**Targets missed.** What bounds them (the stage each missed fact was lost at): "
                + "; ".join(f"{k}: {_bound(s)}" for k, s in missed) + "."]
    out += ["", "Definitions. A fact is *recalled* at +N days when the context row of its user in the scope where "
            "it was said (`guild:G` for a public channel, `channel:C` for the restricted channel, `dm:D` for the DM) "
            "read after the night of day+N (day: the last time it was said; within the corpus) is current (as of "
            "that day: a row left from an earlier day is not counted; \"found in any row\" counts it) and contains "
            "every keyword of the fact (case-insensitive, on word boundaries; each keyword occurs in no other message "
            "of the corpus). "
            f"At {BUDGET_TOKENS:,} tokens the row is cut to its first {CUT_CHARS:,} characters "
            "(`estimate_tokens` = characters / 4). An old favourite is checked only before it changes; a "
            f"*superseded* fact is replaced when, {spec['supersede_after']} days after the change, the row has the "
            "new value and not the old. *Leaks* are counted over every context row after every night, each (fact, "
            "scope, user) once: a restricted-channel or DM fact in any `guild:` row (restricted/DM → guild); a "
            "fact said in guild A's public channels in a row of guild B (`guild:B` or its restricted channel), "
            "for a move, job, pet or trip (cross-guild; a favourite game or band said in public may be promoted to "
            "global and follow its user, so it is never counted); anything else a row's readers may not read "
            "(other). Missed facts are traced back: not extracted (no `memory_facts` row of the user has the "
            "keywords), extracted but no longer active, extracted but not in the scope's `memory_profiles` row, in "
            "the profile but the context row is missing, stale or lacks it. LLM calls are the requests the fake "
            "Gemini server answered (a partition-day whose text already fits its summary length is kept without a "
            "model call, as `LLMSummarizer` does)."]
    return out
