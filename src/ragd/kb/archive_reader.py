"""Unpack a dataset archive safely and check it against its manifest, before anything is imported.

Refused (ARCHIVE_INVALID): a file that is not an uncompressed tar or ends early, a member that is
not a regular file (a symlink, a hard link, a folder, a device, a sparse file), a member name
outside the format (``../x``, ``/etc/x``, anything but :data:`archive_format.MEMBER_NAME`), a
name given twice, more than ``max_members`` members, an extended header (pax, GNU long name) over
:data:`MAX_META_BYTES` (read before tarfile would hold it in memory), a manifest that is not
``ragd-dataset/1``, and any member missing from the manifest, absent, or of another size or
SHA-256.  Members that unpack to more than ``max_bytes`` in all are FILE_TOO_LARGE.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragd.errors import ArchiveInvalid, PayloadTooLarge
from ragd.kb import archive_format as af

_READ = 1 << 20
MAX_MANIFEST_BYTES = 64 << 20
#: the largest pax or GNU long-name header accepted (tarfile reads one whole into memory)
MAX_META_BYTES = 1 << 20
_META_TYPES = frozenset(b"xgLK")


@dataclass(frozen=True, slots=True)
class ArchiveLimits:
    max_bytes: int
    max_members: int


@dataclass(frozen=True, slots=True)
class Unpacked:
    root: Path
    manifest: Mapping[str, Any]
    #: the points parts, in order
    point_parts: tuple[Path, ...]


def unpack(archive: Path, dest: Path, limits: ArchiveLimits) -> Unpacked:
    """Unpack ``archive`` into the empty folder ``dest`` and verify it (see the module's doc)."""
    try:
        _check_meta_headers(archive)
        sums = _extract(archive, dest, limits)
    except (tarfile.TarError, EOFError) as exc:
        raise ArchiveInvalid(f"the archive is not a complete tar file ({exc})") from exc
    manifest = _read_manifest(dest, sums)
    parts = {str(p.get("path")): p for p in manifest["parts"] if isinstance(p, dict)}
    found = set(sums) - {af.MANIFEST}
    if set(parts) != found or len(parts) != len(manifest["parts"]):
        missing, extra = sorted(set(parts) - found), sorted(found - set(parts))
        raise ArchiveInvalid(
            f"the archive's members do not match its manifest (missing {missing[:5]}, unlisted {extra[:5]})"
        )
    for name, part in parts.items():
        size, digest = sums[name]
        if part.get("bytes") != size or part.get("sha256") != digest:
            raise ArchiveInvalid(
                f"the archive's member {name} does not match its manifest's size and SHA-256"
            )
    if af.FILES not in parts:
        raise ArchiveInvalid(f"the archive has no {af.FILES}")
    points = sorted(n for n in parts if n.startswith("points-"))
    return Unpacked(dest, manifest, tuple(dest / n for n in points))


def _check_meta_headers(archive: Path) -> None:
    """Walk the tar's headers: an extended header over MAX_META_BYTES is refused before tarfile
    reads it (a malformed header is left to tarfile to refuse)."""
    size_of_file = archive.stat().st_size
    offset = 0
    with archive.open("rb") as fh:
        while offset + tarfile.BLOCKSIZE <= size_of_file:
            fh.seek(offset)
            block = fh.read(tarfile.BLOCKSIZE)
            if block.count(0) == tarfile.BLOCKSIZE:
                return
            size = _header_size(block[124:136])
            if size is None:
                return
            if block[156] in _META_TYPES and size > MAX_META_BYTES:
                raise ArchiveInvalid(
                    f"the archive has an extended header of {size} bytes (at most {MAX_META_BYTES})"
                )
            offset += tarfile.BLOCKSIZE + -(-size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE


def _header_size(field: bytes) -> int | None:
    """A header's size field: octal digits, or base-256 when its first bit is set."""
    if field[0] & 0x80:
        return int.from_bytes(field[1:], "big")
    try:
        return int(field.split(b"\0", 1)[0].strip() or b"0", 8)
    except ValueError:
        return None


def _extract(archive: Path, dest: Path, limits: ArchiveLimits) -> dict[str, tuple[int, str]]:
    sums: dict[str, tuple[int, str]] = {}
    total = 0
    with tarfile.open(archive, mode="r:") as tar:
        for count, info in enumerate(tar, start=1):
            if count > limits.max_members:
                raise ArchiveInvalid(f"the archive has more than {limits.max_members} members")
            name = info.name
            if not af.MEMBER_NAME.fullmatch(name):
                raise ArchiveInvalid(f"the archive's member {name[:200]!r} is not one of a dataset archive")
            if not info.isreg() or info.issparse():
                raise ArchiveInvalid(f"the archive's member {name} is not a regular file (links are refused)")
            if name in sums:
                raise ArchiveInvalid(f"the archive holds {name} twice")
            total += info.size
            if total > limits.max_bytes:
                raise PayloadTooLarge(
                    f"the archive unpacks to more than {limits.max_bytes} bytes",
                    hint="raise RAGD_CATALOG__MAX_ARCHIVE_BYTES",
                )
            source = tar.extractfile(info)
            if source is None:
                raise ArchiveInvalid(f"the archive's member {name} cannot be read")
            sums[name] = _copy(source, dest / name, info.size)
    return sums


def _copy(source: Any, target: Path, size: int) -> tuple[int, str]:
    target.parent.mkdir(parents=True, exist_ok=True)
    digest, written = hashlib.sha256(), 0
    with target.open("xb") as out:
        while block := source.read(_READ):
            digest.update(block)
            out.write(block)
            written += len(block)
    if written != size:
        raise ArchiveInvalid(f"the archive's member {target.name} ends early")
    return written, digest.hexdigest()


def _read_manifest(root: Path, sums: Mapping[str, tuple[int, str]]) -> dict[str, Any]:
    if af.MANIFEST not in sums:
        raise ArchiveInvalid(
            f"the archive has no {af.MANIFEST}: not a ragd dataset archive, or a truncated one"
        )
    if sums[af.MANIFEST][0] > MAX_MANIFEST_BYTES:
        raise ArchiveInvalid(f"the archive's {af.MANIFEST} is over {MAX_MANIFEST_BYTES} bytes")
    try:
        data = json.loads((root / af.MANIFEST).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArchiveInvalid(f"the archive's {af.MANIFEST} is not JSON ({exc})") from exc
    af.require_text(data, f"the {af.MANIFEST}")
    if not isinstance(data, dict) or data.get("format") != af.FORMAT:
        raise ArchiveInvalid(f"the archive's {af.MANIFEST} is not a {af.FORMAT} manifest")
    for key, kind in (("parts", list), ("dataset", dict), ("model", dict)):
        if not isinstance(data.get(key), kind):
            raise ArchiveInvalid(f"the archive's {af.MANIFEST} has no {key}")
    return data
