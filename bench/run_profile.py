"""Where a nightly run of a bench corpus spends its time: `python -m bench.run_profile DIR --run
cold|unchanged|steady [--db URL]` (issue 14).

DIR is a corpus directory that `python -m bench --size S --only overhead --work W` leaves behind
(W/S-SEED/: corpus.jsonl and its .meta.json, plus corpus-before.jsonl and corpus-last-day.jsonl).
The jobs are bench/nightly.py's, in this process, on a fresh SQLite file (or an empty database
at --db): "cold" profiles the replay of every day after the import; "unchanged" replays once
untimed, then profiles the same replay again; "steady" imports days 1..N-1, replays them, imports
day N and profiles the run as of it. Prints the wall time and the cProfile top functions.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import tempfile
import time
from pathlib import Path

from .merge_scale import _profiled
from .nightly import UTC, _execute, _open, _settings


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.run_profile", description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus_dir", type=Path, help="a bench corpus directory (see above)")
    parser.add_argument("--run", choices=("cold", "unchanged", "steady"), default="unchanged",
                        help="which run to profile")
    parser.add_argument("--db", help="an empty database URL (default: a SQLite file in a temporary directory)")
    args = parser.parse_args()
    from pipeline.ingest import import_files

    meta = json.loads((args.corpus_dir / "corpus.meta.json").read_text())
    first = dt.date.fromisoformat(meta["spec"]["first_day"])
    last = first + dt.timedelta(days=meta["spec"]["days"] - 1)
    settings = _settings({"timezones": meta["timezones"]})
    with tempfile.TemporaryDirectory(prefix="run-profile-") as tmp:
        store = _open(args.db or f"sqlite:///{tmp}/profile.db", settings)
        at = dt.datetime.combine(last + dt.timedelta(days=1), dt.time(12), tzinfo=UTC)
        if args.run == "steady":
            before = last - dt.timedelta(days=1)
            import_files(store, [str(args.corpus_dir / "corpus-before.jsonl")], settings, fmt="jsonl")
            asyncio.run(_execute(store, settings, "replay", first, before, at - dt.timedelta(days=1)))
            import_files(store, [str(args.corpus_dir / "corpus-last-day.jsonl")], settings, fmt="jsonl")
            job = (store, settings, "run", None, last, at)
        else:
            import_files(store, [str(args.corpus_dir / "corpus.jsonl")], settings, fmt="jsonl")
            if args.run == "unchanged":
                asyncio.run(_execute(store, settings, "replay", first, last, at))
            job = (store, settings, "replay", first, last, at)
        t0 = time.perf_counter()
        _out, text = _profiled(lambda: asyncio.run(_execute(*job)))
        print(f"{args.run} run: {time.perf_counter() - t0:.2f} s under cProfile\n{text}")
        store.close()


if __name__ == "__main__":
    main()
