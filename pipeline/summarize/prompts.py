"""Jinja2 prompt templates from prompts/, every {{ value }} escaped (chat text is data).

By default a value is escaped for XML text or a double-quoted attribute: `&`, `<`, `>` (so it
cannot open or close our tags) and `"` (every attribute in prompts/ is double-quoted, so a value
cannot leave its attribute). Not `'`: no attribute is single-quoted, and an apostrophe is in most
chat lines — `&#39;` would cost five characters each.

Two filters for the one-line-per-item lists of the daily, fold and reduce prompts (a message, a
speaker, a summary on a line of its own, cheaper than an element per item):

- `line`: `&`, `<`, `>` escaped and every line break written as the two characters `\\n`, so a
  value can neither open or close a tag nor start a line of its own (forge a message or a
  speaker); quotes stay as they are (the value is not in an attribute).
- `quoted`: the value in double quotes, `"` escaped too and line breaks as above (a name inside a
  line: it cannot end its quotes early).
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

import jinja2

from ..resources import prompts_dir

PROMPTS_DIR = prompts_dir()


_XML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;"})
_TEXT = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
# What str.splitlines (and so a reader of the prompt) takes for the end of a line.
_LINE_BREAK = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


class Escaped(str):
    """A value a filter has escaped already: the finalize step leaves it as it is."""


def xml_escape(value) -> str:
    """A template value as XML text or a double-quoted attribute value."""
    return value if isinstance(value, Escaped) else str(value).translate(_XML)


def one_line(value) -> Escaped:
    """A value as the rest of one line of a list: no tag, no line break."""
    return Escaped(_LINE_BREAK.sub(r"\\n", str(value).translate(_TEXT)))


def quoted(value) -> Escaped:
    """A value in double quotes inside one line: no tag, no line break, no early closing quote."""
    return Escaped('"' + _LINE_BREAK.sub(r"\\n", str(value).translate(_XML)) + '"')


@functools.cache
def environment(directory: Path = PROMPTS_DIR) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(directory)),
        autoescape=False, finalize=xml_escape,  # every {{ value }}, once (see the module docstring)
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters["line"] = one_line
    env.filters["quoted"] = quoted
    return env


def template_name(operation: str) -> str:
    return f"{operation}.xml.j2"


def template_hash(operation: str, directory: Path = PROMPTS_DIR) -> str:
    """Hash of the template source: editing a prompt invalidates exactly the rows it shapes."""
    return hashlib.sha256((directory / template_name(operation)).read_bytes()).hexdigest()[:16]


def render(operation: str, directory: Path = PROMPTS_DIR, **values) -> str:
    return environment(directory).get_template(template_name(operation)).render(**values)
