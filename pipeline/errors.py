"""Our exceptions. Each says what went wrong and, where it can, what to do about it."""


class MempipeError(Exception):
    """Base class: the CLI prints these as `Error: ...` and exits 1."""


class ConfigError(MempipeError):
    pass


class StoreError(MempipeError):
    """The database failed. Never swallowed: an outage must not look like "no data"."""


class SchemaError(StoreError):
    pass


class InputError(MempipeError):
    """Bad import input. Names the file and the line or message id."""

    def __init__(self, source: str, where: str, what: str):
        self.source, self.where, self.what = source, where, what
        super().__init__(f"{source}: {where}: {what}")


class ScopeError(MempipeError):
    pass


class SummarizerError(MempipeError):
    pass
