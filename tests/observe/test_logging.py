"""Log formats, levels, uvicorn routing and the log-forging defence."""

from __future__ import annotations

import io
import json
import logging
import re
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Literal

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragd.api.app import create_app
from ragd.errors import ConfigurationError
from ragd.observe.logging import (
    UVICORN_LOGGERS,
    JsonFormatter,
    TextFormatter,
    configure_logging,
    parse_levels,
    sanitize,
)
from ragd.settings import EmbeddingSettings, LogSettings, Settings
from tests.support.live_server import LiveServer

TEXT_LINE = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (?P<level>[A-Z]+) (?P<logger>\S+): (?P<rest>.*)$"
)
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # everything str.splitlines() splits on

Configure = Callable[..., io.StringIO]


def _ours(handler: logging.Handler) -> bool:
    return type(handler).__module__ == configure_logging.__module__


@pytest.fixture
def configure() -> Iterator[Configure]:
    """configure_logging into a buffer; afterwards every logger is put back as it was."""
    root = logging.getLogger()
    root_level = root.level
    saved = {
        name: (lg.level, lg.propagate, list(lg.handlers), lg.disabled)
        for name, lg in logging.Logger.manager.loggerDict.items()
        if isinstance(lg, logging.Logger)
    }

    def run(fmt: Literal["text", "json"] = "text", level: str = "DEBUG", levels: str = "") -> io.StringIO:
        stream = io.StringIO()
        configure_logging(LogSettings(format=fmt, level=level, levels=levels), stream=stream)
        return stream

    yield run
    for handler in [h for h in root.handlers if _ours(h)]:
        root.removeHandler(handler)
        handler.close()
    root.setLevel(root_level)
    for name, lg in logging.Logger.manager.loggerDict.items():
        if not isinstance(lg, logging.Logger):
            continue
        level, propagate, handlers, disabled = saved.get(name, (logging.NOTSET, True, [], False))
        lg.setLevel(level)
        lg.propagate, lg.handlers[:], lg.disabled = propagate, handlers, disabled


def _lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def _record(**fields: object) -> logging.LogRecord:
    base: dict[str, object] = {
        "name": "ragd.api",
        "levelname": "INFO",
        "levelno": logging.INFO,
        "msg": "message",
        "created": 1795338000.123,  # 2026-11-22T09:00:00.123Z
        "msecs": 123.0,
    }
    return logging.makeLogRecord(base | fields)


# --- text format -------------------------------------------------------------------------------


def test_text_line_has_the_documented_shape() -> None:
    assert TextFormatter().format(_record()) == "2026-11-22T09:00:00.123Z INFO ragd.api: message"


def test_text_line_through_the_handler(configure: Configure) -> None:
    stream = configure()
    logging.getLogger("ragd.api").info("searched %d collections", 2)
    [line] = _lines(stream)
    match = TEXT_LINE.match(line)
    assert match
    assert match.groupdict() == {"level": "INFO", "logger": "ragd.api", "rest": "searched 2 collections"}


def test_text_extras_are_key_value_pairs(configure: Configure) -> None:
    stream = configure()
    extra = {"chunks": 3, "collection": "docs", "file": "my report.pdf", "empty": "", "path": Path("a/b")}
    logging.getLogger("ragd.ingest").info("ingested", extra=extra)
    [line] = _lines(stream)
    assert line.endswith(': ingested chunks=3 collection=docs file="my report.pdf" empty="" path=a/b')


def test_text_exception_follows_on_indented_lines(configure: Configure) -> None:
    stream = configure()
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("ragd.api").exception("request failed", extra={"status": 500})
    first, *rest = _lines(stream)
    assert TEXT_LINE.match(first)
    assert first.endswith("ERROR ragd.api: request failed status=500")
    assert rest[0] == "    Traceback (most recent call last):"
    assert rest[-1] == "    ValueError: boom"
    assert all(line.startswith("    ") for line in rest)


def test_text_stack_info_is_rendered_like_a_traceback(configure: Configure) -> None:
    stream = configure()
    logging.getLogger("ragd").warning("here", stack_info=True)
    first, *rest = _lines(stream)
    assert first.endswith("WARNING ragd: here")
    assert rest[0] == "    Stack (most recent call last):"
    assert all(line.startswith("    ") for line in rest)


def test_default_stream_is_stderr(configure: Configure, capsys: pytest.CaptureFixture[str]) -> None:
    configure()  # installs the fixture's handler; the call below replaces it
    configure_logging(LogSettings(level="INFO"))
    logging.getLogger("ragd").info("to stderr")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.endswith(" INFO ragd: to stderr\n")


# --- JSON lines --------------------------------------------------------------------------------


