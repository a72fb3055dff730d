"""The entry points every importer shares: read, validate (pipeline/ingest/model.py), make
batches (pipeline/ingest/batches.py), write them (pipeline/ingest/writer.py) — in one transaction.

A deletion row (`"deleted": true`, pipeline/ingest/deletion.py) deletes instead, in input order
relative to the other rows. Any bad row aborts the whole import: nothing is written, and the
InputError names the file (or "python") and the line or message id.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from typing import Any, Iterable, Iterator, Literal, Mapping

import msgspec

from ..clock import Clock, system_clock
from ..config import Settings
from ..errors import InputError
from ..gc_thresholds import fewer_collections
from ..store import Store
from . import reader
from .discord import discord_rows
from .jsondoc import export_kind, load_json
from .jsonl import read_jsonl
from .model import DeletionIn, JsonlRow, MessageIn, Validator, parse_id
from .shapes import shape_of
from .telegram import Found, TelegramOptions, telegram_rows
from .feed import IngestReport, feed, validated
from .writer import Progress, Writer

BATCH_SIZE = 5000
Format = Literal["jsonl", "discord", "telegram"]
FORMATS = ("jsonl", "discord", "telegram")
_EXPORTERS = {"discord": "a DiscordChatExporter", "telegram": "a Telegram Desktop"}


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
    with fewer_collections(), store.transaction() as conn:
        batches = Writer(store, conn, settings, report, progress, clock(), BATCH_SIZE).builder()
        for n, raw in enumerate(rows, 1):
            report.read += 1
            where = _python_where(raw, n)
            if isinstance(raw, (MessageIn, DeletionIn)):  # built in Python, so not validated yet
                raw = msgspec.structs.asdict(raw)
            batches.take(validated(validator, raw, source, where), source, where)
        batches.finish()
    return report


def import_files(
    store: Store,
    paths: Iterable[str | os.PathLike] | str | os.PathLike,
    settings: Settings,
    *,
    fmt: Format | None = None,
    visibility: Literal["public", "restricted"] | None = None,
    include_bots: bool = False,
    bot_user_ids: Collection[int] = (),
    restricted_chats: Collection[int] = (),
    include_channels: bool = False,
    progress: Progress | None = None,
    clock: Clock = system_clock,
) -> IngestReport:
    """Parse and write every file in one transaction: any error writes nothing.

    fmt: "jsonl", "discord", "telegram" or None (by extension and content: .jsonl/.ndjson ->
    jsonl; .json -> a DiscordChatExporter or Telegram Desktop export, told apart by its top-level
    keys). The other options apply to exports only (JSONL rows carry their own visibility):
    visibility "restricted" marks Discord guild channels and Telegram groups and channels
    restricted (DMs stay dm); include_bots keeps messages by bot accounts (Discord's, the bot of
    a Telegram bot_chat). Telegram only: bot_user_ids, the bot's own account(s): their messages
    are skipped; restricted_chats, chats marked restricted; include_channels, channels and posts
    sent as a channel are imported (pipeline/ingest/telegram.py). progress(n) is called after
    each batch with the number of messages read since the previous call (a step, as click's
    ProgressBar.update takes it). clock() is read once: every message of the import gets the
    same ingested_at."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if fmt not in (None, *FORMATS):
        raise ValueError(f"unknown import format {fmt!r} (use {', '.join(FORMATS)})")
    if visibility not in (None, "public", "restricted"):
        raise ValueError(f"visibility for an export must be public or restricted, not {visibility!r}")
    telegram = TelegramOptions(visibility, frozenset(restricted_chats), frozenset(bot_user_ids), include_bots,
                               include_channels)
    plan = [(os.fspath(path), fmt or _sniff(path)) for path in paths]

    report = IngestReport()
    validator = Validator()
    found = Found()  # what the Telegram exports held, checked against the options once all are read
    with fewer_collections(), store.transaction() as conn:
        writer = Writer(store, conn, settings, report, progress, clock(), BATCH_SIZE)
        if reader.wanted(plan):  # a large JSONL import: read and build in a second process
            spec = reader.Spec([source for source, _kind in plan], settings.max_message_chars, writer.now,
                               BATCH_SIZE, writer.text_times)
            reader.read(spec, writer.apply, report, lambda: report.warnings.extend(found.check(telegram)))
            return report
        batches = writer.builder()
        doc: Any = None
        for source, kind in plan:
            rows: Iterator[tuple[str, Any]] | None
            if kind == "jsonl":
                rows = read_jsonl(source, JsonlRow)
            else:  # a JSON export, read once
                doc = _load_export(source, shape_of(source))
                kind = _export_kind(doc, source, None if kind == "json" else kind)
                if kind == "telegram":
                    rows = telegram_rows(doc, source, telegram, found)
                else:
                    rows = discord_rows(doc, source, visibility=visibility, include_bots=include_bots,
                                        parent_public=lambda parent: _is_public(store, conn, batches, parent))
            feed(batches, validator, report, rows, source)
            doc = rows = None  # this file's document goes before the next one is read, not after
        report.warnings += found.check(telegram)  # an unmatched --restricted-chat: InputError, nothing written
        batches.finish()
    return report


