"""A regular install works, not only the editable one: build the wheel from the working tree,
install it into a fresh virtual environment and run the demo from a directory outside the
checkout.

Offline and quick: the build uses this venv's setuptools (--no-build-isolation, setuptools is in
the `test` extra), the install takes only the wheel (--no-index --no-deps), and the new venv sees
the dependencies through a .pth file naming this venv's site-packages.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from pipeline.db.migrations import discover
from pipeline.summarize.prompts import template_hash
from tests.conftest import ROOT, SAMPLE

pytestmark = pytest.mark.slow
G1, ANA = 1150000000000000001, 1160000000000000001
# Where each data directory lands in the wheel (setup.py maps them).
DATA_DIRS = {"sql": "pipeline/sql", "prompts": "pipeline/prompts", "config": "pipeline/config_files"}
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc")


def _run(args, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300, **kwargs)
    assert result.returncode == 0, f"{args}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return result


def _files(directory: Path):
    return [p for p in directory.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # Build from a copy: an in-tree build leaves build/ and *.egg-info in the shared checkout.
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for name in ("pipeline", *DATA_DIRS):
        shutil.copytree(ROOT / name, src / name, ignore=SKIP)
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
          "--disable-pip-version-check", "-w", out, src], cwd=out)
    (built,) = out.glob("mempipe-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    env_dir = tmp_path_factory.mktemp("venv")
    venv.create(env_dir, with_pip=False)  # this venv's pip installs into it (pip --python): no ensurepip
    python = env_dir / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index",
          "--disable-pip-version-check", wheel])
    # Only now make the dependencies visible, so the install above cannot see (or touch) the
    # editable mempipe that lives beside them.
    site = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(site) / "mempipe-test-deps.pth").write_text("".join(f"{d}\n" for d in sorted(deps)), encoding="utf-8")
    return env_dir


@pytest.fixture
def outside(tmp_path, monkeypatch):
    """A working directory outside the checkout and an environment that cannot reach it."""
    assert ROOT not in tmp_path.parents
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MEMPIPE_", "PYTHON", "VIRTUAL_ENV"))}
    return tmp_path, env


def test_the_wheel_carries_every_module_and_data_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {p.relative_to(ROOT).as_posix() for p in _files(ROOT / "pipeline") if p.suffix == ".py"}
    for directory, target in DATA_DIRS.items():
        expected |= {f"{target}/{p.relative_to(ROOT / directory).as_posix()}" for p in _files(ROOT / directory)}
    missing = sorted(expected - names)
    assert not missing, f"not in the wheel (package_data in setup.py?): {missing}"
    assert not any(n.startswith(("sql/", "prompts/", "config/", "tests/")) for n in names)


def test_installed_wheel_runs_the_demo_outside_the_checkout(installed, outside):
    cwd, env = outside
    probe = _run([installed / "bin" / "python", "-c",
                  "import pipeline, pipeline.config as c, pipeline.db.migrations as m, pipeline.resources as r\n"
                  "from pipeline.summarize.prompts import template_hash\n"
                  "print(pipeline.__file__, r.sql_dir(), m.MIGRATIONS_DIR, c.DEFAULT_CONFIG, r.prompts_dir(),"
                  " template_hash('daily'), sep='\\n')"], cwd=cwd, env=env).stdout.split()
    *paths, daily_hash = probe
    for path in paths:  # the package and its data come from the new venv, not the checkout
        assert Path(path).is_relative_to(installed), paths
    assert daily_hash == template_hash("daily")  # the same template text shipped

    mempipe = installed / "bin" / "mempipe"
    db = cwd / "m.db"
    url = f"sqlite:///{db}"

    def cli(*args):
        return _run([mempipe, "--db", url, *args], cwd=cwd, env=env).stdout

    assert "(0 migration" not in cli("db", "upgrade")
    with sqlite3.connect(db) as conn:
        versions = [v for (v,) in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
    assert versions == [m.version for m in discover("sqlite")]

    assert "read 90 messages" in cli("import", SAMPLE)
    assert re.search(r"14 partition-days", cli("replay", "--from", "2026-11-01", "--to", "2026-11-04"))
    contexts = cli("contexts")
    assert re.search(rf"^== guild:{G1} user {ANA}: as of 2026-11-04 \(made [^)]+ UTC\).*\n# Ana: long-term memory",
                     contexts, flags=re.MULTILINE)
    assert "\nToday, 2026-11-04: Ana:" in contexts
    assert "long-term memory" in cli("profile", "--scope", f"guild:{G1}", "--user", str(ANA))  # its template ships
    assert len(re.findall(r"^== ", contexts, flags=re.MULTILINE)) > 1
