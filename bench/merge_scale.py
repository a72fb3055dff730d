"""Heavy users at scale, without the 1M-message corpus: how a nightly run's cost per context grows
with the facts a user has (issue 14).

`python -m bench.merge_scale [--days 4 8 16] [--users 30] [--channels 20] [--profile steady]`

A synthetic guild (UTC) where each heavy user writes, every day, once in the public channels
(partition guild:G), once in each of `--channels` restricted channels (one partition each) and
once in a one-to-one DM with the bot: `channels + 2` scopes per user. The instant summarizer
(bench/instant.py) proposes one fact per speaker per partition-day (distinct words each time), so
after `days` days a user holds about `days * (channels + 2)` facts: their DM scope reads them all,
a restricted channel's scope its own and the guild's. A few light users (one message a day in
the public channels) give the guild ordinary members too.

For each `--days`, the jobs of bench/nightly.py on a fresh SQLite file: a cold replay of days
1..N (stage split), the same replay again (unchanged), and a steady nightly run (day N+1 imported,
then `run` as of it). The table's "µs/context" is the merge stage's time per context written;
at a constant number of contexts, its growth with facts per user is the per-context waste.
`--profile cold|unchanged|steady` adds a cProfile of that run (the largest --days), top
functions by self and cumulative time. Each row also has digests of every derived table and
the facts after the cold replay and after the steady run: equal digests on two commits mean the
same outputs, byte for byte. Everything runs in this process; numbers are
comparable only between runs on the same machine (compare two commits with the same command).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import datetime as dt
import hashlib
import io
import json
import pstats
import random
import tempfile
import time
from collections import Counter
from pathlib import Path

from .nightly import UTC, _execute, _open, _settings, _timed

GUILD, USER_BASE, CHANNEL_BASE, DM_BASE = 1150000000000077000, 1160000000000077000, 1170000000000077000, \
    1170000000000078000
FIRST_DAY = dt.date(2026, 11, 1)
SYLLABLES = ("ka", "ri", "to", "mo", "ne", "sa", "lu", "vi", "den", "tor", "mi", "ra", "zo", "el", "an",
             "bo", "qui", "sha", "ty", "lex", "ar", "io", "fen", "gra", "pi", "ul", "ver", "ny")


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))


def messages(day: dt.date, *, users: int, light: int, channels: int, seed: int) -> list[dict]:
    """One day's messages: each heavy user once per partition (distinct words: each makes a fact)."""
    rng = random.Random(f"{seed}:{day.isoformat()}")
    out = []
    seq = 0

    def add(channel: int, visibility: str, user: int, hour: int, **extra) -> None:
        nonlocal seq
        seq += 1
        ts = dt.datetime.combine(day, dt.time(hour, seq % 60, seq // 60 % 60), UTC)
        out.append({"message_id": str((int(ts.timestamp()) << 22) | seq), "guild_id": str(GUILD) if visibility != "dm"
                    else None, "channel_id": str(channel), "visibility": visibility, "user_id": str(USER_BASE + user),
                    "user_name": f"User{user}", "text": " ".join(_word(rng) for _ in range(rng.randint(6, 12))) + ".",
                    "ts": ts.isoformat(timespec="milliseconds"), **extra})

    for u in range(users):
        add(CHANNEL_BASE, "public", u, 9)
        for c in range(channels):
            add(CHANNEL_BASE + 1 + c, "restricted", u, 10 + c % 10)
        add(DM_BASE + u, "dm", u, 21, is_group=False)
    for u in range(users, users + light):
        add(CHANNEL_BASE, "public", u, 12)
    return out


def _write(path: Path, days: list[dt.date], **shape) -> None:
    with path.open("w") as f:
        for day in days:
            for row in messages(day, **shape):
                f.write(json.dumps(row) + "\n")


def _profiled(fn) -> tuple[object, str]:
    prof = cProfile.Profile()
    out = prof.runcall(fn)
    text = io.StringIO()
    stats = pstats.Stats(prof, stream=text).strip_dirs()
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(40)
    return out, text.getvalue()


def _digests(store) -> dict[str, str]:
    """What the runs made, table by table (derived tables and facts): equal digests on two
    commits mean byte-identical outputs."""
    from pipeline.db.tables import DERIVED_TABLES

    tables = {t.name: store.dump(t.name) for t in DERIVED_TABLES}
    tables["memory_facts"] = [sorted(r.items()) for r in store.memory_facts()]
    return {name: hashlib.sha256(repr(rows).encode()).hexdigest()[:16] for name, rows in tables.items()}


def measure(days: int, args, work: Path, profile: str | None) -> dict:
    from pipeline.ingest import import_files

    shape = {"users": args.users, "light": args.light, "channels": args.channels, "seed": args.seed}
    first, last = FIRST_DAY, FIRST_DAY + dt.timedelta(days=days - 1)
    before, new_day = work / f"before-{days}.jsonl", work / f"day-{days}.jsonl"
    _write(before, [first + dt.timedelta(days=i) for i in range(days)], **shape)
    _write(new_day, [last + dt.timedelta(days=1)], **shape)
    job = {"timezones": {}}
    settings = _settings(job)
    url = f"sqlite:///{work / f'scale-{days}.db'}"
    store = _open(url, settings)
    import_files(store, [str(before)], settings, fmt="jsonl")
    at = dt.datetime.combine(last + dt.timedelta(days=1), dt.time(12), tzinfo=UTC)
    texts = {}

    def timed(name, kind, a, b, clock_at):
        if profile == name:
            t0 = time.perf_counter()
            out, texts[name] = _profiled(lambda: asyncio.run(_execute(store, settings, kind, a, b, clock_at)))
            return {"wall_s": round(time.perf_counter() - t0, 3), "phases": {}, "contexts_written": out["contexts_written"]}
        return _timed(store, settings, kind, a, b, clock_at)

    cold = timed("cold", "replay", first, last, at)
    digests = {"cold": _digests(store)}
    unchanged = timed("unchanged", "replay", first, last, at)
    per_user = Counter(r["user_id"] for r in store.memory_facts(active_only=True))
    import_files(store, [str(new_day)], settings, fmt="jsonl")
    steady = timed("steady", "run", None, last + dt.timedelta(days=1), at + dt.timedelta(days=1))
    contexts = store.table_counts().get("memory_context", 0)
    digests["steady"] = _digests(store)
    store.close()
    row = {"days": days, "facts": sum(per_user.values()), "max_facts_per_user": max(per_user.values(), default=0),
           "contexts": contexts,
           "cold_s": cold["wall_s"], "cold_merge_s": cold["phases"].get("merge"),
           "cold_contexts": cold["contexts_written"], "unchanged_s": unchanged["wall_s"],
           "steady_s": steady["wall_s"], "steady_merge_s": steady["phases"].get("merge"),
           "steady_contexts": steady["contexts_written"], "digests": digests}
    for run in ("cold", "steady"):
        if row[f"{run}_merge_s"] is not None and row[f"{run}_contexts"]:
            row[f"{run}_us_per_context"] = round(1e6 * row[f"{run}_merge_s"] / row[f"{run}_contexts"])
    return row | ({"profile": texts} if texts else {})


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.merge_scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, nargs="+", default=[4, 8, 16],
                        help="corpus lengths to measure (facts per heavy user grow with them)")
    parser.add_argument("--users", type=int, default=30, help="heavy users (every partition, every day)")
    parser.add_argument("--light", type=int, default=60, help="light users (one public message a day)")
    parser.add_argument("--channels", type=int, default=20, help="restricted channels each heavy user writes in")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", choices=("cold", "unchanged", "steady"),
                        help="cProfile this run of the largest --days and print its top functions")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="merge-scale-") as tmp:
        for days in args.days:
            rows.append(measure(days, args, Path(tmp), args.profile if days == max(args.days) else None))
            print(json.dumps({k: v for k, v in rows[-1].items() if k != "profile"}), flush=True)
    print("\n| days | facts (most of one user) | contexts | cold s (merge s, µs/context) | unchanged s "
          "| steady s (merge s, µs/context) |\n|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['days']} | {r['facts']} ({r['max_facts_per_user']}) | {r['contexts']} | {r['cold_s']:.2f} "
              f"({r['cold_merge_s'] or 0:.2f}, {r.get('cold_us_per_context', '-')}) | {r['unchanged_s']:.2f} "
              f"| {r['steady_s']:.2f} ({r['steady_merge_s'] or 0:.2f}, {r.get('steady_us_per_context', '-')}) |")
    for r in rows:
        for name, text in r.get("profile", {}).items():
            print(f"\n## cProfile of the {name} run, {r['days']} days\n{text}")
    if args.json:
        args.json.write_text(json.dumps([{k: v for k, v in r.items() if k != "profile"} for r in rows], indent=1))


if __name__ == "__main__":
    main()
