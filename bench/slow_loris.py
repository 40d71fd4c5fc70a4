"""Slow-loris against a real ``ragd serve``: how long half-sent requests hold their connections, and
what a normal client sees meanwhile.

    python bench/slow_loris.py [--connections 50] [--header-timeout 5] [--max-incomplete 100] [--hold 20]

Starts ``ragd serve`` on a loopback port (a fresh data dir, no key), waits until it is ready, and
times ``GET /health`` from a normal client (new connection each time) at rest.  Then it opens
``--connections`` connections that each send half a request head and then one more header byte
every second, as slow-loris does, and for ``--hold`` seconds counts how many the server still holds
open and times ``GET /health`` again.  Reported: the normal client's median at rest and under the
attack (and their ratio, same run), how many attack connections were open after 1 s and at the end,
and when the last one was closed.  Before issue 30 §1.9 every one stayed open for as long as it
trickled; now each is closed ``RAGD_SERVER__HEADER_TIMEOUT_S`` after it opened, and beyond
``RAGD_SERVER__MAX_INCOMPLETE_REQUESTS`` the oldest are closed at once.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.processes import free_port, ragd, wait_ready  # noqa: E402


def health_ms(url: str, samples: int) -> list[float]:
    """``samples`` timings of ``GET /health``, each on a new connection (ms); a failure counts as 10 s."""
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        try:
            ok = httpx.get(f"{url}/health", timeout=10).status_code == 200
        except httpx.HTTPError:
            ok = False
        times.append((time.perf_counter() - started) * 1000 if ok else 10_000.0)
        time.sleep(0.05)
    return times


def still_open(sock: socket.socket) -> bool:
    """Send one more header byte; False once the server has closed the connection."""
    try:
        sock.sendall(b"a")
        sock.setblocking(False)
        try:
            return sock.recv(1) != b""
        except BlockingIOError:
            return True
        finally:
            sock.setblocking(True)
    except OSError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--header-timeout", type=float, default=5.0)
    parser.add_argument("--max-incomplete", type=int, default=100)
    parser.add_argument("--hold", type=float, default=20.0, help="seconds the attack lasts")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ragd-loris-bench-") as tmp:
        work, port = Path(tmp), free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAGD_")}
        env.update(
            {
                "RAGD_DATA_DIR": str(work / "data"),
                "RAGD_SERVER__HEADER_TIMEOUT_S": str(args.header_timeout),
                "RAGD_SERVER__MAX_INCOMPLETE_REQUESTS": str(args.max_incomplete),
                "HF_HUB_OFFLINE": "1",
            }
        )
        url = f"http://127.0.0.1:{port}"
        with (work / "serve.log").open("w") as log:
            proc = ragd(["serve", "--port", str(port)], env, stdout=log, stderr=log)
        try:
            wait_ready(proc, url, output=(work / "serve.log").read_text)
            idle = health_ms(url, 20)
            socks = []
            for _ in range(args.connections):
                sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                sock.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode())
                socks.append(sock)
            started = time.monotonic()
            open_after_1s, last_closed, loaded = None, None, []
            while (elapsed := time.monotonic() - started) < args.hold:
                alive = [s for s in socks if still_open(s)]
                if open_after_1s is None and elapsed >= 1:
                    open_after_1s = len(alive)
                if not alive and last_closed is None:
                    last_closed = elapsed
                loaded += health_ms(url, 3)
                time.sleep(max(0.0, 1 - (time.monotonic() - started - elapsed)))
            at_end = sum(still_open(s) for s in socks)
            for sock in socks:
                sock.close()
            p50_idle, p50_loaded = statistics.median(idle), statistics.median(loaded)
            print(
                f"{args.connections} slow-loris connections, header timeout {args.header_timeout:g} s,"
                f" max incomplete {args.max_incomplete}, attack {args.hold:g} s"
            )
            print(f"open after 1 s: {open_after_1s}; open at the end: {at_end}")
            closed = f"{last_closed:.1f} s" if last_closed is not None else "never (within the attack)"
            print(f"all closed after: {closed}")
            print(
                f"GET /health p50 at rest {p50_idle:.1f} ms, under attack {p50_loaded:.1f} ms"
                f" ({p50_loaded / p50_idle:.2f}x); failures under attack:"
                f" {sum(t >= 10_000 for t in loaded)}/{len(loaded)}"
            )
        finally:
            proc.terminate()
            proc.wait(timeout=60)


if __name__ == "__main__":
    main()
