"""Named SQL from sql/queries.sql, parsed once."""

from __future__ import annotations

import functools
import re

from ..resources import sql_dir

QUERIES_FILE = sql_dir() / "queries.sql"


@functools.cache
def queries() -> dict[str, str]:
    text = QUERIES_FILE.read_text(encoding="utf-8")
    out: dict[str, str] = {}
    for block in re.split(r"^-- name: ", text, flags=re.MULTILINE)[1:]:
        name, _, body = block.partition("\n")
        lines = [ln for ln in body.splitlines() if ln.strip() and not ln.startswith("--")]
        out[name.strip()] = "\n".join(lines).rstrip().rstrip(";")
    return out


def query(name: str) -> str:
    return queries()[name]
