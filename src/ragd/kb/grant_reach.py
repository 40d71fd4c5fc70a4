"""What a grant or a source reaches, and whether one reach holds or meets another: pure rules.

    folder  a resolved absolute path: the folder and everything under it
    s3      ``bucket/prefix``: every key of the bucket that starts with the prefix ("" = all)

A grant *covers* a source when the source's reach lies inside the grant's; two grants *overlap*
when either one's reach lies inside the other's (S3 prefixes compare as strings, as S3 lists them:
``team`` holds ``team-b/``).  Records in, answers out: no I/O but resolving a folder's path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ragd.errors import Forbidden, InvalidRequest
from ragd.kb_types import SourceGrant, SourceKind
from ragd.objects.base import check_bucket

GRANTABLE = (SourceKind.FOLDER, SourceKind.S3)
MAX_TARGET = 2048
#: S3's rule for bucket names (MinIO's too)
BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


def _printable(target: str) -> None:
    if not target or len(target) > MAX_TARGET:
        raise InvalidRequest(f"a grant's target is 1-{MAX_TARGET} characters")
    if any(ord(c) < 32 for c in target):
        raise InvalidRequest("a grant's target may not hold NUL or control characters")


def folder_target(target: str) -> str:
    """An absolute, normalised folder, symlinks resolved (it need not exist yet)."""
    _printable(target)
    path = Path(target)
    if not path.is_absolute():
        raise InvalidRequest(f"a folder grant needs an absolute path, not {target[:200]!r}")
    if ".." in path.parts:
        raise InvalidRequest(f"a folder grant's path may not hold '..': {target[:200]!r}")
    return str(Path(os.path.normpath(path)).resolve())


def split_s3(target: str) -> tuple[str, str]:
    """``bucket/prefix`` -> (bucket, prefix); ``bucket`` alone is the whole bucket."""
    bucket, _, prefix = target.partition("/")
    return bucket, prefix


def s3_target(target: str, allowed_buckets: Iterable[str]) -> str:
    _printable(target)
    bucket, prefix = split_s3(target.strip())
    if not BUCKET_NAME.fullmatch(bucket):
        raise InvalidRequest(
            f"an S3 grant is 'bucket/prefix' (the prefix may be empty), not {target[:200]!r}",
            hint="a bucket name is 3-63 lowercase letters, digits, dots and hyphens",
        )
    check_bucket(bucket, tuple(allowed_buckets))
    return f"{bucket}/{prefix}"


def grant_target(
    kind: SourceKind, target: str, *, folder_roots: Iterable[Path], allowed_buckets: Iterable[str]
) -> str:
    """The normalised target of a new grant; InvalidRequest for a bad one, Forbidden outside the
    settings' outer bounds (``catalog.folder_roots``, ``s3.allowed_buckets``, when set)."""
    if kind is SourceKind.FOLDER:
        folder = folder_target(target)
        roots = [Path(r).resolve() for r in folder_roots]
        if roots and not any(Path(folder).is_relative_to(r) for r in roots):
            raise Forbidden(
                f"{folder[:200]!r} is outside every folder the operator allowed",
                hint="RAGD_CATALOG__FOLDER_ROOTS bounds every folder grant",
            )
        return folder
    if kind is SourceKind.S3:
        return s3_target(target, allowed_buckets)
    raise InvalidRequest(f"only folder and s3 sources are granted, not {kind.value!r}")


def source_reach(kind: SourceKind, config: Mapping[str, Any]) -> str | None:
    """What a source's config reaches, in a grant's terms; None for a kind grants do not bind."""
    if kind is SourceKind.FOLDER:
        return str(Path(str(config["path"])).resolve())
    if kind is SourceKind.S3:
        return f"{config['bucket']}/{config.get('prefix', '')}"
    return None


def holds(kind: SourceKind, outer: str, inner: str) -> bool:
    """Whether ``inner`` lies inside (or equals) ``outer``."""
    if kind is SourceKind.FOLDER:
        return Path(inner).is_relative_to(Path(outer))
    outer_bucket, outer_prefix = split_s3(outer)
    inner_bucket, inner_prefix = split_s3(inner)
    return outer_bucket == inner_bucket and inner_prefix.startswith(outer_prefix)


def overlaps(kind: SourceKind, a: str, b: str) -> bool:
    return holds(kind, a, b) or holds(kind, b, a)


def covering(grants: Iterable[SourceGrant], kind: SourceKind, reach: str) -> SourceGrant | None:
    """The first live grant among ``grants`` that covers ``reach``."""
    return next((g for g in grants if g.live and g.kind is kind and holds(kind, g.target, reach)), None)
