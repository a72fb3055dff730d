"""The data files mempipe ships, found the same way in a wheel and in an editable install.

sql/, prompts/ and config/ live at the repository root and install as the packages
pipeline.sql, pipeline.prompts and pipeline.config_files (setup.py maps them). Code reaches them
only through this module, never by walking up from __file__: that worked in a checkout and broke
every regular install.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

SQL = "pipeline.sql"
PROMPTS = "pipeline.prompts"
CONFIG = "pipeline.config_files"


def directory(package: str) -> Path:
    """The directory holding `package`'s files, as a real path: jinja2's loader and the migration
    runner read files by path (pip installs wheels unpacked, so this holds)."""
    try:
        root = resources.files(package)
    except ModuleNotFoundError:
        # An install without the data: answer where it belongs, so the reader's own error
        # ("no migrations in …") names the place, instead of an ImportError at import time.
        return Path(__file__).resolve().parent / package.rpartition(".")[2]
    if not isinstance(root, Path):
        raise RuntimeError(f"{package} is not on the file system ({root!s}); install mempipe unpacked")
    return root


def sql_dir() -> Path:
    return directory(SQL)


def prompts_dir() -> Path:
    return directory(PROMPTS)


def config_dir() -> Path:
    return directory(CONFIG)
