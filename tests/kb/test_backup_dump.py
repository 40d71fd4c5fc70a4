"""The index dump of a backup on a real embedded store (no model): every point round-trips with its
vectors, and the CPU work (encoding, hashing, writing) runs off the event loop, so a server's
searches are not held up by a backup (bench/backup.py: search p50 ratio 87 before, ~1 after)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from ragd.kb import backup as backup_module
from ragd.kb import backup_format as fmt
from ragd.kb.backup import take_backup
from ragd.store.edge_store import EdgeStore
from ragd.store.manifest_io import manifest_to_dict
from ragd.types import PointFilter, StoredChunk
from tests.store.data import chunk_id, manifest, random_sparse, unit


def points(n: int) -> list[StoredChunk]:
    rng = np.random.default_rng(3)
    return [
        StoredChunk(
            id=chunk_id("f", i),
            content=f"chunk {i} — ünïcode",
            meta={"collection_name": "raw", "file_id": "f", "split_id": i, "chunk_count": n},
            dense=unit(rng.normal(size=384)),
            sparse=random_sparse(rng),
        )
        for i in range(n)
    ]


async def test_the_dump_round_trips_every_point_and_encodes_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = EdgeStore(tmp_path / "data")
    await store.open(manifest())
    written = points(7)
    await store.upsert(written)
    loop_thread = threading.get_ident()
    encoded_on: set[int] = set()
    real_encode = fmt.encode_point

    def encode(chunk: StoredChunk) -> str:
        encoded_on.add(threading.get_ident())
        return real_encode(chunk)

    monkeypatch.setattr(fmt, "encode_point", encode)
    monkeypatch.setattr(backup_module, "SCROLL_PAGE", 3)  # several pages
    try:
        report = await take_backup(
            tmp_path / "bk",
            store=store,
            index_manifest=manifest_to_dict(manifest()),
            copy_catalog=lambda path: path.write_bytes(b"catalog"),
            files_dir=tmp_path / "no-files",
        )
        assert report.points == await store.count(PointFilter()) == 7
    finally:
        await store.close()
    assert encoded_on
    assert loop_thread not in encoded_on
    info = fmt.verify_backup(tmp_path / "bk")
    assert info.points == 7
    lines = (tmp_path / "bk" / fmt.INDEX).read_text(encoding="utf-8").splitlines()
    back = {c.id: c for c in map(fmt.decode_point, lines)}
    for chunk in written:
        got = back[chunk.id]
        assert got.content == chunk.content
        assert got.meta["split_id"] == chunk.meta["split_id"]
        assert got.dense is not None
        assert chunk.dense is not None
        np.testing.assert_array_equal(got.dense, chunk.dense)
        assert got.sparse is not None
        assert chunk.sparse is not None
        assert got.sparse.indices == chunk.sparse.indices
        np.testing.assert_allclose(got.sparse.values, chunk.sparse.values, rtol=1e-6)
