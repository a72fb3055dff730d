"""`mempipe import` on a terminal: the progress line counts the messages read so far, without a
total it cannot know before reading them (it said "5000/0" beside a full bar). Run on a real
pseudo-terminal, since click draws the bar only on one."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, SAMPLE

MEMPIPE = Path(sys.executable).parent / "mempipe"  # the console script of the venv the tests run in


def test_import_progress_on_a_terminal_counts_without_a_made_up_total(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMPIPE_")}
    db = f"sqlite:///{tmp_path}/t.db"
    subprocess.run([str(MEMPIPE), "--db", db, "db", "upgrade"], env=env, cwd=ROOT, check=True, capture_output=True)
    leader, follower = pty.openpty()
    try:
        done = subprocess.run([str(MEMPIPE), "--db", db, "import", str(SAMPLE)], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=follower, text=True, timeout=120)
        os.close(follower)
        follower = -1
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end is closed: all was read
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    assert done.returncode == 0, done.stdout
    read = int(re.search(r"read (\d+) messages", done.stdout).group(1))
    text = drawn.decode("utf-8", "replace")
    assert "importing" in text
    assert not re.search(r"\d+/0\b", text)  # no total of 0
    assert str(read) in re.findall(r"\d+", text)  # the count reached what was read
