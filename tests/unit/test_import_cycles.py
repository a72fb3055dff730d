"""Every module of pipeline/ imports on its own: an import cycle (module A imports B, which
imports A before A is done) fails only when A is imported first, so each module is imported first
in turn. One fresh interpreter (a subprocess, nothing of pipeline/ loaded) drops every pipeline
module from sys.modules before importing the next: the third-party libraries stay loaded (they
never import pipeline/, so they cannot take part in a cycle), which keeps this a second, not
minutes of interpreter starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pipeline

ROOT = Path(pipeline.__file__).parent

_SCRIPT = r"""
import importlib, json, sys, traceback
failed = {}
for name in json.loads(sys.argv[1]):
    for loaded in [m for m in sys.modules if m == "pipeline" or m.startswith("pipeline.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception:
        failed[name] = traceback.format_exc(limit=-3)
print(json.dumps(failed))
"""


def _modules() -> list[str]:
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        if parts[-1] == "__main__":  # runs the CLI when imported
            continue
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def test_every_module_imports_first(tmp_path):
    modules = _modules()
    assert "pipeline.memory.requests" in modules and len(modules) > 50
    # compiled once into tmp_path and read back at every later import (the environment may turn
    # the bytecode cache off: each import would then compile every module again)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path)
    n = max(1, min(4, os.cpu_count() or 1))  # a few interpreters side by side, each a share of the modules
    runs = [subprocess.Popen([sys.executable, "-c", _SCRIPT, json.dumps(modules[i::n])], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=ROOT.parent, env=env) for i in range(n)]
    failed = {}
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, err
        failed |= json.loads(out.strip().splitlines()[-1])
    assert not failed, "\n".join(f"{name}:\n{tb}" for name, tb in failed.items())
