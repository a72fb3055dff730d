"""The search section's measurements on one loaded database: planted questions (rank of the
fact asked about, in `pipeline.read.search` and in the engine's bare ranking), probe asks that must
not see it, every hit checked against who may read it, and latency side by side with the bare
full-text query of the same terms."""

from __future__ import annotations

import collections
import time

from pipeline.read import search
from pipeline.search import fts5_match, pg_tsquery, query_terms

from .search_corpus import SearchCorpus
from .search_fill import Loader

K = 5
RAW_SQL = {
    "sqlite": "SELECT rowid FROM memory_items_fts WHERE memory_items_fts MATCH ? "
              "ORDER BY bm25(memory_items_fts, 0.0, 1.0) LIMIT 5",
    "postgresql": "SELECT id FROM memory_items WHERE user_id = %s AND terms @@ to_tsquery('english', %s) "
                  "ORDER BY ts_rank_cd(terms, to_tsquery('english', %s)) DESC LIMIT 5",
}
MATCHES_SQL = {  # does the item hold any of the terms, as the engine stems them?
    "sqlite": "SELECT COUNT(*) FROM memory_items_fts WHERE memory_items_fts MATCH ? AND rowid = ?",
    "postgresql": "SELECT COUNT(*) FROM memory_items WHERE terms @@ to_tsquery('english', %s) AND id = %s",
}


class Raw:
    """The bare full-text query of a question's terms, on the loader's raw connection."""

    def __init__(self, loader: Loader):
        self.db, self.cur = loader.db, loader.conn.cursor()
        self.sql = RAW_SQL[loader.db]

    def args(self, user_id: int, terms: list[str]) -> tuple:
        if self.db == "sqlite":
            return (fts5_match(user_id, terms),)
        q = pg_tsquery(terms)
        return (user_id, q, q)

    def top(self, args: tuple) -> list[int]:
        self.cur.execute(self.sql, args)
        return [r[0] for r in self.cur.fetchall()]


class Checker:
    """Is a hit something the asker may read in the scope: one of the asker's own items, in a
    partition the scope is built from (or a global fact of the asker)?"""

    def __init__(self, corpus: SearchCorpus, loader: Loader):
        self.corpus, self.loader = corpus, loader
        self.leaks: list[dict] = []

    def own(self, hit, user_id: int) -> bool:
        if hit.fact_id is not None:
            return self.corpus.fact_owner.get(hit.fact_id) == user_id
        return bool(self.loader.scalar("SELECT COUNT(*) FROM memory_items WHERE user_id = ? AND partition = ? "
                                       "AND kind = ? AND day = ? AND body = ?", user_id, hit.partition, hit.kind,
                                       str(hit.day), hit.text))

    def check(self, hits, scope: str, user_id: int, what: str) -> int:
        n = 0
        readable = self.corpus.readable(scope, user_id)
        for h in hits:
            own = self.own(h, user_id)
            if own and (h.partition in readable or (h.kind == "fact" and h.level == "global")):
                continue
            n += 1
            if len(self.leaks) < 20:
                self.leaks.append({"ask": what, "scope": scope, "user_id": user_id, "kind": h.kind,
                                   "partition": h.partition, "level": h.level, "own": own, "text": h.text[:80]})
        return n


def quality(corpus: SearchCorpus, store, loader: Loader) -> dict:
    raw, checker = Raw(loader), Checker(corpus, loader)
    item_of = dict(loader.all("SELECT fact_id, id FROM memory_items WHERE fact_id IS NOT NULL"))
    rows, probes = [], collections.Counter()
    for q in corpus.questions:
        hits = search(q["scope"], q["user_id"], q["question"], limit=K, store=store)
        rank = next((i for i, h in enumerate(hits, 1) if h.fact_id == q["fact_id"]), None)
        leaks = checker.check(hits, q["scope"], q["user_id"], "question")
        terms = query_terms(q["question"])
        item = item_of[q["fact_id"]]
        raw_rank = matched = None
        if terms:
            ids = raw.top(raw.args(q["user_id"], terms))
            raw_rank = ids.index(item) + 1 if item in ids else None
            m = (fts5_match(q["user_id"], terms) if loader.db == "sqlite" else pg_tsquery(terms), item)
            matched = bool(loader.scalar(MATCHES_SQL[loader.db].replace("%s", "?"), *m))
        rows.append({"id": q["id"], "class": q["class"], "where": q["where"], "rank": rank, "raw_rank": raw_rank,
                     "terms": len(terms), "matched": bool(matched), "leaks": leaks,
                     "above": [h.kind for h in hits[:(rank or K + 1) - 1]]})
        for p in q["probes"]:
            phits = search(p["scope"], p["user_id"], q["question"], limit=K, store=store)
            probes[f"{p['what']}:asks"] += 1
            probes[f"{p['what']}:hits"] += len(phits)
            probes[f"{p['what']}:leaks"] += checker.check(phits, p["scope"], p["user_id"], p["what"])
            probes[f"{p['what']}:planted_seen"] += any(h.fact_id == q["fact_id"] for h in phits)
    out = {"overall": _scores(rows), "by_class": {}, "by_where": {}}
    for key, field in (("by_class", "class"), ("by_where", "where")):
        for v in sorted({r[field] for r in rows}):
            out[key][v] = _scores([r for r in rows if r[field] == v])
    kinds = sorted({p.split(":")[0] for p in probes})
    out["probes"] = {k: {m: probes[f"{k}:{m}"] for m in ("asks", "hits", "leaks", "planted_seen")} for k in kinds}
    out["leaks"] = {"in_questions": sum(r["leaks"] for r in rows),
                    "in_probes": sum(v["leaks"] for v in out["probes"].values())}
    out["leaks"]["total"] = out["leaks"]["in_questions"] + out["leaks"]["in_probes"]
    out["leak_examples"] = checker.leaks
    out["missed"] = _misses(rows)
    return out


