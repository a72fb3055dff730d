"""The bot-read benchmark times its reads with the bench and the database's server processes on
one CPU (bench/sections/read.py `_one_cpu`): where each was scheduled decided the ratio."""

import os
import subprocess
import sys

import pytest

from bench.sections.read import _one_cpu

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this platform")


@pytest.fixture
def other_process():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc.pid
    proc.kill()
    proc.wait()


def test_pins_this_process_and_the_servers_to_one_cpu_and_puts_them_back(other_process):
    mine, theirs = os.sched_getaffinity(0), os.sched_getaffinity(other_process)
    with _one_cpu([other_process]) as cpu:
        assert cpu == min(mine)
        assert os.sched_getaffinity(0) == {cpu}
        assert os.sched_getaffinity(other_process) == {cpu}
    assert os.sched_getaffinity(0) == mine
    assert os.sched_getaffinity(other_process) == theirs


def test_pins_nothing_when_a_server_cannot_be_pinned(other_process):
    mine, theirs = os.sched_getaffinity(0), os.sched_getaffinity(other_process)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # its pid names no process now: sched_setaffinity raises
    with _one_cpu([other_process, gone.pid]) as cpu:
        assert cpu is None
        assert os.sched_getaffinity(0) == mine
        assert os.sched_getaffinity(other_process) == theirs
    assert os.sched_getaffinity(0) == mine


def test_puts_them_back_when_the_measurement_fails(other_process):
    mine = os.sched_getaffinity(0)
    with pytest.raises(RuntimeError), _one_cpu([other_process]):
        raise RuntimeError("a read failed")
    assert os.sched_getaffinity(0) == mine
