"""JSONL import: one message per line.

Keys: message_id, guild_id (null for DM), channel_id, visibility (public|restricted|dm), user_id,
user_name, text, ts (ISO-8601 with offset), and optionally reply_to (a message of the same
channel), edited_ts, is_group (DMs: true a group, false one-to-one; absent, treated as a group),
channel_name. A row `{"message_id": …, "channel_id": …, "deleted": true}` (channel optional)
deletes instead, in its place in the file (pipeline/ingest/deletion.py). Blank lines are ignored.
Rows are validated later, as MessageIn or DeletionIn.

A line is parsed by msgspec (several times faster than json); a line it refuses — a blank one,
the byte-order mark, bad UTF-8 or JSON, a lone surrogate escape — is read again the slow way,
so every error and every accepted oddity is the json module's, named by its line. The importer
asks for typed rows (model.JsonlRow): a line is decoded straight into one, checked in the same
pass, with no dict built; a line that is not one (a deletion, an id given as a float, a missing
field) is decoded as a dict, for the validator to name its problems.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Iterator

import msgspec

from ..errors import InputError
from .model import kind_of


def read_jsonl(path: str | os.PathLike, typed: type | None = None) -> Iterator[tuple[str, Any]]:
    """Yield ("line N", row) for every non-blank line; InputError on unreadable or non-object lines.
    With `typed` (a msgspec Struct: model.JsonlRow), a line that decodes as one is yielded as it,
    any other as a dict: the typed decode checks in one pass what a dict would be checked for."""
    source = os.fspath(path)
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise InputError(source, "cannot open", exc.strerror or str(exc)) from None
    decode = msgspec.json.Decoder().decode
    if typed is not None:
        decode = _typed_or_dict(msgspec.json.Decoder(typed).decode, decode)
    with fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                row = decode(raw)
            except (msgspec.DecodeError, UnicodeDecodeError):
                row = _slow(raw, lineno, source)
                if row is None:
                    continue
            if type(row) is not dict and type(row) is not typed:
                raise InputError(source, f"line {lineno}", f"expected a JSON object (one message), got {kind_of(row)}")
            yield f"line {lineno}", row


def _typed_or_dict(typed: Callable[[bytes], Any], plain: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    """A decoder giving the typed struct, or the dict when the line is JSON but not that struct."""
    def decode(raw: bytes) -> Any:
        try:
            return typed(raw)
        except msgspec.DecodeError:  # (a ValidationError too): not the struct, or not JSON
            return plain(raw)
    return decode


def _slow(raw: bytes, lineno: int, source: str) -> Any:
    """A line msgspec refused, as the json module reads it: None when blank, InputError when bad."""
    where = f"line {lineno}"
    # Each line decoded on its own: a text stream decodes ahead in blocks, so bad UTF-8 on line 4
    # would be reported on line 1. Line ends: \n, \r\n (\r stripped below).
    try:
        line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(source, where, f"not UTF-8 text ({exc.reason} at byte {exc.start + 1})") from None
    if not line.strip():
        return None
    try:
        return json.loads(line.rstrip("\r\n"))
    except json.JSONDecodeError as exc:
        hint = ""
        if "\r" in line.rstrip("\r\n"):  # JSON has no raw CR but as whitespace: lines joined by lone CRs
            hint = ("; the file's lines end with a lone CR (classic Mac line ends), so several messages read as "
                    "one line: JSONL lines end with LF (or CR LF) — convert it first, e.g. tr '\\r' '\\n' < FILE > FIXED")
        raise InputError(source, where, f"invalid JSON: {exc.msg} (column {exc.colno}){hint}") from None