def _scores(rows: list[dict]) -> dict:
    n = len(rows)
    found = sum(r["rank"] is not None for r in rows)
    raw_found = sum(r["raw_rank"] is not None for r in rows)
    return {"questions": n, "found": found, "recall": round(found / n, 3) if n else None,
            "mrr": round(sum(1 / r["rank"] for r in rows if r["rank"]) / n, 3) if n else None,
            "raw_found": raw_found, "raw_recall": round(raw_found / n, 3) if n else None,
            "raw_mrr": round(sum(1 / r["raw_rank"] for r in rows if r["raw_rank"]) / n, 3) if n else None,
            "matchable": sum(r["matched"] for r in rows),
            "found_matchable": sum(r["matched"] and r["rank"] is not None for r in rows)}


def _misses(rows: list[dict]) -> dict:
    """Why the missed questions were missed, per class: no term left in the question, no word of
    the question is a word of the fact (as the engine stems them: lexical search cannot reach
    it), or the fact matched but ranked below K (and the kinds of the K hits above it)."""
    out: dict = {}
    for r in rows:
        if r["rank"] is not None:
            continue
        why = "no term" if not r["terms"] else ("no shared word" if not r["matched"] else "outranked")
        entry = out.setdefault(r["class"], {"no term": 0, "no shared word": 0, "outranked": 0, "above": {}})
        entry[why] += 1
        if why == "outranked":
            for k in r["above"]:
                entry["above"][k] = entry["above"].get(k, 0) + 1
    return out


def _pct(values: list[int], p: float) -> float:
    values = sorted(values)
    return round(values[min(len(values) - 1, int(p * len(values)))] / 1e6, 3)  # ns -> ms


def latency(corpus: SearchCorpus, store, loader: Loader, warmup: int) -> dict:
    """search() and the bare query of the same terms for each lookup, alternating which goes first."""
    raw = Raw(loader)
    sample = [(s, u, q, t) for s, u, q in corpus.lookups if (t := query_terms(q))]
    prepared = [(s, u, q, raw.args(u, t)) for s, u, q, t in sample]
    for s, u, q, a in prepared[:warmup]:
        search(s, u, q, limit=K, store=store)
        raw.top(a)
    ours, theirs, sizes = [], [], []
    clock = time.perf_counter_ns
    for i, (s, u, q, a) in enumerate(prepared):
        for which in ((0, 1) if i % 2 else (1, 0)):
            t0 = clock()
            if which == 0:
                hits = search(s, u, q, limit=K, store=store)
                ours.append(clock() - t0)
                sizes.append(len(hits))
            else:
                raw.top(a)
                theirs.append(clock() - t0)
    out = {"lookups": len(prepared), "without_terms": len(corpus.lookups) - len(sample),
           "search": {"p50_ms": _pct(ours, 0.5), "p99_ms": _pct(ours, 0.99), "max_ms": _pct(ours, 1.0)},
           "raw": {"p50_ms": _pct(theirs, 0.5), "p99_ms": _pct(theirs, 0.99), "max_ms": _pct(theirs, 1.0)},
           "mean_hits": round(sum(sizes) / len(sizes), 2) if sizes else 0}
    out["ratio_p50"] = round(out["raw"]["p50_ms"] / out["search"]["p50_ms"], 3)
    out["ratio_p99"] = round(out["raw"]["p99_ms"] / out["search"]["p99_ms"], 3)
    return out
