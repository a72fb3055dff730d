"""How pipeline/testing.py's InMemoryStageStore records its storage calls (`calls`), and the
copies it hands out: shared by the store and its role mixins (pipeline/testing_ingest.py)."""

from __future__ import annotations

import copy
import functools
import inspect
from typing import Callable, Iterable

# Arguments that are id or day collections: materialised (a generator is read once) and recorded
# sorted and de-duplicated, as the SQL store binds them.
_ID_ARGS = frozenset({"messages", "keys", "user_ids", "partitions", "channel_ids", "days"})
_BATCH_ARGS = frozenset({"dailies", "historicals", "contexts", "touches", "rows"})


def _recorded(method: Callable) -> Callable:
    sig = inspect.signature(method)

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        bound = sig.bind(self, *args, **kwargs)
        bound.apply_defaults()
        arguments = {}
        for name, value in list(bound.arguments.items())[1:]:
            if name in _ID_ARGS and value is not None:
                value = bound.arguments[name] = tuple(sorted(set(value)))
            elif name in _BATCH_ARGS:
                value = bound.arguments[name] = list(value)
            if name != "conn":  # the importer's dummy connection says nothing
                arguments[name] = value
        self.calls.append((method.__name__, arguments))
        return method(*bound.args, **bound.kwargs)
    return wrapper


def _out(row: dict, columns: Iterable[str] | None = None) -> dict:
    """A copy for a caller (stored rows are replaced, never changed in place; JSON is deep)."""
    return {k: copy.deepcopy(row[k]) if isinstance(row[k], (dict, list)) else row[k] for k in (columns or row)}
