"""Jinja2 prompt templates from prompts/, every {{ value }} XML-escaped (chat text is data).

Escaped: `&`, `<`, `>` (so chat text cannot open or close our tags) and `"` (every attribute in
prompts/ is double-quoted, so a value cannot leave its attribute). Not `'`: no attribute is
single-quoted, and an apostrophe is in most chat lines — `&#39;` would cost five characters each.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import jinja2

from ..resources import prompts_dir

PROMPTS_DIR = prompts_dir()


_XML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;"})


def xml_escape(value) -> str:
    """A template value as XML text or a double-quoted attribute value."""
    return str(value).translate(_XML)


@functools.cache
def environment(directory: Path = PROMPTS_DIR) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(directory)),
        autoescape=False, finalize=xml_escape,  # every {{ value }}, once (see the module docstring)
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
