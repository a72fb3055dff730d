"""The entry points every importer shares: read, validate (pipeline/ingest/model.py), write in
batches (pipeline/ingest/writer.py) — in one transaction.

A deletion row (`"deleted": true`, pipeline/ingest/deletion.py) deletes instead, in input order
relative to the other rows. Any bad row aborts the whole import: nothing is written, and the
InputError names the file (or "python") and the line or message id.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Literal, Mapping

import msgspec

from ..clock import Clock, system_clock
from ..config import Settings
from ..errors import InputError
from ..store import Store
from .discord import Skipped, read_discord
from .jsonl import read_jsonl
from .model import DeletionIn, MessageIn, RowError, Validator, parse_id
from .writer import Progress, Writer

BATCH_SIZE = 5000
Format = Literal["jsonl", "discord"]


@dataclass
class IngestReport:
    """Counts of one import. They add up: read = new + edited + unchanged + skipped + deletions.

    Per message row read: new — stored for the first time; edited — a newer edit (a later
    edited_ts) replaced the stored text, or that of a copy read earlier in this import;
    unchanged — a copy of a message already stored (or read earlier in this import) that changes
    nothing. skipped_by: rows left out, by reason (`discord.Skipped`: bot author, system message,
    empty). cut: texts longer than settings.max_message_chars, shortened (ending in "…"), not
    rejected (they are among the counts above). deletions: rows with `"deleted": true`;
    deleted: the stored messages they removed; not_found: deletion rows that matched no stored
    message."""

    read: int = 0
    new: int = 0
    edited: int = 0
    unchanged: int = 0
    skipped_by: dict[str, int] = field(default_factory=dict)
    cut: int = 0
    deletions: int = 0
    deleted: int = 0
    not_found: int = 0

    @property
    def written(self) -> int:
        """Message rows that changed the database (new + edited)."""
        return self.new + self.edited

    @property
    def skipped(self) -> int:
        return sum(self.skipped_by.values())

    def skip(self, reason: str) -> None:
        self.skipped_by[reason] = self.skipped_by.get(reason, 0) + 1

    def as_dict(self) -> dict:
        """For `mempipe import --json`: every count, `skipped` (the total) and `skipped_by`."""
        return {"read": self.read, "new": self.new, "edited": self.edited, "unchanged": self.unchanged,
                "skipped": self.skipped, "skipped_by": dict(sorted(self.skipped_by.items())), "cut": self.cut,
                "deletions": self.deletions, "deleted": self.deleted, "not_found": self.not_found}


def ingest_messages(
    store: Store,
    rows: Iterable[MessageIn | Mapping[str, Any]],
    settings: Settings,
    *,
    source: str = "python",
    progress: Progress | None = None,
    clock: Clock = system_clock,
) -> IngestReport:
    """Write messages given as MessageIn or dicts (validated into MessageIn), all in one
    transaction. A bad row raises InputError(source, "message <id>" or "row <n>", what).
    progress, clock: as for import_files."""
    report = IngestReport()
    validator = Validator()
    with store.transaction() as conn:
        writer = Writer(store, conn, settings, report, progress, clock(), BATCH_SIZE)
        for n, raw in enumerate(rows, 1):
            report.read += 1
            where = _python_where(raw, n)
            if isinstance(raw, (MessageIn, DeletionIn)):  # built in Python, so not validated yet
                raw = msgspec.structs.asdict(raw)
            writer.take(_validate(validator, raw, source, where), source, where)
        writer.finish()
    return report


def import_files(
    store: Store,
    paths: Iterable[str | os.PathLike] | str | os.PathLike,
    settings: Settings,
    *,
    fmt: Format | None = None,
    visibility: Literal["public", "restricted"] | None = None,
    include_bots: bool = False,
    progress: Progress | None = None,
    clock: Clock = system_clock,
) -> IngestReport:
    """Parse and write every file in one transaction: any error writes nothing.

    fmt: "jsonl", "discord" or None (by extension: .jsonl/.ndjson -> jsonl, .json -> discord;
    otherwise by content). visibility and include_bots apply to Discord exports only (JSONL rows
    carry their own visibility): visibility "restricted" marks guild channels restricted; DMs
    stay dm. progress(n) is called after each batch with the number of messages read since the
    previous call (a step, as click's ProgressBar.update takes it). clock() is read once: every
    message of the import gets the same ingested_at."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if fmt not in (None, "jsonl", "discord"):
        raise ValueError(f"unknown import format {fmt!r} (use jsonl or discord)")
    if visibility not in (None, "public", "restricted"):
        raise ValueError(f"visibility for a Discord export must be public or restricted, not {visibility!r}")
    plan = [(os.fspath(path), fmt or detect_format(path)) for path in paths]

    report = IngestReport()
    validator = Validator()
    with store.transaction() as conn:
        writer = Writer(store, conn, settings, report, progress, clock(), BATCH_SIZE)
        for source, kind in plan:
            rows: Iterator[tuple[str, Any]]
            if kind == "jsonl":
                rows = read_jsonl(source)
            else:
                rows = read_discord(source, visibility=visibility, include_bots=include_bots)
            with contextlib.closing(rows):
                for where, raw in rows:
                    report.read += 1
                    if type(raw) is Skipped:
                        report.skip(raw)
                        continue
                    writer.take(_validate(validator, raw, source, where), source, where)
        writer.finish()
    return report


def detect_format(path: str | os.PathLike) -> Format:
    """jsonl or discord, by extension, else by the first line of the file."""
    source = os.fspath(path)
    suffix = os.path.splitext(source)[1].lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".json":
        return "discord"
    try:
        with open(source, encoding="utf-8-sig", errors="replace") as fh:
            first = ""
            for line in fh:
                if line.strip():
                    first = line
                    break
    except OSError as exc:
        raise InputError(source, "cannot open", exc.strerror or str(exc)) from None
    try:
        head = json.loads(first)
    except ValueError:
        head = None
    if isinstance(head, dict):
        return "discord" if "messages" in head and "channel" in head else "jsonl"
    if first.strip() == "{":
        return "discord"  # a pretty-printed export
    raise InputError(source, "format", "cannot tell JSONL from a Discord export: name the file .jsonl or "
                                       ".json, or pass the format explicitly")


def _validate(validator: Validator, raw: Any, source: str, where: str) -> MessageIn | DeletionIn:
    if type(raw) is not dict and not isinstance(raw, Mapping):  # (an ABC check costs more than the row)
        raise InputError(source, where, f"expected a message (a mapping of fields), got {type(raw).__name__}")
    try:
        return validator(raw)
    except RowError as exc:
        raise InputError(source, where, str(exc)) from None


def _python_where(raw: Any, n: int) -> str:
    value = raw.message_id if isinstance(raw, (MessageIn, DeletionIn)) else (raw.get("message_id") if isinstance(raw, Mapping) else None)
    try:
        return f"message {parse_id(value)}"
    except ValueError:
        return f"row {n}"
