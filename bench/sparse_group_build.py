"""What building an index with sparse groups costs in memory: peak anonymous and file-backed RSS.

    python bench/sparse_group_build.py [--points 100000] [--groups 0 16 64] [--optimize-every K ...]
                                       [--reopen]

Each configuration builds a fresh index in its own child process (the chunks of
``search_latency.py``: synthetic chunk-like dense vectors, on disk, and the real BM25 of 40-word
texts in 50 collections), in batches of 2,048 through ``EdgeStore.upsert``, optimising every
``K`` chunks written (0: once, at the end, as ``ragd ingest`` does; ``--reopen``: the shard closed
and opened again after each of those optimisations, which unmaps its segments).  The parent
samples the child's ``/proc/<pid>/status`` every 50 ms: the engine holds the GIL while it writes
and optimises, so a thread of the child could not.  Reported per configuration: build seconds, the peak of the
child's resident memory (``VmHWM``), and the peaks of its anonymous memory (``RssAnon``) and of its
file-backed memory (``RssFile``: the engine's memory-mapped storages; the kernel may write back and
drop these pages, but they count in RSS).  The synthetic corpus itself holds 1.5 KB a chunk of
anonymous memory (~150 MB at 100k, 1.5 GB at 1M).  Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ragd.embed.bm25 import Bm25SparseEmbedder  # noqa: E402
from ragd.settings import SparseSettings  # noqa: E402
from ragd.store.edge_store import EdgeStore  # noqa: E402
from ragd.store.tuning import IndexTuning  # noqa: E402
from ragd.types import IndexManifest  # noqa: E402
from search_latency import chunk_batch, texts, vocabulary  # noqa: E402
from store_latency import MANIFEST, make_corpus  # noqa: E402

BATCH = 2048


async def build(where: Path, points: int, groups: int, every: int, reopen: bool = False) -> None:
    """The child's work: build ``points`` chunks in ``groups`` sparse groups under ``where``."""
    sparse = Bm25SparseEmbedder(SparseSettings().language)
    store = EdgeStore(where / "index", "bench", tuning=IndexTuning(dense_on_disk=True))
    manifest = MANIFEST
    store_manifest = IndexManifest(
        manifest.dense_model, 384, "", "", sparse.name, manifest.chunker_version, sparse_groups=groups
    )
    await store.open(store_manifest)
    corpus = make_corpus(points, 50, 200, 1, "lowrank")
    words = texts(points, vocabulary(), 1)
    print("ready", flush=True)
    started, written = time.perf_counter(), 0
    for start in range(0, points, BATCH):
        batch = chunk_batch(corpus, words, sparse, start, BATCH)
        await store.upsert(batch)
        written += len(batch)
        if every and written >= every:
            await store.optimize()
            written = 0
            if reopen:  # unmapping drops the segments' touched pages from this process
                await store.close()
                await store.open(store_manifest)
    await store.optimize()
    print(f"built {time.perf_counter() - started:.1f}", flush=True)
    await store.close()


def _status_kb(pid: int) -> dict[str, int]:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    return {m[1]: int(m[2]) for m in re.finditer(r"^(RssAnon|RssFile|VmHWM):\s+(\d+) kB", text, re.M)}


def measure(points: int, groups: int, every: int, reopen: bool) -> dict[str, float]:
    """One configuration in a child process, sampled from here."""
    peaks = {"RssAnon": 0, "RssFile": 0, "VmHWM": 0}
    seconds = float("nan")
    with tempfile.TemporaryDirectory(prefix="ragd-groups-") as tmp:
        child = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--child",
                tmp,
                str(points),
                str(groups),
                str(every),
                str(int(reopen)),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        while child.poll() is None:
            for name, kb in _status_kb(child.pid).items():
                peaks[name] = max(peaks[name], kb)
            time.sleep(0.05)
        for line in child.stdout.read().splitlines():
            if line.startswith("built "):
                seconds = float(line.split()[1])
        if child.returncode != 0:
            raise SystemExit(f"the build with {groups} groups failed (exit {child.returncode})")
    return {"seconds": seconds, **{k: v / 1024 for k, v in peaks.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--groups", type=int, nargs="+", default=[0, 16, 64])
    parser.add_argument("--optimize-every", type=int, nargs="+", default=[0], metavar="K")
    parser.add_argument(
        "--reopen", action="store_true", help="close and reopen the shard after each optimize but the last"
    )
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        where, points, groups, every, reopen = args.child
        asyncio.run(build(Path(where), int(points), int(groups), int(every), reopen == "1"))
        return 0
    print(f"{args.points} chunks in 50 collections, dense vectors on disk")
    print("| sparse groups | optimize every | build | peak RSS | peak anonymous | peak file-backed |")
    print("|---|---|---|---|---|---|")
    for groups in args.groups:
        for every in args.optimize_every:
            r = measure(args.points, groups, every, args.reopen)
            print(
                f"| {groups} | {every or 'end'} | {r['seconds']:.0f} s | {r['VmHWM']:,.0f} MB "
                f"| {r['RssAnon']:,.0f} MB | {r['RssFile']:,.0f} MB |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
