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
"""

from .deletion import delete_messages, parse_message_refs
from .importer import BATCH_SIZE, IngestReport, detect_format, import_files, ingest_messages
from .model import DeletionIn, MessageIn, RowError, parse_id, parse_timestamp, validate

__all__ = [
    "BATCH_SIZE",
    "DeletionIn",
    "IngestReport",
    "MessageIn",
    "RowError",
    "delete_messages",
    "detect_format",
    "import_files",
    "ingest_messages",
    "parse_id",
    "parse_message_refs",
    "parse_timestamp",
    "validate",
]
