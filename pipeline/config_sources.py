"""Where each setting came from, for configuration errors and warnings.

load_settings (pipeline/config.py) reads, lowest priority first: config/default.toml, the
`--config` file, MEMPIPE_* environment variables, explicit arguments. When a value is refused,
`Sources` finds which of them supplied it, so the message names that file and key or that
variable, once, with a did-you-mean for a misspelt key. `warn_unknown_variables` reports the
MEMPIPE_* variables that pydantic-settings would ignore without a word (a misspelt prefix).
Values are never shown: a key pasted into the wrong place must not reach a terminal or a log.
"""

from __future__ import annotations

import difflib
import json
import logging
import re
import threading
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from pydantic import BaseModel, ValidationError

from .safety import redact

log = logging.getLogger("pipeline.config")

PREFIX, NESTED = "MEMPIPE_", "__"
# MEMPIPE_* variables mempipe reads that are not settings: the CLI options' own variables (a
# test checks every `envvar=` of the CLI is a setting or listed here) and the test and bench
# servers. A bot sharing `serve`'s environment must not be warned about them.
OTHER_VARIABLES = {
    "MEMPIPE_CONFIG": "mempipe --config",
    "MEMPIPE_LOG_FORMAT": "mempipe --log-format",
    "MEMPIPE_RUN_NOW": "mempipe serve --run-now",
    "MEMPIPE_HTTP": "mempipe serve --http",
    "MEMPIPE_TEST_PG_URL": "the test suite's PostgreSQL server",
    "MEMPIPE_BENCH_PG_URL": "the benchmark's PostgreSQL server",
}
_SECRET_NAME = re.compile(r"key|token|secret|password|passwd|credential", re.IGNORECASE)
_warned: set[str] = set()  # variables already warned about: once per process
_warned_lock = threading.Lock()


@dataclass(frozen=True)
class Source:
    kind: str  # "argument", "environment" or "file"
    data: Any  # the nested values it supplies (environment: {variable: path})
    path: Path | None = None


def _model_of(annotation) -> type[BaseModel] | None:
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _is_mapping(annotation) -> bool:
    return typing.get_origin(annotation) is dict


def model_at(root: type[BaseModel], path: tuple) -> type[BaseModel] | None:
    """The settings model (section) at `path` below `root`; None when the path leads elsewhere."""
    model = root
    for part in path:
        field = model.model_fields.get(str(part))
        model = _model_of(field.annotation) if field is not None else None
        if model is None:
            return None
    return model


def setting_variables(root: type[BaseModel], prefix: str = PREFIX) -> list[str]:
    """Every leaf setting's variable name (MEMPIPE_SUMMARY__DAILY_CHARS, …)."""
    names = []
    for name, field in root.model_fields.items():
        inner = _model_of(field.annotation)
        full = f"{prefix}{name.upper()}"
        names.extend(setting_variables(inner, full + NESTED) if inner is not None else [full])
    return names


def is_setting_variable(root: type[BaseModel], name: str) -> bool:
    """Whether pydantic-settings reads `name` (case-insensitive) into a setting. A variable whose
    section exists but whose key does not is read, and refused by validation (an error that
    names it); one pydantic-settings skips without a word is not."""
    parts = name[len(PREFIX):].lower().split(NESTED)
    model = root
    for i, part in enumerate(parts):
        field = model.model_fields.get(part) if part else None
        if field is None:
            return i > 0  # a top-level miss is skipped; a nested one is an "extra" error
        if _is_mapping(field.annotation):
            return True  # any key below a table (timezones.guilds, gemini.models)
        inner = _model_of(field.annotation)
        if inner is None:
            return i == len(parts) - 1  # below a plain value: skipped
        model = inner
    return True


def did_you_mean(word: str, choices) -> str | None:
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


def warn_unknown_variables(root: type[BaseModel], environ: Mapping[str, str]) -> None:
    """A warning, once per process and variable, for each MEMPIPE_* variable that names neither
    a setting nor one of OTHER_VARIABLES (it would be ignored), with a did-you-mean."""
    known = None
    for name in environ:
        upper = name.upper()
        if not upper.startswith(PREFIX) or upper in OTHER_VARIABLES or is_setting_variable(root, name):
            continue
        with _warned_lock:
            if name in _warned:
                continue
            _warned.add(name)
        # compared without the prefix they all share, which would make any two look alike
        known = known or [n[len(PREFIX):] for n in setting_variables(root) + list(OTHER_VARIABLES)]
        guess = did_you_mean(upper[len(PREFIX):], known)
        hint = (f"did you mean {PREFIX}{guess}?" if guess else
                "settings are MEMPIPE_<KEY>, nested keys joined with __ (MEMPIPE_SUMMARY__DAILY_CHARS); "
                "see the README's Configuration")
        log.warning("the environment variable %s is not a mempipe setting and is ignored; %s", name, hint)


