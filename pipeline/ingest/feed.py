"""What the importer's process and an import's reader process (pipeline/ingest/reader.py) both
run: the rows of an input counted, validated (pipeline/ingest/model.py) and handed to the batch
builder (pipeline/ingest/batches.py), and the counts they keep. No database code is loaded here:
a reader process starts without SQLAlchemy or the settings (0.5 s of imports it would wait for)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from ..errors import InputError
from .batches import BatchBuilder
from .model import DeletionIn, JsonlRow, MessageIn, RowError, Skipped, Validator


@dataclass
class IngestReport:
    """Counts of one import. They add up: read = new + edited + unchanged + skipped + deletions.

    Per message row read: new — stored for the first time; edited — a newer edit (a later
    edited_ts) replaced the stored text, or that of a copy read earlier in this import;
    unchanged — a copy of a message already stored (or read earlier in this import) that changes
    nothing. skipped_by: rows left out, by reason (`model.Skipped`: Discord's bot author and
    system message, Telegram's service message, forwarded, bot's own message, …, and empty).
    cut: texts longer than settings.max_message_chars, shortened (ending in "…"), not rejected
    (they are among the counts above). deletions: rows with `"deleted": true`;
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
    warnings: list[str] = field(default_factory=list)  # e.g. a --bot-user-id in no chat of the import

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
                "deletions": self.deletions, "deleted": self.deleted, "not_found": self.not_found} \
            | ({"warnings": list(self.warnings)} if self.warnings else {})


def feed(batches: BatchBuilder, validator: Validator, report: IngestReport, rows: Iterator[tuple[str, Any]],
         source: str) -> None:
    """An importer's rows ((where, row or Skipped reason)), counted, validated and handed to the
    batch builder in order; the rows' iterator is closed in the end. The reader process
    (pipeline/ingest/reader.py) runs the same."""
    with contextlib.closing(rows):
        for where, raw in rows:
            report.read += 1
            if type(raw) is Skipped:
                report.skip(raw)
                continue
            batches.take(validated(validator, raw, source, where), source, where)


def validated(validator: Validator, raw: Any, source: str, where: str) -> MessageIn | DeletionIn:
    """One row (a decoded JSONL line, or a mapping from an export or from Python) as MessageIn or
    DeletionIn; InputError naming `where` when it is not one."""
    if type(raw) is JsonlRow:
        try:
            return validator.typed(raw)
        except RowError as exc:
            raise InputError(source, where, str(exc)) from None
    if type(raw) is not dict and not isinstance(raw, Mapping):  # (an ABC check costs more than the row)
        raise InputError(source, where, f"expected a message (a mapping of fields), got {type(raw).__name__}")
    try:
        return validator(raw)
    except RowError as exc:
        raise InputError(source, where, str(exc)) from None
