"""Served search throughput: ``POST /search`` against a live ``ragd serve`` at 100k chunks.

    python bench/served_throughput.py [--points 100000] [--data-dir DIR] [--clients 20] [--seconds 20]
                                      [--set RAGD_NAME=VALUE ...]

Builds (or reuses ``--data-dir``) an index of ``--points`` chunks in 50 collections: each chunk is
40 words drawn Zipf-style from ragd's own docs, embedded by the real all-MiniLM-L6-v2 and BM25,
stored through the real services (so ``ragd serve`` opens it as its own).  Queries are 6-word
draws from the same vocabulary, embedded by the server with the real model: the query lands where
real chunk embeddings are, so the HNSW walk is an honest one.  Then, against ``ragd serve`` on
loopback (default settings and any ``--set``, for the server and the in-process run alike; ``RAGD_*``
in the shell are ignored; hybrid, k=5, one collection per query, 5,000 distinct queries):

* one client, one request at a time: p50 / p99;
* ``--clients`` concurrent clients for ``--seconds``: requests per second, p50 / p99, errors, and
  the server's CPU meanwhile (cores busy, and milliseconds a request, from ``/proc``);
* the same ``--clients`` run with every client repeating queries from a pool of 50 (the cache);
* the distinct run again with httpx clients (what the load generator itself costs the cores);

and last, in this process after the server has stopped, the same queries through the search
pipeline (``Services.pipeline.run``, the start-up heap frozen as the server freezes its own): the
in-process p50 and the served/in-process ratio, then
``--clients`` concurrent tasks over the distinct queries for ``--seconds``: the in-process rate,
and the served distinct run's rate as a ratio to it.
The load generator shares the machine's cores with the server, as any loopback test does: the
concurrent runs use keep-alive connections that post pre-encoded requests (:class:`RawClient`,
~0.05 ms of CPU a request), as load generators written for the purpose do; httpx spends ~1 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from tests.support.processes import free_port, ragd, wait_ready  # noqa: E402

from ragd.bootstrap import open_services  # noqa: E402
from ragd.bootstrap.heap import freeze_startup_heap  # noqa: E402
from ragd.retrieve.pipeline import PipelineRequest  # noqa: E402
from ragd.settings import Settings  # noqa: E402
from ragd.types import PointFilter, StoredChunk  # noqa: E402
from search_latency import texts, vocabulary  # noqa: E402

KEY = "served-bench-key-0123456789abcdef0123456789"
TENANTS = 50


async def build(data_dir: Path, n: int) -> None:
    """``n`` chunks through the real embedders and store (skipped when the index holds them)."""
    async with open_services(Settings(data_dir=data_dir)) as services:
        have = await services.store.count(PointFilter())
        if have >= n:
            print(f"reusing {have} chunks in {data_dir}")
            return
        words = texts(n, vocabulary(), seed=11)
        assert services.sparse is not None
        started = time.perf_counter()
        for start in range(have, n, 1024):
            batch = words[start : start + 1024]
            dense = await services.dense.embed_documents(batch)
            sparse = services.sparse.embed_documents(batch)
            await services.store.upsert(
                [
                    StoredChunk(
                        id=str(uuid.UUID(int=start + i + 1)),
                        content=text,
                        meta={"collection_name": f"t{(start + i) % TENANTS}", "file_id": f"f{start + i}",
                              "name": f"f{start + i}.txt", "source": f"f{start + i}.txt"},
                        dense=dense[i],
                        sparse=sparse[i],
                    )
                    for i, text in enumerate(batch)
                ]
            )  # fmt: skip
            done = start + len(batch)
            rate = (done - have) / (time.perf_counter() - started)
            print(f"\r  {done}/{n} chunks, {rate:.0f}/s", end="", flush=True)
        await services.store.optimize()
        print(f"\nindexed {n - have} chunks in {time.perf_counter() - started:.0f} s")


def queries(count: int) -> list[dict[str, object]]:
    vocab = vocabulary()
    rng = np.random.default_rng(5)
    ranks = np.arange(1, len(vocab) + 1)
    p = (1 / ranks) / (1 / ranks).sum()
    return [
        {
            "queries": [" ".join(vocab[i] for i in rng.choice(len(vocab), 6, p=p))],
            "collection_names": [f"t{j % TENANTS}"],
            "k": 5,
        }
        for j in range(count)
    ]


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def summary(latencies: list[float], elapsed: float, errors: int) -> dict[str, float]:
    """A concurrent run: requests per second, p50 / p99 latency (ms), errors and requests."""
    return {
        "rps": len(latencies) / elapsed,
        "p50": statistics.median(latencies),
        "p99": pct(latencies, 0.99),
        "errors": errors,
        "requests": len(latencies),
    }


class RawClient:
    """One keep-alive HTTP/1.1 connection that posts pre-encoded requests: a load generator that
    costs the shared cores ~0.05 ms a request, where httpx costs ~1 ms (measured: the same server
    answered 264 req/s to 20 httpx clients; the table in docs/benchmarks.md has both)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, url: str) -> RawClient:
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        return cls(reader, writer)

    async def post(self, request: bytes) -> tuple[int, bytes]:
        self.writer.write(request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        return status, await self.reader.readexactly(length)

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


def encode(url: str, body: dict[str, object]) -> bytes:
    payload = json.dumps(body).encode()
    host = url.removeprefix("http://")
    head = (
        f"POST /search HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {KEY}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
    )
    return head.encode() + payload


async def load_raw(
    url: str, bodies: list[dict[str, object]], clients: int, seconds: float
) -> dict[str, float]:
    """As :func:`load`, with :class:`RawClient` connections (an empty result counts as an error)."""
    requests = [encode(url, body) for body in bodies]
    latencies: list[float] = []
    errors = 0
    stop = time.perf_counter() + seconds
    connections = [await RawClient.connect(url) for _ in range(clients)]

    async def one_client(connection: RawClient, offset: int) -> None:
        nonlocal errors
        i = offset
        while time.perf_counter() < stop:
            started = time.perf_counter()
            status, answer = await connection.post(requests[i % len(requests)])
            latencies.append((time.perf_counter() - started) * 1000)
            i += clients
            if status != 200 or answer.startswith(b'{"documents":[[]]'):
                errors += 1

    began = time.perf_counter()
    await asyncio.gather(*(one_client(c, n) for n, c in enumerate(connections)))
    elapsed = time.perf_counter() - began
    for connection in connections:
        await connection.close()
    return summary(latencies, elapsed, errors)


async def load(url: str, bodies: list[dict[str, object]], clients: int, seconds: float) -> dict[str, float]:
    """``clients`` loops posting the bodies round-robin for ``seconds``: rate, latency, errors."""
    latencies: list[float] = []
    errors = 0
    stop = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {KEY}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=30) as client:

        async def one_client(offset: int) -> None:
            nonlocal errors
            i = offset
            while time.perf_counter() < stop:
                body = bodies[i % len(bodies)]
                i += clients
                started = time.perf_counter()
                response = await client.post("/search", json=body)
                latencies.append((time.perf_counter() - started) * 1000)
                if response.status_code != 200 or not response.json()["documents"][0]:
                    errors += 1

        began = time.perf_counter()
        await asyncio.gather(*(one_client(c) for c in range(clients)))
        elapsed = time.perf_counter() - began
    return summary(latencies, elapsed, errors)


