"""One log format for ragd and uvicorn, safe against forged lines.

:func:`configure_logging` installs one stream handler on the root logger (text or JSON lines,
UTC timestamps) and routes uvicorn's loggers through it; the API server runs uvicorn with
``log_config=None`` so nothing else installs handlers.

Log forging: a user-controlled string (filename, query, collection, header) must never start a
new line or reach the terminal as an escape sequence.  Call :func:`sanitize` on such values
(it also bounds their length); as a second line of defence both formatters escape control
characters and Unicode line separators in the message and extra fields, so every record is
one line.  Only the traceback is multi-line, and its lines are indented, so a line that
starts in column 0 is always the start of a record.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, Protocol, TextIO

from ragd.errors import ConfigurationError

FORMATS = ("text", "json")
VALID_LEVELS = ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG", "NOTSET")
UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi")
#: paths whose successful requests the access log writes at DEBUG: the web UI's static assets
#: (``ragd.api.routes.ui``), a dozen of them per page load, that would bury the API's requests
QUIET_ACCESS_PREFIXES = ("/ui/static/", "/favicon.ico")

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Each of these becomes a visible escape: C0 and DEL, C1 (NEL included), the Unicode line and
# paragraph separators, and the bidi embeddings/overrides/isolates that reorder what a terminal shows.
_UNSAFE = (
    *range(0x00, 0x20),
    *range(0x7F, 0xA0),
    0x2028,
    0x2029,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
)
_ESCAPES: dict[int, str] = {
    c: _NAMED.get(chr(c)) or (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in _UNSAFE
}
# json.dumps escapes C0 itself; these it would leave raw (they are only ever inside JSON strings).
_JSON_ESCAPES = {c: f"\\u{c:04x}" for c in _UNSAFE if c >= 0x7F}
# Attributes every LogRecord has; anything else on a record came from ``extra=``.
_STANDARD_ATTRS = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}
_DROPPED_EXTRAS = frozenset({"color_message"})  # uvicorn's ANSI-coloured copy of the message
_JSON_KEYS = frozenset({"ts", "level", "logger", "message", "exc"})  # an extra by these names gets a "_"


def _escape(text: str) -> str:
    return text.translate(_ESCAPES)


def sanitize(value: object, *, limit: int = 200) -> str:
    """``value`` as one printable line: control characters escaped, cut with ``…`` past ``limit``."""
    if limit < 0:
        raise ValueError("limit must be >= 0")
    text = value if isinstance(value, str) else str(value)
    escaped = _escape(text)
    if len(escaped) <= limit:
        return escaped
    # Cut between escapes, never inside one: ``\x1`` would be misleading.
    pieces, size = [], 0
    for char in text:
        piece = _ESCAPES.get(ord(char), char)
        if size + len(piece) > limit:
            break
        pieces.append(piece)
        size += len(piece)
    return "".join(pieces) + "…"


def _timestamp(record: logging.LogRecord) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {
        key: value
        for key, value in record.__dict__.items()
        if key not in _STANDARD_ATTRS and key not in _DROPPED_EXTRAS and not key.startswith("_")
    }


def _traceback(formatter: logging.Formatter, record: logging.LogRecord) -> str:
    parts = []
    if record.exc_info:
        parts.append(formatter.formatException(record.exc_info))
    elif record.exc_text:
        parts.append(record.exc_text)
    if record.stack_info:
        parts.append(formatter.formatStack(record.stack_info))
    return "\n".join(parts)


def _logfmt_value(value: object) -> str:
    text = _escape(value if isinstance(value, str) else str(value))
    if text == "" or any(c in text for c in ' "='):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


class TextFormatter(logging.Formatter):
    """``2026-11-22T09:00:00.123Z INFO ragd.api: message key=value``, then an indented traceback."""

    def format(self, record: logging.LogRecord) -> str:
        head = f"{_timestamp(record)} {_escape(record.levelname)} {_escape(record.name)}"
        line = f"{head}: {_escape(record.getMessage())}"
        extras = "".join(f" {_escape(k)}={_logfmt_value(v)}" for k, v in _extras(record).items())
        trace = _traceback(self, record)
        if not trace:
            return line + extras
        # Keep the traceback's line structure, but nothing else: no CR, no escapes, no forged records.
        indented = "\n".join("    " + _escape(part) for part in trace.split("\n"))
        return f"{line}{extras}\n{indented}"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, message, extra fields, exc."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": _timestamp(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in _extras(record).items():
            payload[f"{key}_" if key in _JSON_KEYS else key] = value
        trace = _traceback(self, record)
        if trace:
            payload["exc"] = trace
        text = json.dumps(payload, ensure_ascii=False, default=str)
        return text.translate(_JSON_ESCAPES)


class _RagdHandler(logging.StreamHandler[TextIO]):
    """The handler :func:`configure_logging` owns; remembers the namespaces it set levels on."""

    namespaces: tuple[str, ...] = ()


def _parse_level(value: str, what: str) -> int:
    name = value.strip().upper()
    if name not in VALID_LEVELS:
        raise ConfigurationError(
            f"{what}: unknown log level {sanitize(value)!r} (valid levels: {', '.join(VALID_LEVELS)})"
        )
    return logging.getLevelNamesMapping()[name]


def parse_levels(spec: str) -> dict[str, int]:
    """``'ragd.api=DEBUG,uvicorn.access=WARNING'`` as ``{namespace: level}``; blank entries are skipped."""
    levels: dict[str, int] = {}
    for raw in spec.split(","):
        entry = raw.strip()
        if not entry:
            continue
        name, sep, level = (part.strip() for part in entry.partition("="))
        what = f"RAGD_LOG__LEVELS entry {sanitize(entry)!r}"
        if not sep or not name or any(c.isspace() for c in name):
            raise ConfigurationError(
                f"{what}: expected 'namespace=LEVEL' (valid levels: {', '.join(VALID_LEVELS)})"
            )
        if name in levels:
            raise ConfigurationError(f"{what}: namespace {name!r} is given twice")
        levels[name] = _parse_level(level, what)
    return levels


class LogConfig(Protocol):
    """What :func:`configure_logging` reads: ``ragd.settings.LogSettings`` (kept structural so this
    low-level package does not depend on the settings module)."""

    @property
    def format(self) -> str: ...
    @property
    def level(self) -> str: ...
    @property
    def levels(self) -> str: ...


class QuietAssets(logging.Filter):
    """On ``uvicorn.access``: a static asset served (status < 400) is a DEBUG record, shown only
    when ``RAGD_LOG__LEVELS=uvicorn.access=DEBUG`` (or the root level) asks for it; API requests
    and every failed request stay at INFO."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if not isinstance(args, tuple) or len(args) != 5 or record.levelno != logging.INFO:
            return True  # not uvicorn's (client, method, path, http version, status) access line
        path, status = str(args[2]), args[4]
        if not isinstance(status, int) or status >= 400 or not path.startswith(QUIET_ACCESS_PREFIXES):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


