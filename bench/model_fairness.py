"""Can one tenant's model endpoint requests stall another tenant's search?  (issue 30 §1.5)

    python bench/model_fairness.py [--seconds 25] [--idle 60] [--scenarios max,issue]

Starts ``ragd serve`` (the real packaged MiniLM) on a loopback port with a fresh data dir, makes
two tenants with a key each, and gives tenant B a dataset of 40 short documents.  Then it measures
tenant B's search (``POST /api/v1/search``, a different query each time so the query cache never
answers) one request after another:

* idle: ``--idle`` searches with nothing else running, just before each scenario (the ratio's
  same-run baseline);
* under load, per scenario: two clients of tenant A (each a process of its own) each send
  ``POST /v1/embeddings`` again and again for ``--seconds`` while B searches:

  - ``max``: the largest request the default limits accept: 400 inputs of 2,500 characters (1M
    characters in all, each past the model's 256-token window);
  - ``issue``: the issue's request: 150 inputs of 100,000 characters (15 MB; now 413 at once).

It reports B's p50 and p95 idle and under load, the ratio of p50s (goal: at most 3), the server's
RSS growth (peak during the scenario minus before it), and A's answers.  For a baseline on the code
before the change, run it with that code first on the path: ``git worktree add /tmp/before <commit>``
then ``PYTHONPATH=/tmp/before/src python bench/model_fairness.py``.  The scenario ``issue`` runs last:
on the old code the server is still busy with it when the benchmark ends (it is stopped).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.processes import free_port, ragd, wait_ready  # noqa: E402

from hostile_inputs import Sampler, rss_mb  # noqa: E402

KEY = "fairness-bench-key-0123456789abcdef0123456789"
GOAL = 3.0
WORDS = [
    *("the", "alpha", "protocol", "requires", "three", "approvals", "before", "any", "deployment"),
    *("reaches", "production", "and", "every", "beta", "release", "is", "frozen", "on", "tuesday"),
    *("while", "gamma", "teams", "review", "the", "incident", "reports", "of", "last", "quarter"),
]
#: name -> (inputs per request, characters per input)
SCENARIOS = {"max": (400, 2_500), "issue": (150, 100_000)}


def text(chars: int, seed: int) -> str:
    words = [WORDS[(seed * 7 + i * 13) % len(WORDS)] for i in range(chars // 4 + 8)]
    return " ".join(words)[:chars]


def setup(url: str) -> tuple[dict[str, str], dict[str, str], str]:
    """Tenant A's reader key, tenant B's admin key, and B's dataset of 40 indexed documents."""
    service = {"Authorization": f"Bearer {KEY}"}
    keys = []
    for name, role in (("tenant-a", "reader"), ("tenant-b", "admin")):
        tenant = httpx.post(f"{url}/api/v1/tenants", json={"name": name}, headers=service).json()
        made = httpx.post(f"{url}/api/v1/tenants/{tenant['id']}/keys", json={"role": role}, headers=service)
        made.raise_for_status()
        keys.append({"Authorization": f"Bearer {made.json()['secret']}"})
    a, b = keys
    dataset = httpx.post(f"{url}/api/v1/datasets", json={"name": "b-docs"}, headers=b).json()["id"]
    files = [("files", (f"doc{i}.txt", text(1200, i).encode(), "text/plain")) for i in range(40)]
    upload = httpx.post(f"{url}/api/v1/datasets/{dataset}/files", files=files, headers=b, timeout=120)
    upload.raise_for_status()
    job = upload.json()["job"]["id"]
    deadline = time.monotonic() + 300
    while not httpx.get(f"{url}/api/v1/jobs/{job}", headers=b).json()["finished"]:
        assert time.monotonic() < deadline, "B's documents were not indexed in time"
        time.sleep(0.5)
    return a, b, dataset


class Searcher:
    """Tenant B: one search after another, each with a new query; the seconds each took."""

    def __init__(self, url: str, auth: dict[str, str], dataset: str) -> None:
        self.client = httpx.Client(base_url=url, headers=auth, timeout=120)
        self.dataset = dataset
        self.count = 0
        self.failures: Counter[int] = Counter()

    def one(self) -> float:
        self.count += 1
        query = f"{WORDS[self.count % len(WORDS)]} approvals release {self.count}"
        started = time.perf_counter()
        response = self.client.post(
            "/api/v1/search", json={"query": query, "dataset_ids": [self.dataset], "k": 5}
        )
        took = time.perf_counter() - started
        if response.status_code != 200:
            self.failures[response.status_code] += 1
        return took

    def run(self, n: int) -> list[float]:
        return [self.one() for _ in range(n)]


