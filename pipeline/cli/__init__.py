"""The `mempipe` command (see main.py). Importing the topic modules registers their commands."""

from . import batches, data, memory, messages, search, service, users, worker  # noqa: F401  (they add their commands to `cli`)
from .main import cli, main

__all__ = ["cli", "main"]
