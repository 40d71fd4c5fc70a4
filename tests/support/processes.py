"""``ragd`` as a separate process, the way users start it: a free port, the command, and waiting
until it answers ``/health/ready`` (or failing with what it printed)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ragd(args: list[str], env: dict[str, str], **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-m", "ragd.cli.app", *args], env=env, text=True, **kwargs
    )


def wait_ready(
    proc: subprocess.Popen[str], url: str, *, timeout_s: float = 120.0, output: Callable[[], str] = str
) -> None:
    """Poll ``url``/health/ready until 200; fail if the process exits or the time runs out."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(f"{url}/health/ready").status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert proc.poll() is None, f"ragd serve exited early: {output()[-3000:]}"
        assert time.monotonic() < deadline, "not ready in time"
        time.sleep(0.1)
