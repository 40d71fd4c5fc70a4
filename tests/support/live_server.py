"""Run a ragd app under a real uvicorn server on a loopback port, in a background thread.

Clients in tests then speak real HTTP to it (``requests`` as Open WebUI does,
``httpx``, the ``openai`` SDK) and the app's lifespan runs as in production.
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType

import httpx
import uvicorn
from fastapi import FastAPI

from ragd.api.slow_clients import server_config


class LiveServer:
    def __init__(self, app: FastAPI, *, ready_timeout_s: float = 120.0) -> None:
        self.app = app
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        # as ragd serve runs it: the header deadline and the connection bounds of its settings
        server = app.state.ragd.settings.server
        config = server_config(app, server, log_config=None, lifespan="on", timeout_graceful_shutdown=5)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )
        self._ready_timeout_s = ready_timeout_s

    def __enter__(self) -> LiveServer:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def wait_ready(self) -> None:
        """Poll ``/health/ready`` until 200, as the conformance harness does."""
        deadline = time.monotonic() + self._ready_timeout_s
        with httpx.Client(base_url=self.url, timeout=5) as client:
            while True:
                if client.get("/health/ready").status_code == 200:
                    return
                state = self.app.state.ragd
                if state.startup_error is not None:
                    raise RuntimeError(f"ragd failed to start: {state.startup_error}")
                if time.monotonic() > deadline:
                    raise TimeoutError("ragd did not become ready")
                time.sleep(0.05)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)
        self._sock.close()