def hostile(url: str, auth: dict[str, str], shape: tuple[int, int], stop: Any, out: Any) -> None:
    """Tenant A, in a process of its own at the lowest CPU priority (an attacker's client runs on
    its own machine: its JSON and socket work must not slow B's client here): the same big request,
    encoded once, again and again until ``stop``; puts (status, seconds) for each."""
    os.nice(19)
    inputs, chars = shape
    body = json.dumps({"input": [text(chars, i) for i in range(inputs)], "model": "ragd"}).encode()
    headers = {**auth, "Content-Type": "application/json"}
    with httpx.Client(base_url=url, headers=headers, timeout=600) as client:
        while not stop.is_set():
            started = time.perf_counter()
            status: int | str
            try:
                status = client.post("/v1/embeddings", content=body).status_code
            except httpx.HTTPError as exc:
                status = type(exc).__name__
            out.put((status, time.perf_counter() - started))


def scenario(
    url: str,
    pid: int,
    a: dict[str, str],
    searcher: Searcher,
    shape: tuple[int, int],
    seconds: float,
    last: bool,
) -> dict[str, Any]:
    """B's searches while A's two clients send ``shape`` requests for ``seconds``; then the clients
    finish the requests in flight (unless ``last``: the server is stopped next)."""
    context = multiprocessing.get_context("fork")
    stop, out = context.Event(), context.Queue()
    clients = [
        context.Process(target=hostile, args=(url, a, shape, stop, out), daemon=True) for _ in range(2)
    ]
    before = rss_mb(pid)
    with Sampler(pid) as peak:
        for client in clients:
            client.start()
        time.sleep(2.0)  # the requests are built and in flight
        deadline = time.monotonic() + seconds
        times = []
        while time.monotonic() < deadline:
            times.extend(searcher.run(n=1))
        stop.set()
        for client in clients:
            client.join(timeout=5 if last else 300)
            if client.is_alive():
                client.terminate()
    answers = []
    while not out.empty():
        answers.append(out.get())
    return {"times": times, "growth": max(0.0, peak.server - before), "answers": answers}


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=25.0, help="load per scenario")
    parser.add_argument("--idle", type=int, default=60, help="idle searches")
    parser.add_argument("--scenarios", default="max,issue")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ragd-fairness-") as tmp:
        work, port = Path(tmp), free_port()
        url = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAGD_")}
        env.update({"RAGD_DATA_DIR": str(work / "data"), "RAGD_SERVER__API_KEY": KEY, "HF_HUB_OFFLINE": "1"})
        with (work / "serve.log").open("w") as log:
            proc = ragd(["serve", "--port", str(port)], env, stdout=log, stderr=log)
        try:
            wait_ready(proc, url, output=(work / "serve.log").read_text)
            a, b, dataset = setup(url)
            searcher = Searcher(url, b, dataset)
            searcher.run(n=10)  # warm
            where = os.environ.get("PYTHONPATH") or "this tree"
            print(f"ragd from {where}; server RSS {rss_mb(proc.pid):.0f} MB")
            names = [name for name in args.scenarios.split(",") if name]
            for name in names:
                inputs, chars = SCENARIOS[name]
                idle = searcher.run(n=args.idle)  # just before: the machine's load drifts
                base = statistics.median(idle) * 1000
                spread = f"p50 {base:.1f} ms, p95 {p(idle, 0.95):.1f} ms"
                print(f"B idle before {name}: {spread} ({len(idle)} searches)")
                row = scenario(url, proc.pid, a, searcher, (inputs, chars), args.seconds, name == names[-1])
                times = row["times"]
                p50 = statistics.median(times) * 1000
                statuses = Counter(status for status, _ in row["answers"])
                a_took = statistics.median([s for _, s in row["answers"]]) if row["answers"] else float("nan")
                verdict = "within" if p50 / base <= GOAL else "OVER"
                print(
                    f"{name}: A 2 x {inputs} x {chars:,} chars; B p50 {p50:.1f} ms,"
                    f" p95 {p(times, 0.95):.1f} ms, max {max(times) * 1000:.0f} ms ({len(times)} searches);"
                    f" ratio {p50 / base:.2f} ({verdict} {GOAL:.0f}x); RSS +{row['growth']:.0f} MB;"
                    f" A answers {dict(statuses)} in {a_took:.2f} s median"
                )
            if searcher.failures:
                print(f"B's failed searches: {dict(searcher.failures)}")
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except Exception:
                proc.kill()


if __name__ == "__main__":
    main()
