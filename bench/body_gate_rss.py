"""What a request without a valid key costs the server: RSS growth for eight parallel 16 MiB bodies.

    python bench/body_gate_rss.py [--mib 16] [--parallel 8] [--routes /search,/ui/session]

Starts ``ragd serve`` on a loopback port with a service key, a fresh data dir and a chat upstream
named (never called: every request here is refused), so the chat proxy's routes exist.  For every
route class that reads a body (the web UI's sign-in, the model endpoints, the chat proxy, the plain
search, the dataset API, the ingestion service, MCP) and every kind of missing key (none, a wrong
key, a made-up tenant key ``rgd_…``), it sends ``--parallel`` requests at once, each declaring and
sending ``--mib`` MiB of JSON (multipart for the ingest), and samples the server's resident memory
every 20 ms.  Growth is the batch's peak minus the RSS just before it.  The target (issue 30 §1.2):
under 50 MB on every row, each answer a 401 (413 on the sign-in, which takes no key) that arrives
before the body is read.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.processes import free_port, ragd, wait_ready  # noqa: E402

from hostile_inputs import Sampler, rss_mb  # noqa: E402

KEY = "gate-bench-key-0123456789abcdef0123456789"
PAGE = os.sysconf("SC_PAGE_SIZE")
TARGET_MB = 50.0
PIECE = 64 * 1024

#: (method, path, content type, the JSON field the body fills)
ROUTES = [
    ("POST", "/ui/session", "application/json", "key"),
    ("POST", "/v1/embeddings", "application/json", "input"),
    ("POST", "/v1/chat/completions", "application/json", "model"),
    ("POST", "/api/v1/search", "application/json", "query"),
    ("POST", "/search", "application/json", "queries"),
    ("POST", "/api/v1/datasets", "application/json", "name"),
    ("PUT", "/api/v1/ingest", "multipart/form-data; boundary=x", ""),
    ("POST", "/mcp", "application/json", "method"),
]
KEYS = {
    "no key": None,
    "wrong key": "wrong-key-0123456789abcdef0123456789",
    "made-up rgd_ key": "rgd_" + "A" * 43,
}


@dataclass
class Answer:
    status: str = "no answer"
    sent_mib: float = 0.0
    #: when the answer's first bytes arrived (perf_counter), not when the sender thread let go
    answered_at: float = 0.0


def one_request(
    port: int, method: str, path: str, ctype: str, field: str, key: str | None, size: int
) -> Answer:
    """Send the head and then the body in 64 KiB pieces from a second thread; read the status line."""
    head = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", f"Content-Type: {ctype}"]
    if key is not None:
        head.append(f"Authorization: Bearer {key}")
    head.append(f"Content-Length: {size}")
    if field:
        opening = b'{"' + field.encode() + b'": "'
        closing = b'"}'
    else:
        opening = b'--x\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\n'
        closing = b"\r\n--x--\r\n"
    answer = Answer()
    sock = socket.create_connection(("127.0.0.1", port), timeout=120)

    def send() -> None:
        try:
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + opening)
            sent, filler = len(opening), b"a" * PIECE
            while sent < size - len(closing):
                piece = filler[: min(PIECE, size - len(closing) - sent)]
                sock.sendall(piece)
                sent += len(piece)
                answer.sent_mib = sent / 2**20
            sock.sendall(closing)
        except OSError:
            pass  # the server answered and closed without reading the rest: what the gate should do

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        answer.status = sock.recv(4096).decode("latin-1").split("\r\n", 1)[0].removeprefix("HTTP/1.1 ")
        answer.answered_at = time.perf_counter()
    except OSError as exc:
        answer.status = type(exc).__name__
    finally:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)  # wakes the sender blocked in sendall
        sock.close()
        sender.join(timeout=30)
    return answer


def batch(
    port: int, pid: int, route: tuple[str, str, str, str], key: str | None, n: int, size: int
) -> dict[str, Any]:
    method, path, ctype, field = route
    answers = [Answer() for _ in range(n)]
    before = rss_mb(pid)
    started = time.perf_counter()
    with Sampler(pid) as peak:
        threads = [
            threading.Thread(
                target=lambda i=i: answers.__setitem__(
                    i, one_request(port, method, path, ctype, field, key, size)
                )
            )
            for i in range(n)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return {
        "growth": max(0.0, peak.server - before),
        # until the last answer arrived (a sender blocked in sendall may take longer to let go)
        "seconds": max((a.answered_at or time.perf_counter()) for a in answers) - started,
        "statuses": sorted({a.status.split(" ")[0] for a in answers}),
        "sent": max(a.sent_mib for a in answers),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=int, default=16)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--routes", default="", help="comma list of paths (default: all)")
    args = parser.parse_args()
    wanted = set(filter(None, args.routes.split(",")))
    routes = [r for r in ROUTES if not wanted or r[1] in wanted]
    size = args.mib * 2**20
    with tempfile.TemporaryDirectory(prefix="ragd-gate-bench-") as tmp:
        work, port = Path(tmp), free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAGD_")}
        env.update(
            {
                "RAGD_DATA_DIR": str(work / "data"),
                "RAGD_SERVER__API_KEY": KEY,
                "RAGD_LLM__BASE_URL": "http://127.0.0.1:9/v1",
                "HF_HUB_OFFLINE": "1",
            }
        )
        with (work / "serve.log").open("w") as log:
            proc = ragd(["serve", "--port", str(port)], env, stdout=log, stderr=log)
        try:
            wait_ready(proc, f"http://127.0.0.1:{port}", output=(work / "serve.log").read_text)
            print(
                f"server pid {proc.pid}, RSS at rest {rss_mb(proc.pid):.0f} MB;"
                f" {args.parallel} x {args.mib} MiB"
            )
            print(f"{'route':<28} {'key':<18} {'answers':<10} {'growth MB':>9} {'s':>6} {'MiB sent':>9}")
            worst = 0.0
            for route in routes:
                for name, key in KEYS.items():
                    row = batch(port, proc.pid, route, key, args.parallel, size)
                    worst = max(worst, row["growth"])
                    label = f"{route[0]} {route[1]}"
                    print(
                        f"{label:<28} {name:<18} {','.join(row['statuses']):<10} {row['growth']:>9.1f}"
                        f" {row['seconds']:>6.2f} {row['sent']:>9.1f}"
                    )
            verdict = "under" if worst < TARGET_MB else "OVER"
            print(f"worst growth {worst:.1f} MB: {verdict} the {TARGET_MB:.0f} MB target")
        finally:
            proc.terminate()
            proc.wait(timeout=60)


if __name__ == "__main__":
    main()
