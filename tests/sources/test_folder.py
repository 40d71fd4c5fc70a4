"""FolderSource: keys and sha256 fingerprints, the folder ingest's ignore rules, stat reuse, path safety."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

import ragd.sources.folder as folder_module
from ragd.errors import ExtractionError, Forbidden, NotFound
from ragd.ingest.sources import collect
from ragd.sources.base import ItemFailure, SourceItem, SourceReader
from ragd.sources.folder import FolderEntry, FolderSource, KnownStat
from tests.support.listing import FailingListing

OLD_NS = 1_600_000_000 * 10**9  # 2020: far outside the racy window


def write(root: Path, rel: str, data: bytes | str = b"x") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    return path


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def scan(source: SourceReader) -> list[SourceItem | ItemFailure]:
    return [entry async for entry in source.scan()]


async def entries(source: FolderSource, known: dict[str, KnownStat] | None = None) -> list[FolderEntry]:
    found = [entry async for entry in source.scan_with_stats(known)]
    assert all(isinstance(e, FolderEntry) for e in found), found
    return [e for e in found if isinstance(e, FolderEntry)]


async def test_keys_are_relative_posix_paths_with_sha256_fingerprints(tmp_path: Path) -> None:
    big = os.urandom(3 * folder_module.HASH_CHUNK + 17)  # hashed in several chunks
    write(tmp_path, "a.md", "alpha")
    write(tmp_path, "sub/deep/b.bin", big)
    items = await scan(FolderSource(tmp_path))
    assert items == [
        SourceItem(key="a.md", fingerprint=sha(b"alpha"), name="a.md", size=5),
        SourceItem(key="sub/deep/b.bin", fingerprint=sha(big), name="b.bin", size=len(big)),
    ]


async def test_ignores_match_the_folder_ingest(tmp_path: Path) -> None:
    for rel in [
        "a.md",
        "b.log",
        "sub/c.md",
        "sub/d.tmp",
        "sub/deep/e.md",
        "other/deep/f.md",
        ".hidden/g.md",
        ".env",
        "node_modules/pkg/h.js",
        "pkg/__pycache__/i.pyc",
        "keep/j.txt",
        "Thumbs.db",  # operating-system and Office junk
        "sub/desktop.ini",
        "sub/Desktop.ini",
        ".DS_Store",
        "._a.md",
        "~$report.docx",
        "other/~$lock.xlsx",
    ]:
        write(tmp_path, rel)
    write(tmp_path, ".gitignore", "*.log\n")
    write(tmp_path, "sub/.gitignore", "*.tmp\ndeep/\n")  # applies to sub/ only
    keys = {item.key for item in await scan(FolderSource(tmp_path, ignore=["keep/"]))}
    assert keys == {"a.md", "sub/c.md", "other/deep/f.md"}
    assert keys == {f.path.relative_to(tmp_path).as_posix() for f in collect([tmp_path], ignore=["keep/"])}


async def test_known_size_and_mtime_reuse_the_fingerprint_without_reading(tmp_path: Path) -> None:
    path = write(tmp_path, "doc.txt", "first")
    os.utime(path, ns=(OLD_NS, OLD_NS))
    source = FolderSource(tmp_path)
    [entry] = await entries(source)
    assert entry.stable
    assert entry.mtime_ns == OLD_NS
    known = entry.known
    assert known == (5, OLD_NS, sha(b"first"))

    # Same size, mtime forced back: the documented trade-off, the edit goes unseen (the file is not read).
    path.write_text("other")
    os.utime(path, ns=(OLD_NS, OLD_NS))
    [reused] = await entries(source, {"doc.txt": known})
    assert reused.item.fingerprint == sha(b"first")
    # The constructor's ``known`` feeds plain scan() the same way.
    items = await scan(FolderSource(tmp_path, known={"doc.txt": known}))
    assert [i.fingerprint for i in items if isinstance(i, SourceItem)] == [sha(b"first")]
    # Without ``known``, or once the mtime moves, the file is hashed again.
    [fresh] = await entries(source)
    assert fresh.item.fingerprint == sha(b"other")
    os.utime(path, ns=(OLD_NS + 1, OLD_NS + 1))
    [moved] = await entries(source, {"doc.txt": known})
    assert moved.item.fingerprint == sha(b"other")


async def test_a_size_change_is_seen_even_with_the_same_mtime(tmp_path: Path) -> None:
    path = write(tmp_path, "doc.txt", "first")
    os.utime(path, ns=(OLD_NS, OLD_NS))
    [entry] = await entries(FolderSource(tmp_path))
    assert entry.known is not None
    path.write_text("longer text")
    os.utime(path, ns=(OLD_NS, OLD_NS))
    [again] = await entries(FolderSource(tmp_path), {"doc.txt": entry.known})
    assert again.item.fingerprint == sha(b"longer text")


async def test_a_just_modified_file_is_not_stable(tmp_path: Path) -> None:
    write(tmp_path, "doc.txt", "now")
    [entry] = await entries(FolderSource(tmp_path))
    assert not entry.stable
    assert entry.known is None
    assert entry.item.fingerprint == sha(b"now")


async def test_an_unreadable_file_is_an_item_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "ok.txt", "fine")
    write(tmp_path, "locked.txt", "secret")

    def refuse(path: Path) -> str:
        if path.name == "locked.txt":
            raise PermissionError(13, "Permission denied", str(path))
        return sha(path.read_bytes())

    monkeypatch.setattr(folder_module, "_sha256", refuse)
    items = await scan(FolderSource(tmp_path))
    assert items == [
        ItemFailure("locked.txt", "EXTRACTION_FAILED", "cannot read the file (Permission denied)"),
        SourceItem(key="ok.txt", fingerprint=sha(b"fine"), name="ok.txt", size=4),
    ]


async def test_a_subfolder_that_cannot_be_listed_is_a_prefix_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "a.txt", "kept")
    write(tmp_path, "private/deep/b.txt", "hidden")
    write(tmp_path, "z.txt", "kept")
    FailingListing(monkeypatch).deny(tmp_path.resolve() / "private")

    items = await scan(FolderSource(tmp_path))

    assert items[0] == ItemFailure(
        "private/",
        "EXTRACTION_FAILED",
        "cannot list the folder (Permission denied); the files indexed from it are kept",
        hides="private/",
        listing=True,
    )
    assert [item.key for item in items[1:]] == ["a.txt", "z.txt"]
    assert not any(isinstance(item, ItemFailure) for item in items[1:])


async def test_a_subfolder_deleted_during_the_scan_is_simply_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "a.txt", "kept")
    write(tmp_path, "gone/b.txt", "deleted")
    gone = tmp_path.resolve() / "gone"
    FailingListing(monkeypatch).failures[gone] = FileNotFoundError(2, "No such file or directory", str(gone))

    assert [item.key for item in await scan(FolderSource(tmp_path))] == ["a.txt"]


@pytest.mark.parametrize("exc", [PermissionError(13, "Permission denied"), OSError(5, "Input/output error")])
async def test_a_root_that_cannot_be_listed_fails_the_whole_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exc: OSError
) -> None:
    write(tmp_path, "a.txt", "kept")
    exc.filename = str(tmp_path.resolve())
    FailingListing(monkeypatch).failures[tmp_path.resolve()] = exc

    with pytest.raises(ExtractionError, match="cannot list the folder") as caught:
        await scan(FolderSource(tmp_path))
    assert str(exc.strerror) in str(caught.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
async def test_a_file_without_read_permission_is_an_item_failure(tmp_path: Path) -> None:
    path = write(tmp_path, "locked.txt", "secret")
    path.chmod(0)
    try:
        [failure] = await scan(FolderSource(tmp_path))
    finally:
        path.chmod(0o600)
    assert isinstance(failure, ItemFailure)
    assert failure.code == "EXTRACTION_FAILED"


async def test_symlinks_escaping_the_root_are_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", write(tmp_path, "outside.txt", "secret")
    write(root, "real.txt", "inside")
    (root / "escape.txt").symlink_to(outside)
    (root / "alias.txt").symlink_to(root / "real.txt")
    (root / "linked_dir").symlink_to(tmp_path, target_is_directory=True)  # never followed
    source = FolderSource(root)
    items = await scan(source)
    assert items == [
        SourceItem(key="alias.txt", fingerprint=sha(b"inside"), name="alias.txt", size=6),
        ItemFailure("escape.txt", "FORBIDDEN", "a symlink to a file outside the folder (not read)"),
        SourceItem(key="real.txt", fingerprint=sha(b"inside"), name="real.txt", size=6),
    ]
    with pytest.raises(Forbidden):
        await source.load(SourceItem(key="escape.txt", fingerprint="", name="escape.txt"))
    with pytest.raises(Forbidden):
        await source.load(SourceItem(key="linked_dir/outside.txt", fingerprint="", name="outside.txt"))


async def test_load_returns_the_file_as_a_blob(tmp_path: Path) -> None:
    write(tmp_path, "sub/doc.md", "# hi")
    source = FolderSource(tmp_path)
    [item] = await scan(source)
    assert isinstance(item, SourceItem)
    blob = await source.load(item)
    assert blob.name == "doc.md"
    assert blob.path == (tmp_path / "sub/doc.md").resolve()
    assert blob.read() == b"# hi"
    await source.release(blob)  # a no-op: the file stays
    assert (tmp_path / "sub/doc.md").exists()


@pytest.mark.parametrize("key", ["../outside.txt", "sub/../../outside.txt", "/etc/passwd", "", "a\0b"])
async def test_load_refuses_keys_outside_the_root(tmp_path: Path, key: str) -> None:
    root = tmp_path / "root"
    write(root, "sub/doc.md")
    write(tmp_path, "outside.txt", "secret")
    with pytest.raises(Forbidden):
        await FolderSource(root).load(SourceItem(key=key, fingerprint="", name="x"))


async def test_load_refuses_ignored_vanished_and_folder_keys(tmp_path: Path) -> None:
    write(tmp_path, ".env", "TOKEN=1")
    write(tmp_path, "node_modules/x.js")
    write(tmp_path, "sub/gone.md")
    source = FolderSource(tmp_path)
    [item] = await scan(source)
    (tmp_path / "sub/gone.md").unlink()
    for key in [".env", "node_modules/x.js", "sub/gone.md", "sub", "sub/gone.md/x"]:
        with pytest.raises(NotFound):
            await source.load(SourceItem(key=key, fingerprint="", name="x"))
    assert item.key == "sub/gone.md"


async def test_a_missing_root_is_not_found(tmp_path: Path) -> None:
    source = FolderSource(tmp_path / "nope")
    with pytest.raises(NotFound, match="no such folder"):
        await scan(source)
    with pytest.raises(NotFound):
        await source.load(SourceItem(key="a.txt", fingerprint="", name="a.txt"))
    write(tmp_path, "file.txt")
    with pytest.raises(NotFound):
        await scan(FolderSource(tmp_path / "file.txt"))
