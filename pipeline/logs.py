"""Log formats: `text` for people, `json` (one object per line) for log shippers.

Structured values travel on the record as `extra={"fields": {...}}`: the JSON format puts them
at the top level of the line, the text format appends them as `key=value`.

Every record our handler writes is redacted first (`RedactFilter`): message, arguments, fields,
traceback — a server error that quotes the API key must not end up in a log file.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys

from .safety import redact

FORMATS = ("text", "json")


def _fields(record: logging.LogRecord) -> dict:
    fields = getattr(record, "fields", None)
    return fields if isinstance(fields, dict) else {}


def _iso(created: float) -> str:
    return dt.datetime.fromtimestamp(created, dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _redact_value(value):
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    text = json.dumps(value, default=str, ensure_ascii=False)
    return value if redact(text) == text else redact(text)


class RedactFilter(logging.Filter):
    """Redacts a record in place before it is formatted (safety.redact: the configured API key
    and secret token formats). The message is formatted once here, so its arguments go too."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: let the handler report it as logging does
            return True
        record.msg, record.args = redact(message), ()
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            record.fields = {k: _redact_value(v) for k, v in fields.items()}
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def _exception(formatter: logging.Formatter, record: logging.LogRecord) -> str | None:
    """The traceback, as the filter redacted it when it ran."""
    if record.exc_text:
        return record.exc_text
    return formatter.formatException(record.exc_info) if record.exc_info else None


class JsonFormatter(logging.Formatter):
    """{"ts": …, "level": …, "logger": …, "msg": …, <fields>…} on one line."""

    def format(self, record: logging.LogRecord) -> str:
        out = {"ts": _iso(record.created), "level": record.levelname.lower(), "logger": record.name,
               "msg": record.getMessage()}
        for key, value in _fields(record).items():
            out.setdefault(key, value)
        exc = _exception(self, record)
        if exc:
            out["exc"] = exc
        return json.dumps(out, default=str, ensure_ascii=False)


def _text_value(value) -> str:
    if isinstance(value, (list, tuple, set)):
        text = ",".join(map(str, value))
    elif isinstance(value, dict):
        text = ",".join(f"{k}:{v}" for k, v in value.items())
    else:
        text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    if not text or any(c.isspace() or c in '"=' for c in text):
        return json.dumps(text, ensure_ascii=False)
    return text


class TextFormatter(logging.Formatter):
    """`LEVEL logger: message key=value …` (with a UTC timestamp in front when `timestamps`)."""

    def __init__(self, timestamps: bool = False):
        super().__init__()
        self.timestamps = timestamps

    def format(self, record: logging.LogRecord) -> str:
        line = f"{record.levelname} {record.name}: {record.getMessage()}"
        fields = _fields(record)
        if fields:
            line += " " + " ".join(f"{k}={_text_value(v)}" for k, v in fields.items())
        if self.timestamps:
            line = f"{_iso(record.created)} {line}"
        exc = _exception(self, record)
        if exc:
            line += "\n" + exc
        return line


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is when a record is emitted (a test runner may swap it)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value):
        pass


def configure_logging(fmt: str = "text", level: int = logging.WARNING, *, timestamps: bool = False) -> None:
    """Our one stderr handler on the root logger (replacing the one an earlier call installed;
    other handlers, e.g. a test runner's, are left alone)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r}; use one of {', '.join(FORMATS)}")
    handler = _StderrHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter(timestamps=timestamps))
    handler.addFilter(RedactFilter())
    handler._mempipe = True
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "_mempipe", False):
            root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