def test_json_line_has_the_documented_shape() -> None:
    assert json.loads(JsonFormatter().format(_record())) == {
        "ts": "2026-11-22T09:00:00.123Z",
        "level": "INFO",
        "logger": "ragd.api",
        "message": "message",
    }


def test_json_line_through_the_handler_with_extras(configure: Configure) -> None:
    stream = configure("json")
    extra = {"chunks": 3, "file": "ü.pdf", "path": Path("a/b"), "ts": "caller's", "tags": ["x"]}
    logging.getLogger("ragd.ingest").warning("ingested %s", "ü.pdf", extra=extra)
    [line] = _lines(stream)
    body = json.loads(line)
    assert TS.match(body.pop("ts"))
    assert body == {
        "level": "WARNING",
        "logger": "ragd.ingest",
        "message": "ingested ü.pdf",
        "chunks": 3,
        "file": "ü.pdf",
        "path": "a/b",
        "ts_": "caller's",
        "tags": ["x"],
    }
    assert "ü" in line  # readable, not \u00fc


def test_json_exception_is_one_line_with_exc(configure: Configure) -> None:
    stream = configure("json")
    try:
        raise KeyError("missing")
    except KeyError:
        logging.getLogger("ragd.api").error("failed", exc_info=True)
    [line] = _lines(stream)
    body = json.loads(line)
    assert body["message"] == "failed"
    assert body["exc"].startswith("Traceback (most recent call last):\n")
    assert body["exc"].endswith("KeyError: 'missing'")


def test_json_has_no_exc_key_without_exception(configure: Configure) -> None:
    stream = configure("json")
    logging.getLogger("ragd").info("fine")
    assert "exc" not in json.loads(stream.getvalue())


# --- levels ------------------------------------------------------------------------------------


def test_root_level_filters(configure: Configure) -> None:
    stream = configure(level="WARNING")
    log = logging.getLogger("ragd.x")
    log.info("dropped")
    log.warning("kept")
    assert [line.split(": ", 1)[1] for line in _lines(stream)] == ["kept"]


def test_namespace_levels_filter_the_namespace_and_its_children(configure: Configure) -> None:
    stream = configure(level="info", levels=" ragd.api = DEBUG , uvicorn.access=warning,")
    logging.getLogger("ragd.api.routes").debug("api debug")
    logging.getLogger("ragd.retrieve").debug("retrieve debug")
    logging.getLogger("ragd.retrieve").info("retrieve info")
    logging.getLogger("uvicorn.access").info("GET / 200")
    logging.getLogger("uvicorn.access").warning("GET / 500")
    assert [line.split(": ", 1)[1] for line in _lines(stream)] == ["api debug", "retrieve info", "GET / 500"]


def test_parse_levels() -> None:
    assert parse_levels("") == {}
    assert parse_levels("a=DEBUG, b.c = warning ,") == {"a": logging.DEBUG, "b.c": logging.WARNING}


@pytest.mark.parametrize(
    ("levels", "named"),
    [
        ("ragd.api=LOUD", "'ragd.api=LOUD'"),
        ("ragd.api=DEBUG,ragd", "'ragd'"),
        ("=DEBUG", "'=DEBUG'"),
        ("ragd api=DEBUG", "'ragd api=DEBUG'"),
        ("ragd.api=", "'ragd.api='"),
        ("ragd.api=10", "'ragd.api=10'"),
        ("a=DEBUG,a=INFO", "'a=INFO'"),
    ],
)
def test_bad_namespace_levels_are_refused(configure: Configure, levels: str, named: str) -> None:
    with pytest.raises(ConfigurationError) as error:
        configure(levels=levels)
    message = str(error.value)
    assert named in message
    assert "RAGD_LOG__LEVELS" in message
    if "twice" not in message:
        assert "CRITICAL, ERROR, WARNING, INFO, DEBUG, NOTSET" in message
    assert not [h for h in logging.getLogger().handlers if _ours(h)]  # nothing half-configured


def test_bad_root_level_is_refused(configure: Configure) -> None:
    with pytest.raises(ConfigurationError, match=r"RAGD_LOG__LEVEL: unknown log level 'LOUD' \(valid levels"):
        configure(level="LOUD")


def test_unknown_format_is_refused(configure: Configure) -> None:
    configure()  # the fixture restores whatever this test changes
    config = SimpleNamespace(format="xml", level="INFO", levels="")  # LogSettings itself refuses it earlier
    with pytest.raises(
        ConfigurationError, match=r"RAGD_LOG__FORMAT: unknown format 'xml' \(valid: text, json\)"
    ):
        configure_logging(config)


def test_forged_level_spec_is_sanitised_in_the_error(configure: Configure) -> None:
    with pytest.raises(ConfigurationError) as error:
        configure(levels="a=\nERROR forged")
    assert "\n" not in str(error.value)


