"""Content-addressed keys: sha256 over a canonical JSON rendering of a stage's inputs."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import Any


def _default(value: Any) -> Any:
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"cannot hash {type(value).__name__}")


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_default)


def input_hash(*parts: Any) -> str:
    return hashlib.sha256(canonical(list(parts)).encode("utf-8")).hexdigest()
