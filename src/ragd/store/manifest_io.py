"""Reading, writing and checking the :class:`IndexManifest` stored with an index.

Embedded (Edge): ``ragd-manifest.json`` beside the shard, written atomically.
Remote (Qdrant server): the collection's ``metadata`` under :data:`METADATA_KEY`.
Both use the same JSON object: the manifest's fields by name.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragd.errors import IndexMismatch
from ragd.types import DenseSpace, IndexManifest

log = logging.getLogger(__name__)

MANIFEST_FILE = "ragd-manifest.json"
METADATA_KEY = "ragd_manifest"

FIX_HINT = (
    "start ragd with the embedding/sparse/chunking settings the index was built with, "
    "or point it at a new collection (store.collection) or data dir and re-ingest"
)


def manifest_to_dict(manifest: IndexManifest) -> dict[str, Any]:
    """The manifest as a JSON object (``extra_dense``: a list of objects, one per named model)."""
    data = dataclasses.asdict(manifest)
    data["extra_dense"] = [_space_dict(space) for space in manifest.extra_dense]
    if not manifest.sparse_groups:  # the one-vector layout's manifest stays as older ragd wrote it
        del data["sparse_groups"]
    if not manifest.sparse_groups or manifest.sparse_grouping == "vectors":  # so does a grouped one's
        del data["sparse_grouping"]
    if manifest.dense_precision == "fp32":  # so does an fp32 index's
        del data["dense_precision"]
    return data


def _space_dict(space: DenseSpace) -> dict[str, Any]:
    data = dataclasses.asdict(space)
    if space.precision == "fp32":
        del data["precision"]
    return data


def manifest_from_dict(data: Mapping[str, Any], where: str) -> IndexManifest:
    """Parse a stored manifest; a missing or unknown field is an index we can't trust."""
    names = {f.name for f in dataclasses.fields(IndexManifest)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise IndexMismatch(
            f"the index manifest at {where} has fields this ragd does not know: {', '.join(unknown)}",
            hint="upgrade ragd, or " + FIX_HINT,
        )
    try:
        fields = dict(data)
        fields["extra_dense"] = tuple(DenseSpace(**space) for space in fields.get("extra_dense", ()))
        return IndexManifest(**fields)
    except (TypeError, AttributeError) as exc:
        raise IndexMismatch(f"the index manifest at {where} is incomplete ({exc})", hint=FIX_HINT) from exc


def check_manifest(found: IndexManifest, expected: IndexManifest, where: str) -> IndexManifest:
    """The manifest an existing index is opened with: the configuration's, with the index's own
    layout (how its sparse groups are kept: an index is read as it was made).  Raise
    IndexMismatch naming every other field that differs between index and configuration."""
    opened = dataclasses.replace(expected, sparse_grouping=found.sparse_grouping)
    problems = found.mismatches(opened)
    if problems:
        raise IndexMismatch(
            f"the index at {where} was built differently: " + "; ".join(problems), hint=FIX_HINT
        )
    return opened


def read_manifest_file(path: Path) -> IndexManifest | None:
    """The manifest stored at ``path``, or None when there is none."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise IndexMismatch(f"the index manifest {path} is not valid JSON: {exc}", hint=FIX_HINT) from exc
    if not isinstance(data, dict):
        raise IndexMismatch(f"the index manifest {path} is not a JSON object", hint=FIX_HINT)
    return manifest_from_dict(data, str(path))


def write_manifest_file(path: Path, manifest: IndexManifest) -> None:
    """Write the manifest atomically: a temporary file, fsync, then rename over ``path``."""
    text = json.dumps(manifest_to_dict(manifest), indent=2, sort_keys=True) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=".manifest-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    log.info("wrote index manifest %s", path)
