"""Jinja2 prompt templates from prompts/, rendered with XML autoescape (chat text is data)."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import jinja2

from ..resources import prompts_dir

PROMPTS_DIR = prompts_dir()


@functools.cache
def environment(directory: Path = PROMPTS_DIR) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(directory)),
        autoescape=True,  # every {{ value }} is XML-escaped: chat text cannot close our tags
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def template_name(operation: str) -> str:
    return f"{operation}.xml.j2"


def template_hash(operation: str, directory: Path = PROMPTS_DIR) -> str:
    """Hash of the template source: editing a prompt invalidates exactly the rows it shapes."""
    return hashlib.sha256((directory / template_name(operation)).read_bytes()).hexdigest()[:16]


def render(operation: str, directory: Path = PROMPTS_DIR, **values) -> str:
    return environment(directory).get_template(template_name(operation)).render(**values)
