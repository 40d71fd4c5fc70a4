"""Which backed-up points a restore keeps: per file, one complete version the catalog agrees with.

Pure: points and catalog records in, the plan out (ragd.kb.restore.plan_points).
"""

from __future__ import annotations

from collections.abc import Iterator

from ragd.kb.restore import NOT_IN_BACKUP, plan_points
from ragd.kb_types import FileEntry, FileStatus
from ragd.types import ChunkMeta

DS = frozenset({"ds-col"})


def version(
    file_id: str, tag: str, n: int, *, splits: range | None = None, col: str = "ds-col"
) -> list[tuple[str, ChunkMeta]]:
    return [
        (
            f"{file_id}-{tag}-{i}",
            ChunkMeta(
                collection_name=col,
                file_id=file_id,
                split_id=i,
                chunk_count=n,
                ingest_version=tag,
                file_hash=f"h-{tag}",
            ),
        )
        for i in (splits if splits is not None else range(n))
    ]


def entry(
    file_id: str, chunks: int, status: FileStatus = FileStatus.INDEXED, content_hash: str | None = None
) -> FileEntry:
    return FileEntry(
        id=file_id, dataset_id="d", name=file_id, status=status, chunks=chunks, content_hash=content_hash
    )


def points(*versions: list[tuple[str, ChunkMeta]]) -> Iterator[tuple[str, ChunkMeta]]:
    return iter([p for v in versions for p in v])


def test_a_complete_version_the_catalog_records_is_kept_whole() -> None:
    plan = plan_points(points(version("a", "v1", 3)), {"a": entry("a", 3)}, DS)
    assert plan.keep == {"a-v1-0", "a-v1-1", "a-v1-2"}
    assert plan.fixes == ()
    assert plan.dropped == 0


def test_a_half_written_file_is_left_out_and_marked_failed() -> None:
    # the index was read while the file's 5 chunks were being written: 2 of them are in the backup
    plan = plan_points(points(version("a", "v1", 5, splits=range(2))), {"a": entry("a", 5)}, DS)
    assert plan.keep == frozenset()
    (fixed,) = plan.fixes
    assert (fixed.chunks, fixed.status, fixed.error_code) == (0, FileStatus.FAILED, NOT_IN_BACKUP)


def test_a_file_caught_between_two_versions_keeps_the_one_the_catalog_records() -> None:
    # the catalog copy says v1 (3 chunks); the index read later holds v2 complete and v1's leftovers
    v1_left = version("a", "v1", 3, splits=range(1, 3))
    v2 = version("a", "v2", 4)
    plan = plan_points(points(v1_left, v2), {"a": entry("a", 3)}, DS)
    assert plan.keep == frozenset()
    assert plan.fixes[0].chunks == 0
    plan = plan_points(points(v1_left, v2), {"a": entry("a", 4)}, DS)
    assert plan.keep == {p for p, _ in v2}
    assert plan.fixes == ()


def test_the_catalog_content_hash_picks_between_two_complete_versions_of_one_size() -> None:
    v1, v2 = version("a", "v1", 2), version("b", "x", 1)
    v1b = [(f"{p}-b", m) for p, m in version("a", "v9", 2)]
    plan = plan_points(points(v1, v1b, v2), {"a": entry("a", 2, content_hash="h-v9"), "b": entry("b", 1)}, DS)
    assert plan.keep == {p for p, _ in v1b} | {"b-x-0"}


def test_points_of_a_file_the_catalog_does_not_know_are_left_out() -> None:
    plan = plan_points(points(version("new", "v1", 2)), {}, DS)
    assert plan.keep == frozenset()
    assert plan.dropped == 2


def test_a_queued_file_without_its_points_keeps_its_status_and_loses_its_count() -> None:
    plan = plan_points(points(), {"a": entry("a", 2, FileStatus.INDEXING)}, DS)
    (fixed,) = plan.fixes
    assert (fixed.status, fixed.chunks, fixed.error_code) == (FileStatus.INDEXING, 0, None)


def test_raw_collections_keep_one_complete_version_per_file() -> None:
    whole = version("r", "v1", 2, col="raw")
    half = version("s", "v1", 3, splits=range(1), col="raw")
    plan = plan_points(points(whole, half), {}, DS)
    assert plan.keep == {p for p, _ in whole}
