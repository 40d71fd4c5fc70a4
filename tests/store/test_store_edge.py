"""What only the embedded Qdrant Edge store does: files on disk, the process lock, optimize()."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import qdrant_edge as qe

from ragd.errors import ConfigurationError, IndexMismatch, StoreLocked
from ragd.settings import StoreSettings
from ragd.store.edge_store import RESCORE_ONCE_FROM_SEGMENTS, EdgeStore
from ragd.store.manifest_io import MANIFEST_FILE
from ragd.store.tuning import IndexTuning
from ragd.types import FusionMethod, FusionParams, PointFilter, StoreQuery

from .data import DIM, corpus, manifest, query_near

CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    import numpy as np
    from ragd.store.edge_store import EdgeStore
    from ragd.types import IndexManifest, StoredChunk

    async def main() -> None:
        store = EdgeStore(Path(sys.argv[1]))
        await store.open(IndexManifest(**__MANIFEST__))
        v = np.ones(__DIM__, dtype=np.float32) / np.sqrt(__DIM__)
        ids = [f"00000000-0000-0000-0000-{i:012d}" for i in range(10)]
        meta = {"collection_name": "k"}
        await store.upsert([StoredChunk(id=i, content="c", meta=meta, dense=v) for i in ids])
        print("ready", flush=True)
        sys.stdin.readline()
        await store.close()

    asyncio.run(main())
    """
)


def _start_holder(data_dir: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", _child_code(CHILD), str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    if line.strip() != "ready":
        child.kill()
        _, err = child.communicate(timeout=10)
        pytest.fail(f"the holder process did not start: {err}")
    return child


def _child_code(template: str) -> str:
    """A child process's script with the test manifest and dimension filled in."""
    return template.replace("__MANIFEST__", repr(_manifest_kwargs())).replace("__DIM__", str(DIM))


def _manifest_kwargs() -> dict[str, object]:
    m = manifest()
    return {name: getattr(m, name) for name in m.__dataclass_fields__}


async def test_a_second_process_gets_store_locked_until_the_holder_exits(tmp_path: Path) -> None:
    child = _start_holder(tmp_path)
    try:
        with pytest.raises(StoreLocked, match=rf"another ragd process \(pid {child.pid}\)") as info:
            await EdgeStore(tmp_path).open(manifest())
        assert "ragd serve" in str(info.value)
    finally:
        child.communicate(input="\n", timeout=30)
        assert child.returncode == 0
    store = EdgeStore(tmp_path)
    await store.open(manifest())
    assert await store.count(PointFilter()) == 10
    await store.close()


async def test_a_killed_holder_releases_the_lock_and_keeps_its_writes(tmp_path: Path) -> None:
    child = _start_holder(tmp_path)
    os.kill(child.pid, signal.SIGKILL)
    child.communicate(timeout=30)
    store = EdgeStore(tmp_path)
    await store.open(manifest())
    assert await store.count(PointFilter(collection_names=("k",))) == 10
    await store.close()


async def test_files_live_under_data_dir_qdrant_collection(tmp_path: Path) -> None:
    store = EdgeStore.from_settings(StoreSettings(collection="docs"), tmp_path)
    await store.open(manifest())
    await store.close()
    root = tmp_path / "qdrant" / "docs"
    assert store.root == root
    assert json.loads((root / MANIFEST_FILE).read_text())["dense_model"] == manifest().dense_model
    assert (root / "shard").is_dir()


@pytest.mark.parametrize("name", ["", "../escape", "a/b", ".hidden"])
def test_collection_names_that_are_not_plain_directory_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigurationError, match="collection name"):
        EdgeStore(tmp_path, name)


async def test_a_shard_without_manifest_is_not_trusted(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path)
    await store.open(manifest())
    await store.close()
    (store.root / MANIFEST_FILE).unlink()
    with pytest.raises(IndexMismatch, match=MANIFEST_FILE):
        await EdgeStore(tmp_path).open(manifest())


