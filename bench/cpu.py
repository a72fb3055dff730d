"""Where a timed run's CPU went: this process, its waited-for children (the reader process of an
import, the stage processes of a run on several CPUs) and the rest of the machine (on
PostgreSQL, mostly the server's processes). A target that a run misses while every CPU is busy
is bounded by CPU-seconds, not by waiting: the sections show this next to the wall time.

The rest of the machine is the busy time /proc/stat counts for all CPUs (user, nice, system,
irq, softirq, steal) minus this process's and its children's: anything else running then
(another job on a shared machine) lands there too, so it is an upper bound on the server's.
Where /proc/stat is missing (not Linux) only this process and its children are measured.
"""

from __future__ import annotations

import contextlib
import os
import resource
import time
from pathlib import Path
from typing import Iterator

_STAT = Path("/proc/stat")


def _machine_busy_s() -> float | None:
    """Busy CPU-seconds of all CPUs since boot (None where /proc/stat is missing)."""
    try:
        fields = _STAT.read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    # cpu user nice system idle iowait irq softirq steal [guest guest_nice: already in user/nice]
    ticks = [int(v) for v in fields[1:9]]
    busy = sum(ticks) - ticks[3] - ticks[4]
    return busy / os.sysconf("SC_CLK_TCK")


def _rusage_s(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


@contextlib.contextmanager
def measured() -> Iterator[dict]:
    """Yields a dict filled in on exit: wall_s, self_s (this process), children_s (children that
    ended and were waited for meanwhile), rest_s (the rest of the machine, None where unknown)
    and cpus (os.cpu_count())."""
    out: dict = {}
    self0, children0 = _rusage_s(resource.RUSAGE_SELF), _rusage_s(resource.RUSAGE_CHILDREN)
    machine0, t0 = _machine_busy_s(), time.perf_counter()
    try:
        yield out
    finally:
        wall = time.perf_counter() - t0
        self_s = _rusage_s(resource.RUSAGE_SELF) - self0
        children_s = _rusage_s(resource.RUSAGE_CHILDREN) - children0
        machine1 = _machine_busy_s()
        rest = None
        if machine0 is not None and machine1 is not None:
            rest = max(machine1 - machine0 - self_s - children_s, 0.0)  # tick rounding can go below 0
        out.update(wall_s=round(wall, 3), self_s=round(self_s, 2), children_s=round(children_s, 2),
                   rest_s=None if rest is None else round(rest, 2), cpus=os.cpu_count() or 1)


def total_s(cpu: dict) -> float:
    """The CPU-seconds the measured run used, the rest of the machine included where known."""
    return cpu["self_s"] + cpu["children_s"] + (cpu["rest_s"] or 0.0)


def busy(cpu: dict) -> str:
    """"1.9 of 2 CPUs": how many CPUs were busy on average over the wall time."""
    return f"{total_s(cpu) / max(cpu['wall_s'], 1e-9):.1f} of {cpu['cpus']} CPUs"


def split(cpu: dict, parts: tuple[str, str, str]) -> str:
    """"run 58.9 + server 0.4 = 59.3 CPU-s (1.9 of 2 CPUs busy)" with the given names for this
    process, its children and the rest (a name "" folds that part into the one before it)."""
    values = [cpu["self_s"], cpu["children_s"], cpu["rest_s"]]
    shown: list[list] = []
    for name, value in zip(parts, values):
        if value is None:
            continue
        if name or not shown:
            shown.append([name, value])
        else:
            shown[-1][1] += value
    text = " + ".join(f"{name} {value:,.1f}" for name, value in shown)
    return f"{text} = {total_s(cpu):,.1f} CPU-s ({busy(cpu)} busy)"