def _is_public(store: Store, conn, batches, channel_id: int) -> bool:
    """A channel public as this import has it so far, or as stored (a thread's parent)."""
    seen = batches.audience.get(channel_id)
    if seen is not None:
        return seen[0] == "public"
    stored = store.stored_channels(conn, [channel_id]).get(channel_id)
    return stored is not None and stored["visibility"] == "public"


def detect_format(path: str | os.PathLike) -> Format:
    """jsonl, discord or telegram: by extension, else by the first line of the file; a JSON
    export by its top-level keys (the whole file is read)."""
    kind = _sniff(path)
    if kind != "json":
        return kind
    source = os.fspath(path)
    return _export_kind(_load_export(source, shape_of(source)), source, None)


def _load_export(source: str, shape: Any = None) -> Any:
    """load_json, its error saying so when the file is JSONL under a .json name (a common naming)."""
    try:
        return load_json(source, shape)
    except InputError as exc:
        if not exc.what.startswith("invalid JSON: Extra data") or not _first_line_is_object(source):
            raise
        raise InputError(source, exc.where, f"{exc.what}: this file holds one JSON object per line (JSONL), not "
                                            "an export: pass --format jsonl, or name it .jsonl") from None


def _first_line_is_object(source: str) -> bool:
    with open(source, encoding="utf-8-sig", errors="replace") as fh:
        first = next((line for line in fh if line.strip()), "")
    try:
        return isinstance(json.loads(first), dict)
    except ValueError:
        return False


def _sniff(path: str | os.PathLike) -> Literal["jsonl", "json"]:
    """jsonl, or json (an export, to be told apart once read): by extension, else by the first line."""
    source = os.fspath(path)
    suffix = os.path.splitext(source)[1].lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".json":
        return "json"
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
    if isinstance(head, dict):  # a JSONL row, or a whole export on one line
        return "json" if "messages" in head or "chats" in head or "left_chats" in head else "jsonl"
    if first.strip() == "{":
        return "json"  # a pretty-printed export
    raise InputError(source, "format", "cannot tell JSONL from a JSON export (DiscordChatExporter or Telegram "
                                       "Desktop): name the file .jsonl or .json, or pass the format explicitly")


def _export_kind(doc: Any, source: str, asked: str | None) -> str:
    """The export's kind; InputError when it is neither exporter's, or not the one asked for."""
    kind = export_kind(doc)
    if asked is None and kind is None:
        raise InputError(source, "top level", "not a DiscordChatExporter or Telegram Desktop JSON export (expected "
                                              "guild, channel and messages, or a Telegram chat's messages or "
                                              "chats.list): export it again as JSON, or pass the format explicitly")
    if asked is not None and kind is not None and kind != asked:
        raise InputError(source, "top level", f"{_EXPORTERS[kind]} export, not {_EXPORTERS[asked]} one: pass "
                                              f"--format {kind} (or leave --format out)")
    return asked or kind


def _python_where(raw: Any, n: int) -> str:
    value = raw.message_id if isinstance(raw, (MessageIn, DeletionIn)) else (raw.get("message_id") if isinstance(raw, Mapping) else None)
    try:
        return f"message {parse_id(value)}"
    except ValueError:
        return f"row {n}"