async def test_a_vector_layout_that_disagrees_with_the_manifest_is_caught(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path)
    await store.open(manifest())
    await store.close()
    path = store.root / MANIFEST_FILE  # someone hand-edits the manifest: the shard still says 384
    path.write_text(json.dumps({**_manifest_kwargs(), "dense_dim": 8}))
    with pytest.raises(IndexMismatch, match="vector size"):
        await EdgeStore(tmp_path).open(manifest(dense_dim=8))


async def test_optimize_builds_the_index_in_the_background_and_search_still_works(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="ragd.store.edge_store")
    store = EdgeStore(tmp_path, tuning=IndexTuning(indexing_threshold_kb=100, full_scan_threshold_kb=10))
    await store.open(manifest())
    data = corpus(files_per_collection=10, chunks_per_file=20)  # 600 points, ~900 KB of vectors
    await store.upsert(data.chunks)
    before = (await store.stats())["indexed_vectors"]  # sparse vectors are always indexed
    first, second = asyncio.create_task(store.optimize()), asyncio.create_task(store.optimize())
    ticks = 0
    while not first.done():  # the event loop keeps running while the index builds
        ticks += 1
        await asyncio.sleep(0.001)
    await asyncio.gather(first, second)
    assert ticks > 0
    rebuilt = [r for r in caplog.records if "segments rebuilt" in r.getMessage()]
    assert len(rebuilt) == 1  # the concurrent caller shared the same run
    assert (await store.stats())["indexed_vectors"] == before + len(data.chunks)  # + the dense HNSW
    target = data.chunks[123]
    hits = await store.search(
        StoreQuery(
            filter=PointFilter(collection_names=(str(target.meta["collection_name"]),)),
            limit=3,
            dense=target.dense,
        )
    )
    assert hits[0].id == target.id
    await store.optimize()  # nothing left to do: the index stays as it is
    assert any("nothing to do" in r.getMessage() for r in caplog.records)
    assert (await store.stats())["indexed_vectors"] == before + len(data.chunks)
    await store.close()


class _Recorded:
    """The real shard, with every query request it was sent recorded (prefetches included)."""

    def __init__(self, shard: Any) -> None:
        self.shard = shard
        self.requests: list[Any] = []

    def query(self, request: Any) -> Any:
        self.requests.append(request)
        return self.shard.query(request)

    def query_batch(self, batch: Any) -> Any:
        self.requests.extend(batch.queries)
        return self.shard.query_batch(batch)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.shard, name)


async def _exact_top(store: EdgeStore, recorder: _Recorded, data: Any, rng: np.random.Generator) -> list[Any]:
    """Dense searches near chunks of each collection: their hits are the exact top 10 by cosine,
    with exact cosine scores (an int8 score is off by ~1e-3).  Returns the dense requests sent."""
    recorder.requests.clear()
    for collection in sorted({str(c.meta["collection_name"]) for c in data.chunks}):
        members = [c for c in data.chunks if c.meta["collection_name"] == collection]
        q = query_near(rng, members[int(rng.integers(len(members)))].dense)
        vectors = np.stack([c.dense / np.linalg.norm(c.dense) for c in members])
        cosines = vectors @ q
        best = np.argsort(-cosines)[:10]
        hits = await store.search(StoreQuery(PointFilter(collection_names=(collection,)), 10, dense=q))
        assert [h.id for h in hits] == [members[i].id for i in best]
        assert [h.scores.dense for h in hits] == pytest.approx([float(cosines[i]) for i in best], abs=1e-5)
    return list(recorder.requests)


