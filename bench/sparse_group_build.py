"""What building an index with sparse groups costs in memory: peak anonymous and file-backed RSS.

    python bench/sparse_group_build.py [--points 100000] [--groups 0 64] [--bulk-segment K ...]
                                       [--grouping terms vectors] [--keep-mapped]

Each configuration builds a fresh index in its own child process (the chunks of
``search_latency.py``: synthetic chunk-like dense vectors, on disk, and the real BM25 of 40-word
texts in 50 collections), in batches of 2,048 through ``EdgeStore.upsert``, as ``ragd ingest``
writes: one bulk load (``EdgeStore.bulk``), which optimises every ``K`` chunks written
(``RAGD_STORE__BULK_SEGMENT_CHUNKS``; 0: once, at the end) and reopens the shard after each of
those, which unmaps the pages they touched (``--keep-mapped``: not), then one closing optimise.  The parent
samples the child's ``/proc/<pid>/status`` every 50 ms: the engine holds the GIL while it writes
and optimises, so a thread of the child could not.  Reported per configuration: build seconds, the peak of the
child's resident memory (``VmHWM``), and the peaks of its anonymous memory (``RssAnon``) and of its
file-backed memory (``RssFile``: the engine's memory-mapped storages; the kernel may write back and
drop these pages, but they count in RSS).  The synthetic corpus is made a batch at a time
(``StreamCorpus``), so the peaks are the index build's.  Linux only (``/proc``).
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
from ragd.settings import SparseSettings, StoreSettings  # noqa: E402
from ragd.store import edge_store  # noqa: E402
from ragd.store.edge_store import EdgeStore  # noqa: E402
from ragd.store.tuning import IndexTuning  # noqa: E402
from ragd.types import IndexManifest  # noqa: E402
from search_latency import StreamCorpus, chunk_batch, vocabulary  # noqa: E402
from store_latency import MANIFEST  # noqa: E402

BATCH = 2048


async def build(
    where: Path, points: int, groups: int, segment: int, grouping: str, keep_mapped: bool
) -> None:
    """The child's work: build ``points`` chunks in ``groups`` sparse groups under ``where``, as
    ``ragd ingest`` does: one bulk load (optimising every ``segment`` chunks), optimised at its end."""
    if keep_mapped:  # what reopening is worth: the same build without it
        edge_store._ShardHandle.reopen = lambda _self: None  # type: ignore[method-assign]
    sparse = Bm25SparseEmbedder(SparseSettings().language)
    tuning = IndexTuning(dense_on_disk=True, bulk_segment_chunks=segment)
    store = EdgeStore(where / "index", "bench", tuning=tuning)
    manifest = MANIFEST
    store_manifest = IndexManifest(
        manifest.dense_model,
        384,
        "",
        "",
        sparse.name,
        manifest.chunker_version,
        sparse_groups=groups,
        sparse_grouping=grouping,
    )
    await store.open(store_manifest)
    corpus = StreamCorpus(points, 1, vocabulary())
    print("ready", flush=True)
    started = time.perf_counter()
    async with store.bulk():
        for start in range(0, points, BATCH):
            await store.upsert(chunk_batch(corpus, sparse, start, BATCH))
    await store.optimize()
    print(f"built {time.perf_counter() - started:.1f}", flush=True)
    await store.close()


def _status_kb(pid: int) -> dict[str, int]:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    return {m[1]: int(m[2]) for m in re.finditer(r"^(RssAnon|RssFile|VmHWM):\s+(\d+) kB", text, re.M)}


def measure(points: int, groups: int, segment: int, grouping: str, keep_mapped: bool) -> dict[str, float]:
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
                str(segment),
                grouping,
                str(int(keep_mapped)),
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
    parser.add_argument("--groups", type=int, nargs="+", default=[0, 64])
    parser.add_argument(
        "--bulk-segment",
        type=int,
        nargs="+",
        default=[StoreSettings().bulk_segment_chunks],
        metavar="K",
        help="RAGD_STORE__BULK_SEGMENT_CHUNKS (0: optimise once, at the end)",
    )
    parser.add_argument(
        "--keep-mapped", action="store_true", help="no reopening of the shard after each optimisation"
    )
    parser.add_argument(
        "--grouping",
        nargs="+",
        default=["terms"],
        choices=["terms", "vectors"],
        help="how groups are kept (payload.SparseLayout): terms (new indexes), vectors (before 2026-11-28)",
    )
    parser.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        where, points, groups, segment, grouping, keep = args.child
        asyncio.run(build(Path(where), int(points), int(groups), int(segment), grouping, keep == "1"))
        return 0
    print(f"{args.points} chunks in 50 collections, dense vectors on disk")
    print("| sparse groups | kept as | bulk segment | build | peak RSS | peak anonymous | peak file-backed |")
    print("|---|---|---|---|---|---|---|")
    for groups in args.groups:
        for grouping in args.grouping if groups else ["-"]:
            for segment in args.bulk_segment:
                r = measure(args.points, groups, segment, grouping, args.keep_mapped)
                print(
                    f"| {groups} | {grouping} | {segment or 'end'} | {r['seconds']:.0f} s "
                    f"| {r['VmHWM']:,.0f} MB | {r['RssAnon']:,.0f} MB | {r['RssFile']:,.0f} MB |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
