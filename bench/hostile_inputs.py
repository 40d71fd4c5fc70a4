"""Hostile inputs against a live ``ragd serve``: outcome, code, seconds and peak memory per case.

    python bench/hostile_inputs.py [--scale 1.0] [--cases "DOCX zip bomb,one line"] [--no-model-time]

Starts ``ragd serve`` on a loopback port with a fresh data dir, uploads every case of
``tests/support/hostile.py`` (generated here, nothing is downloaded) through ``PUT /api/v1/ingest``,
one at a time, and samples the resident memory of the server and of its extraction workers every
20 ms.  Then it measures fairness: a 5 KB file uploaded one second into the 5 MB one-line ingest,
and how long it waits.  Last, for the text cases, the model time of the same chunks (embedded bare,
in this process, after the server has stopped) and the ratio of the server's ingest time to it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.hostile import CASES, Case  # noqa: E402
from tests.support.processes import free_port, ragd, wait_ready  # noqa: E402

KEY = "hostile-bench-key-0123456789abcdef0123456789"
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mb(pid: int) -> float:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE / 1024 / 1024
    except (OSError, IndexError):
        return 0.0


def children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return out


class Sampler:
    """The peak RSS of the server alone, and of the server plus its worker processes."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.server = self.total = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            own = rss_mb(self.pid)
            self.server = max(self.server, own)
            self.total = max(self.total, own + sum(rss_mb(child) for child in children(self.pid)))
            time.sleep(0.02)


def upload(url: str, name: str, data: bytes, file_id: str) -> tuple[str, int, float]:
    """(outcome, chunks, seconds): outcome is "indexed" or the error's specific code."""
    started = time.perf_counter()
    response = httpx.put(
        f"{url}/api/v1/ingest",
        files={"file": (name, data)},
        data={"file_id": file_id, "filename": name, "collection_name": "hostile", "user_id": "bench"},
        headers={"Authorization": f"Bearer {KEY}"},
        timeout=1800,
    )
    seconds = time.perf_counter() - started
    body = response.json()
    if response.status_code == 200:
        return "indexed", int(body.get("chunks_count", 0)), seconds
    detail = body.get("detail", {})
    code = detail.get("reason") or detail.get("code") if isinstance(detail, dict) else str(detail)
    return f"{response.status_code} {code}", 0, seconds


def model_seconds(text: str) -> tuple[int, float]:
    """(chunks, seconds) to embed the chunks ragd makes of ``text`` with the bare model, in this process."""
    from ragd.bootstrap import open_services
    from ragd.settings import Settings
    from ragd.types import Document

    async def run() -> tuple[int, float]:
        async with open_services(Settings(data_dir=Path(tempfile.mkdtemp()))) as services:
            chunks = services.chunker.chunk(Document(text=text, extractor="text", mime_type="text/plain"))
            texts = [chunk.embedding_text() for chunk in chunks]
            await services.dense.embed_documents(texts[:16])  # warm-up
            started = time.perf_counter()
            await services.dense.embed_documents(texts)
            return len(texts), time.perf_counter() - started

    return asyncio.run(run())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--cases", help="comma-separated case names (default: all)")
    parser.add_argument("--no-model-time", action="store_true")
    args = parser.parse_args()
    wanted = set(args.cases.split(",")) if args.cases else None
    cases = [case for case in CASES if wanted is None or case.name in wanted]
    work = Path(tempfile.mkdtemp(prefix="ragd-hostile-"))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGD_")}
    env.update({"RAGD_DATA_DIR": str(work / "data"), "RAGD_SERVER__API_KEY": KEY, "HF_HUB_OFFLINE": "1"})
    log = (work / "serve.log").open("w")
    proc = ragd(["serve", "--port", str(port)], env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    timings: dict[str, tuple[Case, bytes, float]] = {}
    try:
        wait_ready(proc, url, output=(work / "serve.log").read_text)
        print(f"server pid {proc.pid}, idle RSS {rss_mb(proc.pid):.0f} MB")
        header = ("case", "size", "outcome", "chunks", "seconds", "server MB", "+workers")
        print("{:<22} {:>9} {:<26} {:>6} {:>8} {:>9} {:>8}".format(*header))
        for index, case in enumerate(cases):
            data = case.build(args.scale)
            with Sampler(proc.pid) as sampler:
                outcome, chunks, seconds = upload(url, case.filename, data, f"case-{index}")
            verdict = "" if outcome.split()[-1] in case.outcomes else "  UNEXPECTED"
            print(
                f"{case.name:<22} {len(data) / 1024 / 1024:>7.2f}MB {outcome:<26} {chunks:>6} {seconds:>8.1f}"
                f" {sampler.server:>9.0f} {sampler.total:>8.0f}{verdict}"
            )
            timings[case.name] = (case, data, seconds)
        fairness(url, args.scale)
    finally:
        proc.terminate()
        proc.wait(60)
    if not args.no_model_time:
        for name in ("one line", "no whitespace"):
            if name in timings and timings[name][0].outcomes == {"indexed"}:
                chunks, bare = model_seconds(timings[name][1].decode())
                served = timings[name][2]
                print(
                    f"{name}: {chunks} chunks, bare model {bare:.1f} s, served ingest {served:.1f} s, "
                    f"ratio {served / bare:.2f}"
                )
    return 0


def fairness(url: str, scale: float) -> None:
    """How long a 5 KB file waits when it arrives during a big ingest."""
    big = next(case for case in CASES if case.name == "one line").build(scale)
    small = ("A short note about the harbour tariff. " * 130).encode()
    result: dict[str, float] = {}

    def ingest_big() -> None:
        result["big"] = upload(url, "big.txt", big, "fair-big")[2]

    thread = threading.Thread(target=ingest_big)
    thread.start()
    time.sleep(1.0)
    outcome, _, seconds = upload(url, "small.txt", small, "fair-small")
    thread.join()
    print(
        f"fairness: a {len(small) / 1024:.0f} KB file during a {len(big) / 1024 / 1024:.1f} MB ingest: "
        f"{outcome} in {seconds:.2f} s (the big one took {result['big']:.1f} s)"
    )


if __name__ == "__main__":
    sys.exit(main())
