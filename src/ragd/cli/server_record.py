"""Where a running server can be reached, recorded in its data dir so the CLI can find it.

``ragd serve`` (and ``demo --serve``, ``proxy``) holds the embedded index: no other process may open
it.  Once its index is open it writes ``<data_dir>/ragd.server.json``::

    {"pid": 4242, "url": "http://127.0.0.1:8000", "data_dir": "/abs/.ragd"}

and removes it when it stops cleanly.  The record holds no secret (the file is world-readable like
the rest of the data dir): a CLI that needs the API key reads it from the same settings as the
server (``RAGD_SERVER__API_KEY``, the environment or ``.env``).  A record is only a claim; the CLI
believes it when the process is alive and the address answers (:mod:`ragd.cli.remote`).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

RECORD_FILE = "ragd.server.json"
#: a wildcard bind is reached on loopback
_REACH = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


@dataclass(frozen=True, slots=True)
class ServerRecord:
    pid: int
    url: str
    data_dir: str


def server_url(host: str, port: int) -> str:
    """The address a local client reaches a server bound to ``host:port`` at."""
    host = _REACH.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def write_record(data_dir: Path, url: str) -> Path:
    """Record this process as the server of ``data_dir`` (atomically: a reader sees all or nothing)."""
    path = data_dir / RECORD_FILE
    record = {"pid": os.getpid(), "url": url, "data_dir": str(data_dir.resolve())}
    scratch = path.with_name(f".{RECORD_FILE}.{os.getpid()}")
    scratch.write_text(json.dumps(record) + "\n", encoding="utf-8")
    os.replace(scratch, path)
    log.debug("recorded the server address %s in %s", url, path)
    return path


def remove_record(data_dir: Path) -> None:
    """Remove the record if it is this process's (a later server's record is left alone)."""
    path = data_dir / RECORD_FILE
    record = read_record(data_dir)
    if record is not None and record.pid == os.getpid():
        path.unlink(missing_ok=True)


def read_record(data_dir: Path) -> ServerRecord | None:
    """The record in ``data_dir``, or None (none, unreadable, or not a record)."""
    try:
        data = json.loads((data_dir / RECORD_FILE).read_text(encoding="utf-8"))
        record = ServerRecord(pid=int(data["pid"]), url=str(data["url"]), data_dir=str(data["data_dir"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return record if record.url.startswith(("http://", "https://")) else None


def process_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True
