"""The typed chunk metadata record: what ingest writes, and what reading a stored ``meta`` gives."""

from __future__ import annotations

import numpy as np

from ragd.ingest.points import build_points, chunk_meta, is_current
from ragd.types import Chunk, ChunkMeta, Document, FileRef, PageSpan

REF = FileRef(
    file_id="f1",
    collection_name="kb",
    name="report.pdf",
    source="docs/report.pdf",
    extra={"dataset_id": "d1", "title": "Given title"},
)
DOCUMENT = Document(
    text="Intro text. Scope text.",
    extractor="kreuzberg",
    pages=(PageSpan(0, 0, 23),),
    meta={"title": "Document title", "page_count": 3, "languages": ["de"]},
)


def test_ingest_writes_the_documented_payload_keys() -> None:
    chunk = Chunk(
        text="Scope of the report.", split_id=1, start=0, end=20, headers=("Intro", "Scope"), page=2
    )
    meta = chunk_meta(REF, DOCUMENT, chunk, file_hash="h", version="v", total=4)
    payload = meta.to_payload()
    assert payload == {
        "dataset_id": "d1",
        "collection_name": "kb",
        "file_id": "f1",
        "name": "report.pdf",
        "source": "docs/report.pdf",
        "split_id": 1,
        "chunk_count": 4,
        "extractor": "kreuzberg",
        "file_hash": "h",
        "pipeline": "v",
        "ingest_version": payload["ingest_version"],
        "headers": ["Intro", "Scope"],
        "headers_breadcrumb": "Intro > Scope",
        "page": 2,
        "page_count": 3,
        "title": "Given title",  # the caller's wins over the document's
        "languages": ["en"],  # the chunk's own language, detected
    }
    assert len(payload["ingest_version"]) == 32
    assert ChunkMeta.parse(payload) == meta


def test_reading_a_foreign_point_keeps_what_fits_and_every_unknown_key() -> None:
    stored = {
        "collection_name": "c",
        "file_id": 7,  # not a string: absent
        "name": "n.md",
        "page": True,  # a bool is not a page
        "split_id": 3,
        "headers": ["a", 5, "b"],
        "disabled": "yes",  # only JSON true disables
        "user_id": "u9",
    }
    meta = ChunkMeta.parse(stored)
    assert (meta.file_id, meta.page, meta.split_id, meta.headers, meta.disabled) == (
        "",
        None,
        3,
        ("a", "b"),
        False,
    )
    assert meta.extra == {"user_id": "u9"}
    assert meta.label == "n.md"
    assert ChunkMeta.parse({"source": "s.txt"}).label == "s.txt"


def test_a_version_is_current_only_when_complete_and_made_the_same_way() -> None:
    chunks = [Chunk(text=t, split_id=i, start=0, end=len(t)) for i, t in enumerate(("one two", "three"))]
    vectors = [np.zeros(4, dtype=np.float32)] * 2
    points = build_points(REF, DOCUMENT, chunks, vectors, None, file_hash="h", version="v")
    assert is_current(points, file_hash="h", version="v")
    assert not is_current(points[:1], file_hash="h", version="v")
    assert not is_current(points, file_hash="h2", version="v")
    assert not is_current(points, file_hash="h", version="v2")
