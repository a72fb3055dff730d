"""The benchmark sections, in report order. Each module has TITLE, run(env) -> dict (JSON-able),
render(result) -> markdown lines and targets(result) -> [(target, measured, met)]; a module
with start(env) is started before the others and collected in its turn."""

from . import calls, cost, ingest, memory, overhead, quota, read, scale, search

SECTIONS = {
    "ingest": ingest,
    "calls": calls,
    "overhead": overhead,
    "quota": quota,
    "read": read,
    "cost": cost,
    "memory": memory,
    "search": search,
    "scale": scale,
}