async def test_a_dense_list_of_several_segments_rescores_its_candidates_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index of several sealed segments (a bulk load's) asks a dense list in two stages: every
    segment's int8 candidates, none rescored, then the pooled candidates rescored once with their
    float32 vectors (the engine would rescore in each segment, reading each segment's share again).
    The hits are still the exact top k with exact cosines.  One sealed segment: one stage.

    A 1M-chunk bulk load's 200k segments are past the engine's merge limit, so they stay apart; here
    the limit is shrunk to 1 KB, or the engine would merge these small segments."""
    engine_config = qe.EdgeOptimizersConfig
    monkeypatch.setattr(
        qe,
        "EdgeOptimizersConfig",
        lambda **kwargs: engine_config(**kwargs, max_segment_size=1),
    )
    tuning = IndexTuning(indexing_threshold_kb=100, full_scan_threshold_kb=10, bulk_segment_chunks=200)
    data = corpus(files_per_collection=10, chunks_per_file=20)  # 600 points: three bulk segments
    rng = np.random.default_rng(4)

    several = EdgeStore(tmp_path / "several", tuning=tuning)
    await several.open(manifest())
    async with several.bulk():
        for start in range(0, 600, 100):
            await several.upsert(data.chunks[start : start + 100])
    assert (await several.stats())["segments"] >= RESCORE_ONCE_FROM_SEGMENTS
    recorder = _Recorded(several._shard)
    several._shard = recorder  # type: ignore[assignment]
    for request in await _exact_top(several, recorder, data, rng):
        (candidates,) = request.prefetches
        assert candidates.limit == 10 * tuning.oversampling  # a segment's best, by int8 score
        assert candidates.params.quantization.rescore is False
        assert request.params.quantization.rescore is True  # the pooled candidates, once
        assert request.params.quantization.oversampling == tuning.oversampling  # all of them
    target = data.chunks[123]
    flt = PointFilter(collection_names=(str(target.meta["collection_name"]),))
    for method in FusionMethod:  # RRF: the fused query's dense prefetch has the same two stages
        query = StoreQuery(
            flt, 5, dense=target.dense, sparse=target.sparse, fusion=FusionParams(method=method)
        )
        hits = await several.search(query)
        assert hits[0].id == target.id
        assert hits[0].scores.dense == pytest.approx(1.0, abs=1e-5)
    several._shard = recorder.shard
    await several.close()

    one = EdgeStore(tmp_path / "one", tuning=tuning)
    await one.open(manifest())
    await one.upsert(data.chunks)
    await one.optimize()
    assert (await one.stats())["segments"] < RESCORE_ONCE_FROM_SEGMENTS
    recorder = _Recorded(one._shard)
    one._shard = recorder  # type: ignore[assignment]
    for request in await _exact_top(one, recorder, data, rng):
        assert not request.prefetches
        assert request.params.quantization.rescore is True
    one._shard = recorder.shard
    await one.close()


async def test_a_bulk_load_builds_its_indexes_every_so_many_chunks(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Inside ``bulk()`` the write that takes the chunks written past ``bulk_segment_chunks``
    optimizes, then reopens the shard (unmapping what the build touched); outside it, writes never
    do.  Concurrent writers and searchers meanwhile, holding the store across the reopen, carry on."""
    caplog.set_level(logging.INFO, logger="ragd.store")
    tuning = IndexTuning(indexing_threshold_kb=100, full_scan_threshold_kb=10, bulk_segment_chunks=250)
    data = corpus(files_per_collection=10, chunks_per_file=20)  # 600 points, ~900 KB of vectors
    plain = EdgeStore(tmp_path / "plain", tuning=tuning)
    await plain.open(manifest())
    sparse_only = (await plain.stats())["indexed_vectors"]
    for start in range(0, 600, 100):
        await plain.upsert(data.chunks[start : start + 100])
    assert (await plain.stats())["indexed_vectors"] == sparse_only + 600  # the sparse vectors alone
    await plain.close()

    store = EdgeStore(tmp_path / "bulk", tuning=tuning)
    await store.open(manifest())
    indexed = []
    async with store.bulk():
        for start in range(0, 600, 100):
            await store.upsert(data.chunks[start : start + 100])
            written = start + 100  # every sparse vector is indexed as written; the dense ones by optimize
            indexed.append((await store.stats())["indexed_vectors"] - written)
    # optimized after 300 chunks (the write that passed 250) and after 600: dense HNSW built
    assert indexed == [0, 0, 300, 300, 300, 600]
    assert sum("optimizing" in r.getMessage() for r in caplog.records) == 2
    assert sum("reopened" in r.getMessage() for r in caplog.records) == 2

    async def search_meanwhile(stop: asyncio.Event) -> int:
        n = 0
        while not stop.is_set():
            target = data.chunks[n % 600]
            flt = PointFilter(collection_names=(str(target.meta["collection_name"]),))
            assert (await store.search(StoreQuery(filter=flt, limit=1, dense=target.dense)))[
                0
            ].id == target.id
            n += 1
            await asyncio.sleep(0)
        return n

    more = corpus(
        seed=8, collections=("kb-delta", "kb-eps", "file-zeta"), files_per_collection=10, chunks_per_file=20
    ).chunks
    stop = asyncio.Event()
    searcher = asyncio.create_task(search_meanwhile(stop))
    async with store.bulk():  # four writers at once, each upsert in sub-batches across the reopens
        await asyncio.gather(*(store.upsert(more[i::4]) for i in range(4)))
    stop.set()
    assert await searcher > 0
    assert sum("reopened" in r.getMessage() for r in caplog.records) >= 3
    assert await store.count(PointFilter()) == 1200
    optimized = sum("optimizing" in r.getMessage() for r in caplog.records)
    await store.upsert(data.chunks[:100])  # the bulk load is over: no optimize
    assert sum("optimizing" in r.getMessage() for r in caplog.records) == optimized
    target = data.chunks[321]
    flt = PointFilter(collection_names=(str(target.meta["collection_name"]),))
    assert (await store.search(StoreQuery(filter=flt, limit=1, dense=target.dense)))[0].id == target.id
    await store.close()


async def test_close_waits_for_a_running_optimize(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path, tuning=IndexTuning(indexing_threshold_kb=100))
    await store.open(manifest())
    await store.upsert(corpus(files_per_collection=10, chunks_per_file=20).chunks)
    task = asyncio.create_task(store.optimize())
    await asyncio.sleep(0)
    await store.close()
    assert task.done()
    await task
    again = EdgeStore(tmp_path)
    await again.open(manifest())
    assert await again.count(PointFilter()) == 600
    await again.close()


@pytest.mark.parametrize("int8", [True, False])
async def test_the_int8_setting_reaches_the_shard(tmp_path: Path, int8: bool) -> None:
    store = EdgeStore.from_settings(StoreSettings(dense_int8=int8), tmp_path)
    await store.open(manifest())
    await store.close()
    config = json.loads((store.root / "shard" / "edge_config.json").read_text())  # the engine's own
    dense = config["vectors"]["text-dense"]
    assert dense.get("quantization_config") == (
        {"scalar": {"type": "int8", "always_ram": True}} if int8 else None
    )


def _quantized_files(root: Path) -> list[Path]:
    return sorted(root.rglob("vector_storage-text-dense/quantized.data"))


async def test_dense_search_picks_candidates_from_an_int8_copy_and_returns_exact_cosines(
    tmp_path: Path,
) -> None:
    """The int8 copy (the default) only chooses candidates: scores and order are the float32
    cosines, the same as an index without the copy.  An index built without it gains it at its
    next optimize and still answers the same."""
    data = corpus(files_per_collection=10, chunks_per_file=20)  # 600 points, ~900 KB of vectors
    alpha = [c for c in data.chunks if c.meta["collection_name"] == "kb-alpha"]
    rng = np.random.default_rng(11)
    queries = [query_near(rng, center) for center in data.centers for _ in range(3)]

    async def answers(store: EdgeStore) -> list[list[tuple[str, float]]]:
        out = []
        for q in queries:
            flt = PointFilter(collection_names=("kb-alpha",))
            hits = await store.search(StoreQuery(flt, 10, dense=q, prefetch_limit=10))
            out.append([(h.id, h.score) for h in hits])
        return out

    results = {}
    for int8 in (True, False):
        store = EdgeStore(
            tmp_path / str(int8), tuning=IndexTuning(dense_int8=int8, indexing_threshold_kb=100)
        )
        await store.open(manifest())
        await store.upsert(data.chunks)
        await store.optimize()
        assert bool(_quantized_files(store.root)) is int8
        results[int8] = await answers(store)
        await store.close()
    matrix = np.stack([np.asarray(c.dense) for c in alpha])

    def assert_exact(answered: list[list[tuple[str, float]]]) -> None:
        for q, got in zip(queries, answered, strict=True):
            cosines = matrix @ q
            best = np.argsort(-cosines)[:10]
            assert [i for i, _ in got] == [alpha[b].id for b in best]
            assert np.allclose([s for _, s in got], cosines[best], atol=1e-5)  # not int8 scores

    assert_exact(results[True])
    for with_copy, without in zip(results[True], results[False], strict=True):
        assert [i for i, _ in with_copy] == [i for i, _ in without]

    # an index built without the copy, opened with the default: it answers the same before and
    # after the optimize that builds the copy
    older = EdgeStore(tmp_path / "False", tuning=IndexTuning(indexing_threshold_kb=100))
    await older.open(manifest())
    assert await answers(older) == results[False]
    await older.upsert(data.chunks[:1])  # a write, then the optimize an ingest runs
    await older.optimize()
    assert _quantized_files(older.root)
    after = await answers(older)
    assert [[i for i, _ in a] for a in after] == [[i for i, _ in r] for r in results[False]]
    await older.close()

    # turned off: float32 scans at once, though the index keeps its int8 copy until an optimize
    off = EdgeStore(tmp_path / "True", tuning=IndexTuning(dense_int8=False, indexing_threshold_kb=100))
    await off.open(manifest())
    assert _quantized_files(off.root)
    assert_exact(await answers(off))
    await off.close()


SEARCH_POOL_CHILD = textwrap.dedent(
    """
    import asyncio, os, sys
    from pathlib import Path
    import numpy as np
    from ragd.store.edge_store import EdgeStore
    from ragd.store.tuning import IndexTuning
    from ragd.types import IndexManifest, PointFilter, StoredChunk, StoreQuery

    async def main() -> None:
        store = EdgeStore(Path(sys.argv[1]), tuning=IndexTuning(search_threads=int(sys.argv[2])))
        await store.open(IndexManifest(**__MANIFEST__))
        v = np.ones(__DIM__, dtype=np.float32) / np.sqrt(__DIM__)
        meta = {"collection_name": "k"}
        ids = [f"00000000-0000-0000-0000-{i:012d}" for i in range(10)]
        await store.upsert([StoredChunk(id=i, content="c", meta=meta, dense=v) for i in ids])
        await store.search(StoreQuery(PointFilter(collection_names=("k",)), 3, dense=v, prefetch_limit=3))
        names = [Path(f"/proc/self/task/{t}/comm").read_text().strip() for t in os.listdir("/proc/self/task")]
        print(sum(name.startswith("edge-search") for name in names))
        await store.close()

    asyncio.run(main())
    """
)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads through /proc (Linux)")
@pytest.mark.parametrize(("asked", "expected"), [(0, os.cpu_count()), (3, 3)])
def test_the_engine_search_pool_has_one_thread_per_cpu(tmp_path: Path, asked: int, expected: int) -> None:
    """Left to itself Edge starts 8 search threads even on 2 cores: they fight the model for them."""
    done = subprocess.run(
        [sys.executable, "-c", _child_code(SEARCH_POOL_CHILD), str(tmp_path), str(asked)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip().splitlines()[-1]) == expected


async def test_a_search_runs_on_the_event_loop_s_thread_and_writes_on_the_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine holds the GIL while it searches: a worker thread would only add hand-offs
    (docs/benchmarks.md, "Served throughput").  Writes stay off the loop."""
    import threading

    from ragd.store import edge_store

    threads: dict[str, int] = {}
    real_search, real_engine = edge_store._search, edge_store._engine

    def search(*args: object) -> object:
        threads["search"] = threading.get_ident()
        return real_search(*args)  # type: ignore[arg-type]

    def engine(fn: object, what: str) -> object:
        threads.setdefault(what, threading.get_ident())
        return real_engine(fn, what)  # type: ignore[arg-type]

    monkeypatch.setattr(edge_store, "_search", search)
    monkeypatch.setattr(edge_store, "_engine", engine)
    data = corpus(files_per_collection=2, chunks_per_file=3)
    store = EdgeStore(tmp_path)
    await store.open(manifest())
    try:
        await store.upsert(data.chunks)
        hits = await store.search(StoreQuery(PointFilter(), 3, dense=data.centers[0], prefetch_limit=3))
    finally:
        await store.close()
    assert len(hits) == 3
    loop_thread = threading.get_ident()
    assert threads["search"] == loop_thread
    assert threads["upsert"] != loop_thread
