"""Long-term memory as markdown files, the layout people keep memory in (`mempipe memory-files`):

    DIR/<user_id>/MEMORY.md                 the stored profile of (scope, user)
    DIR/<user_id>/journal/YYYY-MM-DD.md     the user's daily summaries the scope may read, one file
                                            per day, one `## <partition>` section per partition

One directory per scope: what a file holds is what that scope may read (the audience rule of
contexts, ARCHITECTURE.md "scope": the partitions `MergeInputs.source_partitions` returns for the
user). Rebuilt idempotently from the database: a file whose content is unchanged is not rewritten
(its mtime is kept); a changed one is written to a temporary file in its directory and moved into
place (os.replace), so a reader never sees half a file; a journal file whose day has no summary
any more, and a MEMORY.md whose profile is gone, are removed. Nothing else under DIR is touched:
only `MEMORY.md` and `journal/<date>.md` in directories named by a user id.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import stat
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

from ..calendar import Scope, parse_scope
from ..errors import IdError, MempipeError
from ..ids import parse_id
from ..store import StageStorage
from ..stages.merge_inputs import MergeInputs

PROFILE_FILE = "MEMORY.md"
JOURNAL_DIR = "journal"
_JOURNAL_NAME = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})\.md")
Progress = Callable[[int, int], None]  # (users done, users in all)


class MemoryFilesError(MempipeError):
    """The directory cannot hold the memory files (a file in the way, no permission, no space)."""


def _is_journal_name(name: str) -> bool:
    m = _JOURNAL_NAME.fullmatch(name)
    if m is None:
        return False
    try:
        dt.date.fromisoformat(m.group(1))
    except ValueError:
        return False
    return True


def _user_dirs(directory: Path) -> set[int]:
    """Users whose directory an earlier export made (named by a user id): revisited, so files of
    a user with nothing left are removed."""
    out = set()
    for entry in directory.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            with contextlib.suppress(IdError):
                if entry.name == str(parse_id(entry.name)):
                    out.add(int(entry.name))
    return out


def _ensure_dir(path: Path) -> None:
    if path.exists() and not path.is_dir():
        raise MemoryFilesError(f"{path} exists and is not a directory: give a directory (a missing one is created), "
                               f"or move {path} away")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MemoryFilesError(f"cannot create {path}: {exc.strerror or exc}; "
                               f"check the permissions of {path.parent}") from None


def _write(path: Path, content: str) -> bool:
    """Write `content` unless the file already holds exactly it. True when written."""
    data = content.encode("utf-8")
    mode = 0o600  # a new file holds what people said: readable by its owner only
    try:
        if path.is_dir():
            raise MemoryFilesError(f"{path} is a directory, where mempipe keeps a file: move it away")
        if path.exists():
            if path.read_bytes() == data:
                return False
            mode = stat.S_IMODE(path.stat().st_mode)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise MemoryFilesError(f"cannot write {path}: {exc.strerror or exc}; check the permissions and free space "
                               f"of {path.parent}") from None
    return True


def _remove(path: Path) -> bool:
    try:
        if path.is_symlink() or path.is_file():
            path.unlink()
            return True
    except OSError as exc:
        raise MemoryFilesError(f"cannot remove {path}: {exc.strerror or exc}; "
                               f"check the permissions of {path.parent}") from None
    return False


def journal_text(day: dt.date, sections: list[tuple[str, str]]) -> str:
    """One day's journal: a `## <partition>` section per partition, in the given order."""
    parts = [f"# {day.isoformat()}"]
    parts += [f"## {partition}\n\n{summary.strip()}" for partition, summary in sections]
    return "\n\n".join(parts) + "\n"


