"""Database access: engine, column types, table definitions and the migration runner."""

from .engine import make_engine
from .migrations import upgrade, applied_versions, pending_migrations

__all__ = ["make_engine", "upgrade", "applied_versions", "pending_migrations"]
