"""A live dataset's migration: its throughput against a plain ingest, and search while it runs.

    python bench/migration.py ../shared/datasets/scifact [--docs 1600] [--size 128] [--rate 5]

Against a real ``ragd`` server on loopback (uvicorn, its job worker, embedded Qdrant, the real
all-MiniLM-L6-v2; default settings), through its HTTP API as users run it:

1. a dataset gets ``--docs`` corpus documents as .txt uploads (batches of 100): the plain ingest's
   chunks/s (the upload job's own start and end);
2. idle search p50 over the corpus's queries (``POST /api/v1/datasets/{id}/search``, hybrid, k=5);
3. two migrations, each held for a manual switch while a client searches the dataset at ``--rate``
   requests/s: a re-index (a migration to the same settings: the same chunks made and embedded
   again, so chunks/s compare like for like) and a re-chunk (token chunks of ``--size`` tokens:
   more, shorter chunks); for each, its chunks/s (its job's start and end) and files/s as ratios to
   the plain ingest's, the search p50 during it as a ratio to the idle p50, and how many of those
   searches failed or came back empty (both must be 0);
4. each switch and a rollback, timed as their HTTP calls (a rollback embeds nothing: proven by
   tests/kb/test_dataset_migrations.py with a scripted embedder that sees every call).

Both runs share the machine's two cores with the search client, as a live migration does.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.live_server import LiveServer  # noqa: E402

from ragd.api.app import create_app  # noqa: E402
from ragd.evaluation.beir import load_dataset  # noqa: E402
from ragd.settings import ServerSettings, Settings  # noqa: E402

KEY = "migration-bench-key-0123456789abcdef0123456789"
BATCH = 100


def ok(http: httpx.Client, method: str, path: str, status: int = 200, **kw: Any) -> Any:
    r = http.request(method, path, **kw)
    if r.status_code != status:
        raise SystemExit(f"{method} {path}: {r.status_code} {r.text[:500]}")
    return r.json()


def wait_job(http: httpx.Client, job_id: str) -> dict[str, Any]:
    while True:
        job: dict[str, Any] = ok(http, "GET", f"/api/v1/jobs/{job_id}")
        if job["finished"]:
            return job
        time.sleep(0.25)


def job_rate(job: dict[str, Any]) -> tuple[float, int]:
    seconds = float(job["finished_at"]) - float(job["started_at"])
    return seconds, int(job["chunks"])


def search_ms(http: httpx.Client, path: str, query: str) -> tuple[float, int, bool]:
    started = time.perf_counter()
    r = http.post(path, json={"query": query, "k": 5})
    ms = (time.perf_counter() - started) * 1000
    return ms, r.status_code, r.status_code == 200 and bool(r.json()["results"])


class Searches:
    """A client searching at a fixed rate in a thread until stopped."""

    def __init__(self, url: str, path: str, queries: list[str], rate: float) -> None:
        self.http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=60)
        self.path, self.queries, self.interval = path, queries, 1.0 / rate
        self.latencies: list[float] = []
        self.errors = 0
        self.empty = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self.started = time.monotonic()
        self._thread.start()

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        self.http.close()
        return time.monotonic() - self.started

    def _run(self) -> None:
        n = 0
        next_at = time.monotonic()
        while not self._stop.is_set():
            ms, status, found = search_ms(self.http, self.path, self.queries[n % len(self.queries)])
            n += 1
            self.latencies.append(ms)
            self.errors += status != 200
            self.empty += status == 200 and not found
            next_at += self.interval
            self._stop.wait(max(0.0, next_at - time.monotonic()))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dataset", type=Path, help="a BEIR folder (e.g. ../shared/datasets/scifact)")
    parser.add_argument("--docs", type=int, default=1600, help="corpus documents uploaded")
    parser.add_argument("--size", type=int, default=128, help="the migration's token chunk size")
    parser.add_argument("--rate", type=float, default=5.0, help="searches per second during the migration")
    parser.add_argument("--idle", type=int, default=100, help="idle searches timed")
    args = parser.parse_args()
    if not (args.dataset / "corpus.jsonl").is_file():
        raise SystemExit(f"{args.dataset}: no corpus.jsonl (the shared datasets are not on this machine)")
    data = load_dataset(args.dataset)
    docs = data.corpus[: args.docs]
    queries = list(data.queries.values())

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp) / "data", server=ServerSettings(api_key=KEY))  # type: ignore[arg-type]
        with LiveServer(create_app(settings)) as live:
            live.wait_ready()
            http = httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {KEY}"}, timeout=300)
            tenant = ok(http, "POST", "/api/v1/tenants", 201, json={"name": "bench"})
            ds = ok(http, "POST", "/api/v1/datasets", 201, json={"name": "corpus", "tenant_id": tenant["id"]})
            base = f"/api/v1/datasets/{ds['id']}"

            ingest_s, ingest_chunks = 0.0, 0
            for start in range(0, len(docs), BATCH):
                part = [
                    ("files", (f"{d.doc_id}.txt", d.full_text.encode())) for d in docs[start : start + BATCH]
                ]
                job = wait_job(http, ok(http, "POST", f"{base}/files", 202, files=part)["job"]["id"])
                if job["status"] != "succeeded":
                    raise SystemExit(f"ingest job ended {job['status']}: {job}")
                seconds, chunks = job_rate(job)
                ingest_s, ingest_chunks = ingest_s + seconds, ingest_chunks + chunks
            print(f"plain ingest: {len(docs)} files, {ingest_chunks} chunks in {ingest_s:.1f} s", flush=True)

            path = f"{base}/search"
            for q in queries[:10]:
                search_ms(http, path, q)  # warm
            idle = [search_ms(http, path, q)[0] for q in queries[: args.idle]]

            runs = []
            for label, spec in (
                ("re-index (same settings)", None),
                (
                    f"re-chunk ({args.size}-token chunks)",
                    {"strategy": "token", "size": args.size, "overlap": 0},
                ),
            ):
                body: dict[str, Any] = {"auto_switch": False}
                if spec is not None:
                    body["chunking"] = spec
                runs.append((label, migrate(http, live.url, base, path, queries, args.rate, body)))
            last = runs[-1][1]
            after = [search_ms(http, path, q)[0] for q in queries[: args.idle // 2]]
            started = time.perf_counter()
            back = ok(http, "POST", f"{last['path']}/rollback")
            rollback_ms = (time.perf_counter() - started) * 1000
            if back["state"] != "rolled_back":
                raise SystemExit(f"rollback: {back['state']}")
            http.close()

    ingest_rate = ingest_chunks / ingest_s
    idle_p50 = statistics.median(idle)
    print()
    print("| figure | value |")
    print("|---|---|")
    print(f"| plain ingest | {len(docs)} files, {ingest_chunks} chunks, {ingest_rate:.1f} chunks/s |")
    print(f"| idle search p50 | {idle_p50:.1f} ms ({len(idle)} searches) |")
    for label, r in runs:
        rate = r["chunks"] / r["seconds"]
        print(f"| migration: {label} | {r['chunks']} chunks, {rate:.1f} chunks/s, {r['seconds']:.1f} s |")
        print(f"| … / plain ingest (chunks/s) | {rate / ingest_rate:.2f}x |")
        print(f"| … / plain ingest (files/s) | {(len(docs) / r['seconds']) / (len(docs) / ingest_s):.2f}x |")
        p50 = statistics.median(r["latencies"])
        print(
            f"| … search p50 during it | {p50:.1f} ms ({len(r['latencies'])} searches, {r['rate']:.1f}/s) |"
        )
        print(f"| … during / idle p50 | {p50 / idle_p50:.2f}x |")
        print(f"| … searches failed / empty | {r['errors']} / {r['empty']} |")
        print(f"| … switch (HTTP call) | {r['switch_ms']:.0f} ms |")
    print(f"| search p50 on the last new version | {statistics.median(after):.1f} ms |")
    print(f"| rollback (HTTP call) | {rollback_ms:.0f} ms |")


def migrate(
    http: httpx.Client, url: str, base: str, path: str, queries: list[str], rate: float, body: dict[str, Any]
) -> dict[str, Any]:
    """One migration held for a manual switch, with searches at ``rate`` while it builds."""
    searches = Searches(url, path, queries, rate)
    searches.start()
    migration = ok(http, "POST", f"{base}/migrations", 202, json=body)
    mpath = f"{base}/migrations/{migration['id']}"
    while (got := ok(http, "GET", mpath))["state"] == "building":
        time.sleep(0.25)
    during_s = searches.stop()
    if got["state"] != "ready":
        raise SystemExit(f"the migration ended {got['state']}: {got}")
    seconds, chunks = job_rate(ok(http, "GET", f"/api/v1/jobs/{got['job_id']}"))
    started = time.perf_counter()
    switched = ok(http, "POST", f"{mpath}/switch", json={})
    switch_ms = (time.perf_counter() - started) * 1000
    if switched["state"] != "switched":
        raise SystemExit(f"switch: {switched['state']}")
    print(f"migration {body}: {chunks} chunks in {seconds:.1f} s", flush=True)
    return {
        "path": mpath,
        "seconds": seconds,
        "chunks": chunks,
        "latencies": searches.latencies,
        "rate": len(searches.latencies) / during_s,
        "errors": searches.errors,
        "empty": searches.empty,
        "switch_ms": switch_ms,
    }


if __name__ == "__main__":
    main()
