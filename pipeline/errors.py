"""Our exceptions. Each says what went wrong and, where it can, what to do about it."""


class MempipeError(Exception):
    """Base class: the CLI prints these as `Error: ...` and exits 1."""


class ConfigError(MempipeError):
    pass


class StoreError(MempipeError):
    """The database failed. Never swallowed: an outage must not look like "no data"."""


class SchemaError(StoreError):
    """The database has no mempipe schema, or an older one: `mempipe db upgrade` fixes it."""


class NoDatabaseError(StoreError):
    """The database is not there: no SQLite file at the path (a relative one resolved against the
    working directory), or no such PostgreSQL database. Nothing is created by the attempt; the
    message names what was tried and how to point at the right one or create it."""


class InputError(MempipeError):
    """Bad import input. Names the file and the line or message id."""

    def __init__(self, source: str, where: str, what: str):
        self.source, self.where, self.what = source, where, what
        super().__init__(f"{source}: {where}: {what}")


class IdError(MempipeError, ValueError):
    """An id that is not a 64-bit platform id (pipeline/ids.py), or a malformed scope: the one
    error for a bad id wherever ids come in (scopes, get_context, the CLI). An import reports it
    as an InputError naming the line."""


class ScopeError(IdError):
    """A malformed scope: not guild:<id>, channel:<id> or dm:<id>, or its id out of range."""


class SearchError(MempipeError, ValueError):
    """A search request that cannot be run as asked (pipeline.read `search` / `get_context` with a
    query): a query that is not text, a limit or token budget out of range. Raised before the
    database is asked; an outage is a StoreError, never this and never "no hits"."""


class SummarizerError(MempipeError):
    pass


class ErasedDuringRun(MempipeError):
    """A user was erased after this run (or worker job) began reading: what it made since may hold
    their data, so it writes nothing more (the next run makes it again, without them)."""


class RemovedDuringRun(ErasedDuringRun):
    """A forget or clear was recorded after this run began reading: what it made since may
    hold what that removed, so it writes nothing more (the next run makes it again)."""