# --- idempotence and uvicorn -------------------------------------------------------------------


def test_configuring_twice_keeps_one_handler(configure: Configure) -> None:
    configure(levels="ragd.api=ERROR")
    stream = configure("json", levels="ragd.ingest=ERROR")
    assert len([h for h in logging.getLogger().handlers if _ours(h)]) == 1
    logging.getLogger("ragd.api").info("api")  # the first call's level is gone
    logging.getLogger("ragd.ingest").info("ingest")
    assert [json.loads(line)["message"] for line in _lines(stream)] == ["api"]


def test_uvicorn_loggers_propagate_to_our_handler(configure: Configure) -> None:
    own = logging.StreamHandler(io.StringIO())
    for name in UVICORN_LOGGERS:
        logger = logging.getLogger(name)
        logger.addHandler(own)
        logger.propagate = False
        logger.setLevel(logging.CRITICAL)
    stream = configure(level="INFO")
    for name in UVICORN_LOGGERS:
        logger = logging.getLogger(name)
        assert (logger.handlers, logger.propagate, logger.level) == ([], True, logging.NOTSET)
    logging.getLogger("uvicorn.error").info(
        "Started server process [%d]",
        42,
        extra={"color_message": "Started server process [\x1b[36m%d\x1b[0m]"},
    )
    logging.getLogger("uvicorn.access").info(
        '%s - "%s %s HTTP/%s" %d', "127.0.0.1:5", "GET", "/health", "1.1", 200
    )
    lines = _lines(stream)
    assert [line.split(" ", 1)[1] for line in lines] == [
        "INFO uvicorn.error: Started server process [42]",
        'INFO uvicorn.access: 127.0.0.1:5 - "GET /health HTTP/1.1" 200',
    ]
    assert own.stream.getvalue() == ""


# --- log forging -------------------------------------------------------------------------------

FORGERIES = [
    ("x\nERROR ragd: forged", r"x\nERROR ragd: forged"),
    ("x\r2026-01-01T00:00:00.000Z ERROR ragd: forged", r"x\r2026-01-01T00:00:00.000Z ERROR ragd: forged"),
    ("\x1b[31mred\x1b[0m", r"\x1b[31mred\x1b[0m"),
    ("a\u2028b\u2029c", r"a\u2028b\u2029c"),
    ("nul\x00byte", r"nul\x00byte"),
    ("nel\x85vt\x0bff\x0c", r"nel\x85vt\x0bff\x0c"),
    ("bidi\u202egnp.exe", r"bidi\u202egnp.exe"),
]


def _assert_one_clean_line(output: str) -> str:
    assert output.endswith("\n")
    line = output[:-1]
    assert not [c for c in line if unicodedata.category(c) == "Cc" or c in LINE_BREAKS]
    assert len(output.splitlines()) == 1
    return line


@pytest.mark.parametrize(("evil", "shown"), FORGERIES)
def test_text_format_escapes_forgery_everywhere(configure: Configure, evil: str, shown: str) -> None:
    stream = configure()
    log = logging.getLogger("ragd.api")
    log.warning(evil)
    log.warning("file %s", evil)
    log.warning("extra", extra={"file": evil, evil: 1})
    logging.getLogger(evil).warning("name")
    lines = [_assert_one_clean_line(line + "\n") for line in stream.getvalue().split("\n")[:-1]]
    assert len(lines) == 4
    assert lines[0].endswith(f"WARNING ragd.api: {shown}")
    assert lines[1].endswith(f"WARNING ragd.api: file {shown}")
    assert f" {shown}=1" in lines[2]
    assert shown in lines[2].split(" file=", 1)[1]
    assert f" WARNING {shown}: name" in lines[3]


@pytest.mark.parametrize(("evil", "_shown"), FORGERIES)
def test_json_format_escapes_forgery_everywhere(configure: Configure, evil: str, _shown: str) -> None:
    stream = configure("json")
    logging.getLogger("ragd.api").warning("file %s", evil, extra={"file": evil})
    line = _assert_one_clean_line(stream.getvalue())
    body = json.loads(line)
    assert (body["message"], body["file"]) == (f"file {evil}", evil)


def test_exception_message_cannot_forge_a_record(configure: Configure) -> None:
    stream = configure()
    try:
        raise ValueError("bad name x\n2026-01-01T00:00:00.000Z ERROR ragd: forged\x1b[2J\r")
    except ValueError:
        logging.getLogger("ragd").exception("failed")
    first, *rest = stream.getvalue().splitlines()
    assert TEXT_LINE.match(first)
    assert rest
    assert all(line.startswith("    ") for line in rest)  # nothing after the first line starts a record
    assert "\x1b" not in stream.getvalue()
    assert "\r" not in stream.getvalue()