def _route_uvicorn() -> None:
    """uvicorn's loggers lose their own handlers and levels and propagate to ours: one format."""
    for name in UVICORN_LOGGERS:
        logger = logging.getLogger(name)
        for own in list(logger.handlers):
            logger.removeHandler(own)
        logger.propagate = True
        logger.setLevel(logging.NOTSET)
        for old in [f for f in logger.filters if isinstance(f, QuietAssets)]:
            logger.removeFilter(old)
    logging.getLogger("uvicorn.access").addFilter(QuietAssets())


def configure_logging(settings: LogConfig, *, stream: TextIO | None = None) -> None:
    """Install ragd's handler on the root logger (replacing one installed earlier) and set levels.

    Everything is validated before anything changes; handlers installed by others are left alone.
    """
    if settings.format not in FORMATS:
        raise ConfigurationError(
            f"RAGD_LOG__FORMAT: unknown format {sanitize(settings.format)!r} (valid: {', '.join(FORMATS)})"
        )
    root_level = _parse_level(settings.level, "RAGD_LOG__LEVEL")
    levels = parse_levels(settings.levels)
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _RagdHandler)]:
        root.removeHandler(old)
        for name in old.namespaces:
            logging.getLogger(name).setLevel(logging.NOTSET)
        old.close()
    handler = _RagdHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if settings.format == "json" else TextFormatter())
    handler.namespaces = tuple(levels)
    root.addHandler(handler)
    root.setLevel(root_level)
    _route_uvicorn()
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
