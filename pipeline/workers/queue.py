"""procrastinate wiring: the queue app over the configured PostgreSQL database, its schema (applied
by `mempipe db upgrade`), and the one check every workers path makes first (PostgreSQL only)."""

from __future__ import annotations

import contextlib
import logging
from typing import AsyncIterator

from ..db.engine import libpq_url
from ..errors import ConfigError, SchemaError, StoreError

log = logging.getLogger(__name__)


def require_postgresql(dialect: str, what: str) -> None:
    """Workers share a PostgreSQL database; SQLite runs every stage in the run's own process."""
    if dialect != "postgresql":
        raise ConfigError(
            f"{what} needs PostgreSQL (workers share the work through its job queue), but the database is "
            f"SQLite, where everything runs in one process: keep [workers] enabled = false "
            f"(MEMPIPE_WORKERS__ENABLED=false), or use a PostgreSQL database")


def queue_app(url, *, max_connections: int = 2, tasks: bool = False):
    """A procrastinate App on the database at `url` (a store's: SQLAlchemy's URL), not opened.
    `tasks`: with mempipe's tasks registered (a worker runs them; a run defers them by name)."""
    import procrastinate

    connector = procrastinate.PsycopgConnector(conninfo=libpq_url(url), min_size=1, max_size=max(2, max_connections))
    app = procrastinate.App(connector=connector)
    if tasks:
        from .tasks import register

        register(app)
    return app


@contextlib.asynccontextmanager
async def opened(app) -> AsyncIterator:
    """The app's pool open for the block; a connection failure is a StoreError."""
    from procrastinate import exceptions

    try:
        await app.open_async()
    except exceptions.ConnectorException as exc:
        raise StoreError(f"cannot reach the job queue: {exc.__cause__ or exc}") from None
    try:
        yield app
    finally:
        await app.close_async()


async def check_schema(app) -> None:
    from procrastinate import exceptions

    try:
        present = await app.check_connection_async()
    except exceptions.ConnectorException as exc:
        raise StoreError(f"cannot reach the job queue: {exc.__cause__ or exc}") from None
    if not present:
        raise SchemaError("the job queue's tables (procrastinate) are missing: run `mempipe db upgrade`")


def ensure_schema(database) -> bool:
    """Apply procrastinate's schema to a PostgreSQL database (a URL, or settings: their
    database_url) when it is not there (`mempipe db upgrade`). True when it was applied. It is
    procrastinate's own (`procrastinate_*` tables, types and functions), kept out of
    sql/migrations and sql/schema.*.sql. Created, never migrated: a schema already there is left
    as it is, so pyproject.toml pins procrastinate to the minor release whose schema this is."""
    from procrastinate import exceptions

    app = queue_app(getattr(database, "database_url", database))
    try:
        app.open()
        if app.check_connection():
            return False
        app.schema_manager.apply_schema()
        return True
    except exceptions.ConnectorException as exc:
        raise StoreError(f"applying the job queue's schema (procrastinate) failed: {exc.__cause__ or exc}") from None
    finally:
        app.close()
