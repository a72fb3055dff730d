"""Ingest: chat messages in, chat_history / members / channels rows out.

- `MessageIn`: one validated message (the contract every importer produces); `validate(row)`
  makes one from a dict of the JSONL shape (plain checks, no pydantic: `model.py`).
- `ingest_messages(store, rows, settings)`: write MessageIn objects or dicts from Python.
- `import_files(store, paths, settings, fmt=...)`: JSONL files (`jsonl.py`), DiscordChatExporter
  JSON exports (`discord.py`) and Telegram Desktop JSON exports (`telegram.py`); a JSON export is
  read once and told apart by its top-level keys (`jsondoc.py`).
- `delete_messages(store, ids, settings)`: a bot's message-delete events (`deletion.py`); an
  import row `{"message_id": …, "channel_id": …, "deleted": true}` does the same in its place.

Each call is one transaction: a bad row writes nothing and raises InputError naming the file
and the line or message id. Re-importing is idempotent by (channel, message id); a newer edit
replaces the text, and a copy that changes anything else (author, time, reply) is refused.

Its names load on first use (PEP 562): an import's reader process (`python -m
pipeline.ingest.reader`) loads this package first and must not wait for the importer's database
code.
"""

import importlib

_FROM = {"delete_messages": "deletion", "parse_message_refs": "deletion", "BATCH_SIZE": "importer",
         "IngestReport": "feed", "detect_format": "importer", "import_files": "importer",
         "ingest_messages": "importer", "DeletionIn": "model", "MessageIn": "model", "RowError": "model",
         "parse_id": "model", "parse_timestamp": "model", "validate": "model"}

__all__ = sorted(_FROM)


def __getattr__(name: str):
    if name not in _FROM:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_FROM[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_FROM))
