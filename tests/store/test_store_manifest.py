"""The manifest file and its checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragd.errors import IndexMismatch
from ragd.store.manifest_io import (
    check_manifest,
    manifest_from_dict,
    manifest_to_dict,
    read_manifest_file,
    write_manifest_file,
)
from ragd.types import DenseSpace

from .data import manifest


def test_write_then_read_round_trips_and_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "ragd-manifest.json"
    write_manifest_file(path, manifest())
    write_manifest_file(path, manifest(chunker_version="v2"))  # replaced atomically
    assert read_manifest_file(path) == manifest(chunker_version="v2")
    assert [p.name for p in tmp_path.iterdir()] == ["ragd-manifest.json"]
    assert json.loads(path.read_text()) == manifest_to_dict(manifest(chunker_version="v2"))


def test_a_missing_file_is_no_manifest(tmp_path: Path) -> None:
    assert read_manifest_file(tmp_path / "nope.json") is None


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "not a JSON object"),
        (json.dumps({**manifest_to_dict(manifest()), "future_field": 1}), "future_field"),
        (json.dumps({"dense_model": "m"}), "incomplete"),
    ],
)
def test_unreadable_manifests_are_index_mismatches(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "m.json"
    path.write_text(text)
    with pytest.raises(IndexMismatch, match=match):
        read_manifest_file(path)


def test_check_names_every_differing_field_and_how_to_fix_it() -> None:
    with pytest.raises(IndexMismatch) as info:
        check_manifest(manifest(), manifest(dense_model="e5", dense_dim=768), "/data/qdrant/x")
    text = str(info.value)
    assert "dense_model: index has 'packaged:all-MiniLM-L6-v2', configuration has 'e5'" in text
    assert "dense_dim: index has 384, configuration has 768" in text
    assert "/data/qdrant/x" in text
    assert "new collection" in text
    check_manifest(manifest(), manifest(), "here")


def test_from_dict_accepts_what_to_dict_makes() -> None:
    assert manifest_from_dict(manifest_to_dict(manifest()), "x") == manifest()


def test_named_dense_models_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "ragd-manifest.json"
    named = manifest(extra_dense=(DenseSpace(name="e5", model="e5-small", dim=384, query_prefix="query: "),))
    write_manifest_file(path, named)
    assert read_manifest_file(path) == named
    assert json.loads(path.read_text())["extra_dense"][0]["query_prefix"] == "query: "
    assert read_manifest_file(path) != manifest()
    with pytest.raises(IndexMismatch, match="dense models: index has e5=e5-small"):
        check_manifest(named, manifest(), "here")
