"""An uploaded ``.zip`` of documents, ingested member by member (agent-cli's archives, issue 34).

Each member becomes a file of its own (its own record, status and error code), named by its base
name; the archive itself is never a file.  Refused **as a whole**, before anything is kept: an
archive that is not a readable zip (``ARCHIVE_INVALID``), a member name that points outside the
archive (absolute, a drive, ``..``: ``ARCHIVE_INVALID``), members whose declared sizes add up to
more than ``RAGD_EXTRACT__MAX_UNPACKED_BYTES`` (a zip bomb: ``FILE_TOO_LARGE``, read from the
central directory before anything unpacks), or more files than ``RAGD_CATALOG__MAX_UPLOAD_FILES``
in the upload once archives are counted by their members (``INVALID_REQUEST``).

Refused **per member**, as a failed file record that is never indexed: a member over
``RAGD_EXTRACT__MAX_FILE_BYTES`` (declared, or found while unpacking it under that cap:
``FILE_TOO_LARGE``), an encrypted one (``ENCRYPTED_DOCUMENT``), a symbolic link or a nested
archive (``UNSUPPORTED_TYPE``: one level of archive is expanded, never more), a corrupt one
(``ARCHIVE_INVALID``), a name ragd cannot keep (``INVALID_REQUEST``).  Members are unpacked to
temporary files whose names come from ragd, never from the archive.
"""

from __future__ import annotations

import re
import stat
import uuid
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ragd.errors import (
    ArchiveInvalid,
    EncryptedDocument,
    InvalidRequest,
    PayloadTooLarge,
    RagError,
    UnsupportedType,
)
from ragd.kb.files import Upload, clean_file_name

#: uploads expanded member by member
ARCHIVE_SUFFIXES = (".zip",)
#: members that are archives themselves: refused (one level only)
NESTED_SUFFIXES = (".zip", ".tar", ".tgz", ".gz", ".bz2", ".xz", ".7z", ".rar", ".zst")
_DRIVE = re.compile(r"^[A-Za-z]:")
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class ZipLimits:
    max_file_bytes: int
    max_unpacked_bytes: int
    max_files: int


def is_archive(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_SUFFIXES)


def expand(uploads: Sequence[Upload], tmp_dir: Path, limits: ZipLimits) -> list[Upload]:
    """``uploads`` with each ``.zip`` replaced by its members (blocking: run it in a thread).  Every
    archive is checked whole (names, count, declared sizes) before any member is unpacked."""
    counted = sum(_count(u, limits) if is_archive(u.name) else 1 for u in uploads)
    if counted > limits.max_files:
        raise InvalidRequest(
            f"at most {limits.max_files} files per upload, archives counted by their members; got {counted}"
        )
    out: list[Upload] = []
    for upload in uploads:
        if not is_archive(upload.name):
            out.append(upload)
            continue
        archive, infos = _checked(upload, limits)
        with archive:
            out += [_member(archive, info, tmp_dir, limits) for info in infos]
    return out


def _count(upload: Upload, limits: ZipLimits) -> int:
    archive, infos = _checked(upload, limits)
    archive.close()
    return len(infos)


def _checked(upload: Upload, limits: ZipLimits) -> tuple[zipfile.ZipFile, list[zipfile.ZipInfo]]:
    """The open archive and its file members, or the reason the whole archive is refused."""
    try:
        archive = zipfile.ZipFile(upload.path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ArchiveInvalid(f"{upload.name!r} is not a readable zip archive") from exc
    try:
        infos = [info for info in archive.infolist() if not info.is_dir()]
        for info in infos:
            check_member_name(upload.name, info.filename)
        if len(infos) > limits.max_files:
            raise InvalidRequest(f"{upload.name!r} holds {len(infos)} files, over {limits.max_files}")
        total = sum(info.file_size for info in infos)
        if total > limits.max_unpacked_bytes:
            raise PayloadTooLarge(
                f"{upload.name!r} unpacks to {total:,} bytes, over {limits.max_unpacked_bytes:,}",
                hint="raise RAGD_EXTRACT__MAX_UNPACKED_BYTES if the archive is genuine, or split it",
            )
    except RagError:
        archive.close()
        raise
    return archive, infos


def check_member_name(archive: str, name: str) -> None:
    """ARCHIVE_INVALID for a member name that reaches outside the archive."""
    path = name.replace("\\", "/")
    if path.startswith("/") or _DRIVE.match(path) or ".." in path.split("/") or "\x00" in path:
        raise ArchiveInvalid(f"{archive!r}: member {name[:120]!r} points outside the archive; refused")


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, tmp_dir: Path, limits: ZipLimits) -> Upload:
    try:
        name = clean_file_name(info.filename)
    except InvalidRequest as exc:  # a name ragd cannot keep: the record goes by a neutral one
        return Upload(name="member", path=Path(), size=info.file_size, refused=exc)
    try:
        _refuse_kind(info, name)
        if info.file_size > limits.max_file_bytes:
            raise PayloadTooLarge(f"{name!r} is {info.file_size:,} bytes, over {limits.max_file_bytes:,}")
        path = tmp_dir / f"member-{uuid.uuid4().hex}"
        _unpack(archive, info, path, limits.max_file_bytes)
    except RagError as exc:
        return Upload(name=name, path=Path(), size=info.file_size, refused=exc)
    return Upload(name=name, path=path, size=path.stat().st_size)


def _refuse_kind(info: zipfile.ZipInfo, name: str) -> None:
    if info.flag_bits & 0x1:
        raise EncryptedDocument(f"{name!r} is encrypted in the archive")
    if stat.S_ISLNK(info.external_attr >> 16):
        raise UnsupportedType(f"{name!r} is a symbolic link, not a file")
    if name.lower().endswith(NESTED_SUFFIXES):
        raise UnsupportedType(f"{name!r} is an archive inside an archive: upload it on its own")


def _unpack(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path, cap: int) -> None:
    """Copy the member to ``path``, stopping past ``cap`` bytes whatever its header declared."""
    written = 0
    try:
        with archive.open(info) as src, path.open("wb") as dst:
            while chunk := src.read(_CHUNK):
                written += len(chunk)
                if written > cap:
                    raise PayloadTooLarge(f"{info.filename[:120]!r} unpacks past {cap:,} bytes")
                dst.write(chunk)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, OSError) as exc:
        path.unlink(missing_ok=True)
        raise ArchiveInvalid(f"{info.filename[:120]!r} cannot be unpacked ({type(exc).__name__})") from exc
    except PayloadTooLarge:
        path.unlink(missing_ok=True)
        raise
