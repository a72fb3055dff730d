"""`mempipe serve`: the hourly refresh, a rollover at each timezone's local midnight and the
daily retention, run by exactly one leader per database (see service.py, schedule.py, leader.py,
jobs.py). Cron users run `mempipe run` instead; both are safe side by side."""

from .leader import LEADER_KEY, Leader
from .schedule import (
    LocalMidnightTrigger,
    build_triggers,
    catch_up_due,
    in_zone,
    job_options,
    job_specs,
    missed_while_away,
    timezone_groups,
    zones_in_use,
)

__all__ = ["LEADER_KEY", "Leader", "LocalMidnightTrigger", "build_triggers", "catch_up_due", "in_zone",
           "job_options", "job_specs", "missed_while_away", "timezone_groups", "zones_in_use"]


def __getattr__(name):  # the service imports APScheduler's asyncio parts: load it on use
    if name == "serve":
        from .service import serve

        return serve
    raise AttributeError(name)
