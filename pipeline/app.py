"""The one assembly point. The CLI, the scheduler's jobs, the tests and the bench build a run the
same way: settings + a store + a clock + a summarizer factory -> `App`, then
`app.run_context(...)` for each run (a run closes its summarizer's client at its end, so each
run gets a fresh summarizer).

    app = App.open(load_settings())
    result = asyncio.run(execute(app.run_context(), "run", None, None))
    app.close()
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .clock import Clock, system_clock
from .config import Settings
from .stages.context import RunContext
from .store import Store
from .summarize import Summarizer, make_summarizer

SummarizerFactory = Callable[[Settings], Summarizer]


@dataclass
class App:
    settings: Settings
    store: Store
    clock: Clock = system_clock
    make_summarizer: SummarizerFactory = field(default=make_summarizer)

    @classmethod
    def open(cls, settings: Settings, *, check_schema: bool = True, clock: Clock = system_clock,
             summarizer_factory: SummarizerFactory | None = None) -> "App":
        """Open the configured database (pool sized from settings). It must exist: nothing here
        creates one (NoDatabaseError names what was tried); `app.store.upgrade()` (`db upgrade`)
        is the one creator. check_schema=False only for `db upgrade` / `db status`, which must
        work on a database that is behind."""
        store = Store.open(settings.database_url, check_schema=check_schema, pool_size=settings.pool_size,
                           max_overflow=settings.pool_max_overflow)
        return cls(settings, store, clock, summarizer_factory or make_summarizer)

    def run_context(self, *, force: bool = False, dry_run: bool = False,
                    summarizer: Summarizer | None = None) -> RunContext:
        """Everything one run needs, with a fresh summarizer unless one is given."""
        return RunContext(store=self.store, summarizer=summarizer or self.make_summarizer(self.settings),
                          settings=self.settings, clock=self.clock, force=force, dry_run=dry_run)

    def close(self) -> None:
        self.store.close()