# --- sanitize ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain text", "plain text"),
        ("report.pdf\nERROR ragd: forged", r"report.pdf\nERROR ragd: forged"),
        ("a\rb\tc", r"a\rb\tc"),
        ("\x1b[31mred", r"\x1b[31mred"),
        ("nul\x00 del\x7f nel\x85 csi\x9b", r"nul\x00 del\x7f nel\x85 csi\x9b"),
        ("line\u2028para\u2029", r"line\u2028para\u2029"),
        ("rlo\u202e lri\u2066", r"rlo\u202e lri\u2066"),
        ("ünïcödé ✓ 文字", "ünïcödé ✓ 文字"),
        ("back\\slash", "back\\slash"),
        (42, "42"),
        (Path("a/b.pdf"), "a/b.pdf"),
        (None, "None"),
        ("", ""),
    ],
)
def test_sanitize_table(value: object, expected: str) -> None:
    assert sanitize(value) == expected


@pytest.mark.parametrize(
    ("value", "limit", "expected"),
    [
        ("abcdef", 6, "abcdef"),
        ("abcdefg", 6, "abcdef…"),
        ("abc\ndef", 4, "abc…"),  # the escape does not fit: cut before it, never inside it
        ("abc\ndef", 5, r"abc\n…"),
        ("\x1bxyz", 3, "…"),
        ("x", 0, "…"),
        ("", 0, ""),
    ],
)
def test_sanitize_truncates_between_escapes(value: str, limit: int, expected: str) -> None:
    assert sanitize(value, limit=limit) == expected


def test_sanitize_default_limit_is_200() -> None:
    assert sanitize("x" * 500) == "x" * 200 + "…"


def test_sanitize_refuses_a_negative_limit() -> None:
    with pytest.raises(ValueError, match="limit"):
        sanitize("x", limit=-1)


UNSAFE_CHARS = st.sampled_from(
    ["\n", "\r", "\x00", "\x1b", "\x7f", "\x85", "\x9b", "\u2028", "\u2029", "\u202e"]
)


@given(
    value=st.lists(st.one_of(st.text(max_size=5), UNSAFE_CHARS), max_size=60).map("".join),
    limit=st.integers(min_value=0, max_value=120),
)
def test_sanitize_output_is_one_bounded_printable_line(value: str, limit: int) -> None:
    out = sanitize(value, limit=limit)
    assert len(out) <= limit + 1
    assert not [c for c in out if unicodedata.category(c) == "Cc" or c in LINE_BREAKS or c in "\u202e"]
    assert len(out.splitlines()) <= 1
    if len(out) <= limit and not out.endswith("…"):
        assert out == sanitize(value, limit=10**6)  # not truncated: nothing was lost


# --- the access log: the web UI's assets at DEBUG -----------------------------------------------


def _access_lines(stream: io.StringIO) -> list[tuple[str, str]]:
    """(level, request line) of every uvicorn access record written."""
    found = []
    for line in _lines(stream):
        matched = TEXT_LINE.match(line)
        if matched and matched["logger"] == "uvicorn.access":
            found.append((matched["level"], matched["rest"].split('"')[1]))
    return found


@pytest.mark.parametrize("levels", ["", "uvicorn.access=DEBUG"])
def test_static_assets_are_logged_at_debug_and_api_requests_at_info(
    configure: Configure, tmp_path: Path, model_cache: Path, levels: str
) -> None:
    """A page load fetches a dozen assets: served from a real uvicorn, they stay out of an INFO log."""
    stream = configure(level="INFO", levels=levels)
    settings = Settings(data_dir=tmp_path, embedding=EmbeddingSettings(cache_dir=model_cache))
    with LiveServer(create_app(settings)) as server, httpx.Client(base_url=server.url) as http:
        assert http.get("/ui/static/js/app.js").status_code == 200
        assert http.get("/ui/static/favicon.svg").status_code == 200
        assert http.get("/ui/static/js/no-such-file.js").status_code == 404
        assert http.get("/health").status_code in (200, 503)
        assert http.get("/ui/").status_code == 200
    assets = [
        ("DEBUG", "GET /ui/static/js/app.js HTTP/1.1"),
        ("DEBUG", "GET /ui/static/favicon.svg HTTP/1.1"),
    ]
    rest = [
        ("INFO", "GET /ui/static/js/no-such-file.js HTTP/1.1"),  # a failure stays visible
        ("INFO", "GET /health HTTP/1.1"),
        ("INFO", "GET /ui/ HTTP/1.1"),
    ]
    assert _access_lines(stream) == (assets if levels else []) + rest