async def in_process(
    data_dir: Path,
    bodies: list[dict[str, object]],
    many: list[dict[str, object]],
    clients: int,
    seconds: float,
) -> tuple[float, dict[str, float]]:
    """The p50 of ``bodies`` one after another, then ``clients`` concurrent loops over ``many`` for
    ``seconds`` (the served distinct run's searches without HTTP): its rate and latencies."""
    async with open_services(Settings(data_dir=data_dir)) as services:
        freeze_startup_heap()  # as ``ragd serve`` does once ready: the same process tuning
        for body in bodies[-20:]:  # warm-up (queries not timed below)
            await services.pipeline.run(_request(body))
        times = []
        for body in bodies:
            started = time.perf_counter()
            await services.pipeline.run(_request(body))
            times.append((time.perf_counter() - started) * 1000)
        latencies: list[float] = []
        stop = time.perf_counter() + seconds

        async def one_client(offset: int) -> None:
            i = offset
            while time.perf_counter() < stop:
                request = _request(many[i % len(many)])
                i += clients
                began = time.perf_counter()
                await services.pipeline.run(request)
                latencies.append((time.perf_counter() - began) * 1000)

        began = time.perf_counter()
        await asyncio.gather(*(one_client(c) for c in range(clients)))
        return statistics.median(times), summary(latencies, time.perf_counter() - began, 0)


