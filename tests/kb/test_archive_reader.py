"""The dataset archive reader on its own (no server): what it unpacks, what it refuses, and that a
refused archive leaves nothing outside the folder it was given."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from ragd.errors import ArchiveInvalid, PayloadTooLarge
from ragd.kb.archive_format import decode_file, decode_point
from ragd.kb.archive_reader import MAX_META_BYTES, ArchiveLimits, unpack

LIMITS = ArchiveLimits(max_bytes=1 << 20, max_members=10)
UPLOAD = "uploads/" + "0" * 8 + "-0000-0000-0000-" + "0" * 12


def manifest(parts: dict[str, bytes]) -> bytes:
    listed = [{"path": n, "bytes": len(b), "sha256": hashlib.sha256(b).hexdigest()} for n, b in parts.items()]
    head = {"format": "ragd-dataset/1", "parts": listed, "dataset": {"name": "x"}, "model": {}}
    return json.dumps(head).encode()


def tar_of(members: list[tuple[str, bytes]], **extra: Callable[[tarfile.TarInfo], None]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, body in members:
            info = tarfile.TarInfo(name)
            info.size = len(body)
            if name in extra:
                extra[name](info)
            tar.addfile(info, io.BytesIO(body))
    return out.getvalue()


def good_members() -> list[tuple[str, bytes]]:
    parts = {"files.jsonl": b"{}\n", "points-00001.jsonl": b"{}\n", UPLOAD: b"bytes"}
    return [*parts.items(), ("manifest.json", manifest(parts))]


def write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "in.tar"
    path.write_bytes(data)
    (tmp_path / "out").mkdir()
    return path


def test_a_good_archive_unpacks_with_its_parts(tmp_path: Path) -> None:
    done = unpack(write(tmp_path, tar_of(good_members())), tmp_path / "out", LIMITS)
    assert done.point_parts == (tmp_path / "out" / "points-00001.jsonl",)
    assert (tmp_path / "out" / UPLOAD).read_bytes() == b"bytes"


def test_more_members_than_the_limit_are_refused(tmp_path: Path) -> None:
    members = [(f"points-{i:05d}.jsonl", b"") for i in range(1, 12)]
    with pytest.raises(ArchiveInvalid, match="more than 10 members"):
        unpack(write(tmp_path, tar_of(members)), tmp_path / "out", LIMITS)


def test_members_that_unpack_past_the_limit_are_too_large(tmp_path: Path) -> None:
    members = [("points-00001.jsonl", b"x" * 600_000), ("points-00002.jsonl", b"x" * 600_000)]
    with pytest.raises(PayloadTooLarge):
        unpack(write(tmp_path, tar_of(members)), tmp_path / "out", LIMITS)


def test_a_member_twice_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ArchiveInvalid, match="twice"):
        unpack(
            write(tmp_path, tar_of([("files.jsonl", b"a"), ("files.jsonl", b"b")])), tmp_path / "out", LIMITS
        )


def dir_type(info: tarfile.TarInfo) -> None:
    info.type, info.size = tarfile.DIRTYPE, 0


def fifo_type(info: tarfile.TarInfo) -> None:
    info.type, info.size = tarfile.FIFOTYPE, 0


@pytest.mark.parametrize("kind", [dir_type, fifo_type], ids=["folder", "fifo"])
def test_a_member_that_is_not_a_regular_file_is_refused(
    tmp_path: Path, kind: Callable[[tarfile.TarInfo], None]
) -> None:
    data = tar_of([("files.jsonl", b"")], **{"files.jsonl": kind})
    with pytest.raises(ArchiveInvalid, match="not a regular file"):
        unpack(write(tmp_path, data), tmp_path / "out", LIMITS)


def test_a_huge_extended_header_is_refused_before_it_is_read(tmp_path: Path) -> None:
    def huge(info: tarfile.TarInfo) -> None:
        info.pax_headers = {"comment": "x" * (MAX_META_BYTES + 10)}

    data = tar_of(good_members(), **{"files.jsonl": huge})
    with pytest.raises(ArchiveInvalid, match="extended header"):
        unpack(write(tmp_path, data), tmp_path / "out", ArchiveLimits(max_bytes=8 << 20, max_members=10))


def test_a_member_the_manifest_does_not_list_is_refused(tmp_path: Path) -> None:
    members = good_members()
    members.insert(0, ("points-00002.jsonl", b"{}\n"))
    with pytest.raises(ArchiveInvalid, match="do not match its manifest"):
        unpack(write(tmp_path, tar_of(members)), tmp_path / "out", LIMITS)


def test_a_part_listed_but_absent_is_refused(tmp_path: Path) -> None:
    members = [m for m in good_members() if m[0] != UPLOAD]
    with pytest.raises(ArchiveInvalid, match="do not match its manifest"):
        unpack(write(tmp_path, tar_of(members)), tmp_path / "out", LIMITS)


def test_a_traversing_name_writes_nothing_outside(tmp_path: Path) -> None:
    data = tar_of([("../outside.txt", b"x"), *good_members()])
    with pytest.raises(ArchiveInvalid, match="not one of a dataset archive"):
        unpack(write(tmp_path, data), tmp_path / "out", LIMITS)
    assert not (tmp_path / "outside.txt").exists()
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize("bad", ["a\x00b", "\ud800"], ids=["nul", "lone-surrogate"])
def test_text_no_store_can_keep_is_refused(bad: str) -> None:
    point = {"id": "x", "content": bad, "meta": {"file_id": "f", "split_id": 0}}
    with pytest.raises(ArchiveInvalid, match=r"NUL|surrogate"):
        decode_point(json.dumps(point))
    row = {"id": "x", "name": "a.md", "status": "indexed", "enabled": True, "chunks": 1, "size": 1}
    with pytest.raises(ArchiveInvalid, match=r"NUL|surrogate"):
        decode_file(
            json.dumps({**row, "error_message": bad, "created_at": 0, "updated_at": 0, "has_upload": False})
        )


def test_a_manifest_with_a_nul_is_refused(tmp_path: Path) -> None:
    parts = {"files.jsonl": b"{}\n"}
    head = json.loads(manifest(parts))
    head["dataset"]["name"] = "bad\x00name"
    members = [*parts.items(), ("manifest.json", json.dumps(head).encode())]
    with pytest.raises(ArchiveInvalid, match="NUL"):
        unpack(write(tmp_path, tar_of(members)), tmp_path / "out", LIMITS)
