"""The nightly runs that sections 2 (calls) and 3 (overhead) read, made once per bench run."""

from __future__ import annotations

import contextlib
import json
import os

from .. import expected
from ..env import ROOT, Env, log, ordinal
from ..nightly import run_child

WALL_TARGET_S = 60.0
PEAK_TARGET_MB = 2048.0


def corpus_activity(env: Env) -> expected.Activity:
    """Who spoke where and when, from the corpus; also splits it into days 1..N-1 and day N."""
    if "activity" in env.cache:
        return env.cache["activity"]
    log("reading the corpus for the expected counts")
    last = env.days[-1]
    zones: dict = {}
    tzs = env.timezones
    before, day = env.work / "corpus-before.jsonl", env.work / "corpus-last-day.jsonl"
    cut = env.plan["profile_slice"]

    def rows():
        for line in src:
            row = json.loads(line)
            (fd if expected.local_day_of(row, tzs, zones) == last else fb).write(line)
            if cut and expected.in_slice(row, *cut):
                fp.write(line)
            yield row

    with contextlib.ExitStack() as files:
        src = files.enter_context(env.corpus_path.open(encoding="utf-8"))
        fb, fd = files.enter_context(before.open("w")), files.enter_context(day.open("w"))
        fp = files.enter_context(_profile_corpus(env).open("w")) if cut else None
        act = expected.activity(rows(), tzs)
    env.cache["activity"] = act
    return act


def _profile_corpus(env: Env):
    """What a profiling pass replays: the corpus, or the slice env.PLANS names (large)."""
    cut = env.plan["profile_slice"]
    return env.work / f"corpus-slice{cut[0]}-{cut[1]}.jsonl" if cut else env.corpus_path


def profile_label(env: Env) -> str:
    cut = env.plan["profile_slice"]
    if not cut:
        return "the whole corpus"
    return f"every {ordinal(cut[0])} guild from the {ordinal(cut[1] + 1)} and every {ordinal(cut[0])} DM of the corpus"


def results(env: Env) -> dict:
    if "nightly" in env.cache:
        return env.cache["nightly"]
    corpus_activity(env)
    first, last = env.days[0], env.days[-1]
    base = {"first": first.isoformat(), "last": last.isoformat(), "timezones": env.meta["timezones"],
            "corpus": str(env.corpus_path), "before": str(env.work / "corpus-before.jsonl"),
            "day": str(env.work / "corpus-last-day.jsonl")}
    out: dict = {}
    for db in env.databases() if env.plan["nightly_pg"] else ["sqlite"]:
        log(f"nightly runs on {db}")
        with env.database(db, "nightly") as url:
            replay = run_child(base | {"kind": "replay", "db": db, "url": url}, ROOT)
        with env.database(db, "steady") as url:
            steady = run_child(base | {"kind": "steady", "db": db, "url": url}, ROOT)
        out[db] = {"import_s": replay["import_s"], "cold": replay["cold"], "unchanged": replay["unchanged"],
                   "steady": steady}
        # a cheap summarizer's run batches its writes on both databases (runs take turns: no claims)
        with env.database(db, "nightly-cheap") as url:
            out[db]["cold_cheap"] = run_child(base | {"kind": "replay", "db": db, "url": url, "cheap": True,
                                                      "cold_only": True}, ROOT)["cold"]
        # and its stages shared out to one process per CPU (`processes`, pipeline/stages/processes.py)
        if (cpus := os.cpu_count() or 1) > 1:
            with env.database(db, "nightly-spread") as url:
                out[db]["cold_spread"] = run_child(base | {"kind": "replay", "db": db, "url": url, "cheap": True,
                                                           "processes": cpus, "cold_only": True}, ROOT)["cold"]
                out[db]["cold_spread"]["processes"] = cpus
        cold = replay["cold"]
        # the targets are for the large corpus: a small run (CI) does not spend minutes profiling a miss
        missed = cold["wall_s"] >= WALL_TARGET_S or cold["peak_rss_mb"] >= PEAK_TARGET_MB
        if missed and env.plan["nightly_profile"]:
            log(f"nightly {db}: overhead target missed, profiling a second cold replay")
            with env.database(db, "nightly-profile") as url:
                out[db]["profile"] = run_child(base | {"kind": "replay", "db": db, "url": url, "profile": True,
                                                       "corpus": str(_profile_corpus(env))}, ROOT)["profile"]
    env.cache["nightly"] = out
    return out


def pg_note(env: Env) -> str | None:
    """Why these runs have no PostgreSQL row, if they have none."""
    if env.pg_reason:
        return f"PostgreSQL: not reachable ({env.pg_reason})."
    if not env.plan["nightly_pg"]:
        return ("PostgreSQL: measured in the large benchmark only (`--size large`), to keep this run CI-sized; "
                "see its results below.")
    return None