def server_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far; -1 where /proc is missing."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return -1.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _request(body: dict[str, object]) -> PipelineRequest:
    return PipelineRequest(
        collections=tuple(body["collection_names"]),  # type: ignore[arg-type]
        queries=tuple(body["queries"]),  # type: ignore[arg-type]
        k=int(body["k"]),  # type: ignore[call-overload]
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--data-dir", type=Path, help="keep the index here (reused when it is full)")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--single", type=int, default=400, help="requests of the one-client run")
    parser.add_argument(
        "--set", action="append", default=[], metavar="RAGD_NAME=VALUE",
        help="a setting for the server and the in-process run (repeatable), e.g. a knob to compare",
    )  # fmt: skip
    args = parser.parse_args()
    if bad := [item for item in args.set if not item.startswith("RAGD_") or "=" not in item]:
        parser.error(f"--set takes RAGD_NAME=VALUE, not {', '.join(bad)}")
    overrides = dict(item.split("=", 1) for item in args.set)
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="ragd-served-"))
    asyncio.run(build(data_dir, args.points))
    bodies = queries(5_000)  # more than the query cache holds: the distinct runs never hit it
    repeated = bodies[:50]

    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGD_")}
    env.update({"RAGD_DATA_DIR": str(data_dir), "RAGD_SERVER__API_KEY": KEY, "RAGD_LOG__LEVEL": "WARNING"})
    env.update(overrides)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = data_dir / "serve.log"
    with log_path.open("w") as log:
        proc = ragd(["serve", "--port", str(port)], env, stdout=log, stderr=log)
    try:
        wait_ready(proc, url, output=log_path.read_text)
        asyncio.run(load(url, bodies[:50], 4, 3.0))  # warm-up
        single = asyncio.run(load_n(url, bodies, args.single))
        cpu_before, began = server_cpu_s(proc.pid), time.perf_counter()
        many = asyncio.run(load_raw(url, bodies, args.clients, args.seconds))
        cpu_used, wall = server_cpu_s(proc.pid) - cpu_before, time.perf_counter() - began
        cached = asyncio.run(load_raw(url, repeated, args.clients, args.seconds / 2))
        with_httpx = asyncio.run(load(url, bodies[::-1], args.clients, args.seconds))
    finally:
        proc.terminate()
        proc.wait(60)
    for name in [k for k in os.environ if k.startswith("RAGD_")]:  # in process: as the server ran
        del os.environ[name]
    os.environ.update(overrides)
    inproc, inproc_many = asyncio.run(
        in_process(data_dir, bodies[: args.single], bodies, args.clients, args.seconds)
    )
    print(f"{args.points} chunks, {TENANTS} collections, hybrid k=5, {os.cpu_count()} cores")
    print(
        f"one client: p50 {single['p50']:.2f} ms, p99 {single['p99']:.2f} ms ({single['requests']} requests)"
    )
    runs = (
        ("distinct queries", many),
        ("50 repeated queries", cached),
        ("distinct queries, httpx clients", with_httpx),
    )
    for name, r in runs:
        print(
            f"{args.clients} clients, {name}: {r['rps']:.0f} req/s, p50 {r['p50']:.1f} ms, "
            f"p99 {r['p99']:.1f} ms, {r['errors']:.0f} errors / {r['requests']:.0f}"
        )
    if cpu_used >= 0:
        print(
            f"server CPU in the distinct run: {cpu_used / wall:.2f} cores, "
            f"{cpu_used / many['requests'] * 1000:.2f} ms a request"
        )
    print(f"in process (pipeline.run): p50 {inproc:.2f} ms; one served client / in process: "
          f"{single['p50'] / inproc:.2f}")  # fmt: skip
    print(
        f"in process, {args.clients} concurrent tasks, distinct queries: "
        f"{inproc_many['rps']:.0f} searches/s, p50 {inproc_many['p50']:.1f} ms; "
        f"served / in process: {many['rps'] / inproc_many['rps']:.2f}"
    )
    return 0


async def load_n(url: str, bodies: list[dict[str, object]], n: int) -> dict[str, float]:
    """One client, ``n`` requests back to back."""
    latencies = []
    headers = {"Authorization": f"Bearer {KEY}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
        for body in bodies[:n]:
            started = time.perf_counter()
            response = await client.post("/search", json=body)
            latencies.append((time.perf_counter() - started) * 1000)
            response.raise_for_status()
    return {"p50": statistics.median(latencies), "p99": pct(latencies, 0.99), "requests": len(latencies)}


if __name__ == "__main__":
    sys.exit(main())
