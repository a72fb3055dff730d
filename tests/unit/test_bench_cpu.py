"""bench/cpu.py: where a measured run's CPU went — this process, the children it waited for, the
rest of the machine — and how the sections word it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench import cpu


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_a_busy_process_and_a_waited_child_are_counted_apart():
    with cpu.measured() as used:
        _spin(0.3)
        subprocess.run([sys.executable, "-c", "import time\nend = time.process_time() + 0.4\n"
                        "while time.process_time() < end: pass"], check=True)
    assert used["self_s"] >= 0.25
    assert used["children_s"] >= 0.35
    assert used["wall_s"] >= used["self_s"]
    assert used["cpus"] == (os.cpu_count() or 1)
    if Path("/proc/stat").exists():
        assert used["rest_s"] is not None and used["rest_s"] >= 0
    assert cpu.total_s(used) >= used["self_s"] + used["children_s"]


def test_without_proc_stat_the_rest_is_unknown_not_zero(monkeypatch, tmp_path):
    monkeypatch.setattr(cpu, "_STAT", tmp_path / "missing")
    with cpu.measured() as used:
        _spin(0.05)
    assert used["rest_s"] is None
    assert "rest" not in cpu.split(used, ("run", "", "rest"))  # not shown as if nothing else ran


def test_the_split_names_each_part_and_folds_unnamed_ones():
    used = {"wall_s": 10.0, "self_s": 12.0, "children_s": 6.0, "rest_s": 1.5, "cpus": 2}
    assert cpu.split(used, ("importer", "reader process", "server")) == \
        "importer 12.0 + reader process 6.0 + server 1.5 = 19.5 CPU-s (1.9 of 2 CPUs busy)"
    assert cpu.split(used, ("run", "", "server")) == "run 18.0 + server 1.5 = 19.5 CPU-s (1.9 of 2 CPUs busy)"
    assert cpu.busy(used) == "1.9 of 2 CPUs"


@pytest.mark.parametrize("line, busy", [
    ("cpu  100 5 50 1000 20 3 2 0 0 0", 160),  # user nice system [idle iowait] irq softirq steal
    ("cpu  100 0 0 1000 0 0 0 40 7 7", 140),  # steal counts, guest (already in user) does not
])
def test_machine_busy_time_leaves_out_idle_and_iowait(monkeypatch, tmp_path, line, busy):
    stat = tmp_path / "stat"
    stat.write_text(line + "\ncpu0 1 2 3 4\n")
    monkeypatch.setattr(cpu, "_STAT", stat)
    assert cpu._machine_busy_s() == pytest.approx(busy / os.sysconf("SC_CLK_TCK"))