def _walk(value: Any, loc: tuple) -> int:
    """How many leading parts of `loc` lead somewhere inside `value` (nested dicts and lists)."""
    depth = 0
    for part in loc:
        if isinstance(value, dict) and str(part) in value:
            value = value[str(part)]
        elif isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
            value = value[part]
        else:
            break
        depth += 1
    return depth


class Sources:
    """The sources of one load_settings call, highest priority first."""

    def __init__(self, root: type[BaseModel], files: list[tuple[Path, dict]], environ: Mapping[str, str],
                 arguments: Mapping[str, Any]):
        self.root = root
        self.files = [path for path, _ in files]
        self.environ = environ
        variables = {name: tuple(name[len(PREFIX):].lower().split(NESTED)) for name in environ
                     if name.upper().startswith(PREFIX) and is_setting_variable(root, name)}
        self.order = ([Source("argument", dict(arguments))] if arguments else []) + [Source("environment", variables)]
        self.order += [Source("file", data, path) for path, data in reversed(files)]

    # ------------------------------------------------------------------ which one supplied it

    def _env_depth(self, variables: dict[str, tuple], loc: tuple) -> tuple[int, str | None]:
        best, chosen = 0, None
        for name, path in variables.items():
            n = min(len(path), len(loc))
            if tuple(str(p).lower() for p in loc[:n]) != path[:n]:
                continue
            depth = len(loc) if len(path) >= len(loc) else len(path)
            if depth < len(loc):  # a whole section as JSON (MEMPIPE_SUMMARY='{"daily_chars": …}')
                try:
                    depth += _walk(json.loads(self.environ[name]), loc[len(path):])
                except ValueError:
                    pass
            if depth > best:
                best, chosen = depth, name
        return best, chosen

    def supplier(self, loc: tuple) -> tuple[Source | None, str | None]:
        """The source whose value at `loc` was used (the highest one that has it all), or the
        one that reaches deepest; with the variable's name for the environment."""
        best: tuple[int, Source | None, str | None] = (0, None, None)
        for source in self.order:
            if source.kind == "environment":
                depth, name = self._env_depth(source.data, loc)
            else:
                depth, name = _walk(source.data, loc), None
            if depth == len(loc):
                return source, name
            if depth > best[0]:
                best = (depth, source, name)
        return best[1], best[2]

    def origin(self, loc: tuple) -> str:
        dotted = ".".join(str(p) for p in loc) or "(top level)"
        source, variable = self.supplier(loc)
        if source is None:
            return f"{dotted} (in {', '.join(str(f) for f in self.files)})"
        if source.kind == "environment":
            return f"environment variable {variable} ({dotted})"
        if source.kind == "file":
            return f"{source.path}: {dotted}"
        return f"{dotted} (passed to load_settings)"

    # ------------------------------------------------------------------ messages

    def problems(self, exc: ValidationError) -> list[str]:
        """One line per refused setting: where it came from, then what is wrong."""
        out = []
        for err in exc.errors(include_url=False, include_input=False):
            loc = tuple(err["loc"])
            if err["type"] == "extra_forbidden":
                what = self._unknown_key(loc)
            else:
                what = re.sub(r"^(?:Value|Assertion) error, ", "", err["msg"])
            line = f"{self.origin(loc)}: {redact(what)}"
            if line not in out:
                out.append(line)
        return out

    def _unknown_key(self, loc: tuple) -> str:
        what = "not a setting (a misspelt or unknown key)"
        if _SECRET_NAME.search(".".join(str(p) for p in loc)):
            return what + ("; API keys are never configured in a file or MEMPIPE_* variable: put the key in the "
                           "environment variable named by gemini.api_key_env (default GEMINI_API_KEY)")
        model = model_at(self.root, loc[:-1])
        guess = did_you_mean(str(loc[-1]).lower(), model.model_fields) if model is not None else None
        if guess is None:
            return what
        source, _ = self.supplier(loc)
        if source is not None and source.kind == "environment":
            path = [str(p).upper() for p in loc[:-1]] + [guess.upper()]
            return f"{what}; did you mean {PREFIX}{NESTED.join(path)}?"
        return f"{what}; did you mean `{guess}`?"

    def unreadable_variable(self, field: str) -> str:
        """pydantic-settings could not parse a variable's value (a section must be a JSON object)."""
        names = [n for n in self.environ if n.upper().startswith(PREFIX)
                 and n[len(PREFIX):].lower().split(NESTED)[0] == field.lower()]
        where = ", ".join(f"environment variable {n}" for n in names) or f"the environment ({field})"
        return (f"{where}: not readable as {field} (a whole section takes a JSON object; or set one key, "
                f"e.g. {PREFIX}{field.upper()}{NESTED}<KEY>)")
