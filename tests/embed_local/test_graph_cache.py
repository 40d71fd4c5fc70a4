"""The converted ONNX graph is built once, reused from the cache, and rebuilt when damaged."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest

from ragd.embed.graph_cache import KEY_METADATA, cached_graph_path, graph_key, write_atomically
from ragd.embed.hf_tokenizer import HfTokenizer
from ragd.embed.model_source import ModelFolder, Pooling
from ragd.embed.onnx_runner import OnnxEncoder, open_encoder


@pytest.fixture(scope="module")
def built_graph(packaged: ModelFolder, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache folder holding one freshly built graph (built by this module, not borrowed)."""
    cache = tmp_path_factory.mktemp("graph-cache")
    encoder = open_encoder(packaged, cache, batch_threads=1, query_threads=1)
    assert encoder.built
    return encoder.source


def _probe(encoder: OnnxEncoder, packaged: ModelFolder) -> np.ndarray:
    tokenizer = HfTokenizer.from_file(packaged.tokenizer_file, 256)
    return encoder.encode(tokenizer.pad(tokenizer.encode_for_model(["cache probe"])))


def test_second_open_reuses_the_cached_graph(packaged: ModelFolder, built_graph: Path) -> None:
    mtime = built_graph.stat().st_mtime_ns
    encoder = open_encoder(packaged, built_graph.parent, batch_threads=1, query_threads=1)

    assert not encoder.built
    assert encoder.source == built_graph
    assert built_graph.stat().st_mtime_ns == mtime
    assert [p.name for p in built_graph.parent.iterdir()] == [built_graph.name]  # no temp files left


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_damaged_cache_file_is_rebuilt(
    packaged: ModelFolder, built_graph: Path, tmp_path: Path, damage: str
) -> None:
    cached = tmp_path / built_graph.name
    data = built_graph.read_bytes()
    damaged = {"truncate": data[: len(data) // 2], "garbage": b"\x00not a model" * 100}[damage]
    cached.write_bytes(damaged)

    encoder = open_encoder(packaged, tmp_path, batch_threads=1, query_threads=1)

    assert encoder.built
    assert cached.read_bytes() == data
    assert np.linalg.norm(_probe(encoder, packaged)) == pytest.approx(1.0, abs=1e-5)


def test_graph_without_its_key_is_rebuilt(packaged: ModelFolder, built_graph: Path, tmp_path: Path) -> None:
    """A file cut short after the graph (metadata lost) parses fine; the stored key catches it."""
    model = onnx.load(str(built_graph))
    del model.metadata_props[:]
    (tmp_path / built_graph.name).write_bytes(model.SerializeToString())

    encoder = open_encoder(packaged, tmp_path, batch_threads=1, query_threads=1)

    assert encoder.built
    stored = {p.key: p.value for p in onnx.load(str(encoder.source), load_external_data=False).metadata_props}
    assert stored[KEY_METADATA] == graph_key(packaged)


def test_key_depends_on_weights_pooling_and_config(packaged: ModelFolder, tmp_path: Path) -> None:
    base = graph_key(packaged)
    assert graph_key(replace(packaged, pooling=Pooling.CLS)) != base

    copy = tmp_path / "copy"
    shutil.copytree(packaged.path, copy)
    assert graph_key(replace(packaged, path=copy)) == base  # content, not location
    with (copy / "model.safetensors").open("r+b") as handle:
        handle.seek(-4, 2)
        handle.write(b"\x01\x02\x03\x04")
    assert graph_key(replace(packaged, path=copy)) != base
    assert cached_graph_path(tmp_path, base) != cached_graph_path(
        tmp_path, graph_key(replace(packaged, path=copy))
    )


def test_atomic_write_replaces_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "graph.onnx"
    write_atomically(b"first", target)
    write_atomically(b"second", target)
    assert target.read_bytes() == b"second"
    assert [p.name for p in target.parent.iterdir()] == ["graph.onnx"]
