"""The one source of "now". Code that needs time takes a clock; tests pass a fixed one."""

from __future__ import annotations

import datetime as dt
from typing import Callable

Clock = Callable[[], dt.datetime]


def system_clock() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def fixed_clock(at: dt.datetime) -> Clock:
    if at.tzinfo is None:
        raise ValueError("fixed_clock needs a timezone-aware datetime")
    return lambda: at