class _Dailies:
    """Daily summaries by (partition, user), read in bulk: one query per partition for every
    user (or the one user asked for), days taken from the partition's partition-days."""

    def __init__(self, store: StageStorage):
        self.store = store
        self._days: dict[str, list[dt.date]] = {}
        self._rows: dict[tuple[str, int], list[dict]] = {}
        self._read: set[tuple[str, int | None]] = set()

    def days(self, partition: str) -> list[dt.date]:
        if partition not in self._days:
            self._days[partition] = sorted(self.store.partition_days_between(partition, dt.date.min, dt.date.max))
        return self._days[partition]

    def load(self, partition: str, user_id: int | None) -> None:
        """Read the partition's summaries of `user_id` (None: of every user) unless already read."""
        if (partition, None) in self._read or (partition, user_id) in self._read:
            return
        self._read.add((partition, user_id))
        days = self.days(partition)
        rows = self.store.dailies(days, partition=partition,
                                  user_ids=None if user_id is None else [user_id]) if days else []
        for r in rows:
            self._rows.setdefault((partition, r["user_id"]), []).append(r)

    def users(self, partition: str) -> set[int]:
        return {u for (p, u) in self._rows if p == partition}

    def of(self, partition: str, user_id: int) -> list[dict]:
        self.load(partition, user_id)
        return self._rows.get((partition, user_id), [])


def _journal(dailies: _Dailies, sources: list[str], user_id: int) -> dict[dt.date, str]:
    by_day: dict[dt.date, list[tuple[str, str]]] = defaultdict(list)
    for partition in sources:  # the scope's own partition first, then the order of the audience rule
        for r in dailies.of(partition, user_id):
            if r["summary"] and r["summary"].strip():
                by_day[r["day"]].append((partition, r["summary"]))
    return {day: journal_text(day, sections) for day, sections in by_day.items()}


def _sync_user(home: Path, profile: str | None, journal: dict[dt.date, str], counts: dict[str, int]) -> None:
    """Bring one user's directory to `profile` (None: no MEMORY.md) and `journal` (day -> text)."""
    memory_file = home / PROFILE_FILE
    journal_dir = home / JOURNAL_DIR
    if profile is not None or journal:
        _ensure_dir(home)
    if profile is not None:
        counts["written" if _write(memory_file, profile.rstrip("\n") + "\n") else "unchanged"] += 1
    elif home.is_dir() and _remove(memory_file):
        counts["removed"] += 1
    if journal:
        _ensure_dir(journal_dir)
    for day, text in sorted(journal.items()):
        counts["written" if _write(journal_dir / f"{day.isoformat()}.md", text) else "unchanged"] += 1
    if journal_dir.is_dir() and not journal_dir.is_symlink():
        wanted = {f"{day.isoformat()}.md" for day in journal}
        for entry in sorted(journal_dir.iterdir()):
            if _is_journal_name(entry.name) and entry.name not in wanted and _remove(entry):
                counts["removed"] += 1


def write_memory_files(store: StageStorage, directory: str | os.PathLike, scope: str | Scope,
                       user_id: Any = None, progress: Progress | None = None) -> dict[str, int]:
    """Write (or bring up to date) the memory files of `scope` under `directory`: for `user_id`,
    else for every user with a profile in the scope or a daily summary it may read. Returns the
    counts: users, written, unchanged, removed."""
    sc = parse_scope(scope) if isinstance(scope, str) else scope
    only = None if user_id is None else parse_id(user_id, "user_id")
    base = Path(directory)
    _ensure_dir(base)

    profiles = {r["user_id"]: r["profile"] for r in store.profiles(str(sc), only)}
    inputs = MergeInputs(store, [], [] if only is None else [only])  # the audience data, no user's rows
    dailies = _Dailies(store)
    # partitions the scope reads for every user; a one-to-one DM adds its member's other
    # partitions per user (source_partitions below), so a DM is found by its own rows only
    shared = [str(sc)] if sc.kind == "dm" else inputs.source_partitions(sc, 0)
    for partition in shared:
        dailies.load(partition, only)
    if only is not None:
        users = [only]
    else:
        found = set(profiles).union(*(dailies.users(p) for p in shared))
        users = sorted(found | _user_dirs(base))
    inputs.preload_user_partitions(users if sc.kind == "dm" else [])

    counts = {"users": len(users), "written": 0, "unchanged": 0, "removed": 0}
    for done, uid in enumerate(users, 1):
        journal = _journal(dailies, inputs.source_partitions(sc, uid), uid)
        _sync_user(base / str(uid), profiles.get(uid), journal, counts)
        if progress is not None:
            progress(done, len(users))
    return counts
