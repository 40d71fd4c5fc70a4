"""On-disk cache of ONNX graphs built by :mod:`ragd.embed.bert_onnx`.

A graph is keyed by the sha256 of the weights file, ``config.json``, the pooling mode and
:data:`~ragd.embed.bert_onnx.BUILDER_VERSION`, so new weights or a new builder never reuse a
stale file.  The key is also stored in the model's metadata (serialised after the graph), which
lets the loader reject a file that parses but was cut short.  Files are written to a temporary
name and renamed, so a crash never leaves a half-written graph under the real name.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
from pathlib import Path

from onnx import helper
from safetensors import SafetensorError
from safetensors.numpy import load_file

from ragd.embed.bert_onnx import BUILDER_VERSION, BertConfig, build_bert_graph
from ragd.embed.model_source import ModelFolder
from ragd.errors import ConfigurationError

logger = logging.getLogger(__name__)

KEY_METADATA = "ragd_graph_key"
MAX_GRAPH_BYTES = 2_000_000_000  # protobuf's single-message limit (weights are stored inline)
_HASH_BLOCK = 1 << 20


def graph_key(folder: ModelFolder) -> str:
    """Content key of the graph that :func:`build_graph_file` makes for ``folder``."""
    digest = hashlib.sha256()
    digest.update(f"builder={BUILDER_VERSION};pooling={folder.pooling.value};".encode())
    digest.update(folder.config_file.read_bytes())
    digest.update(file_sha256(folder.weights_file).encode())
    return digest.hexdigest()


def cached_graph_path(cache_dir: Path, key: str) -> Path:
    return cache_dir / f"bert-{key[:32]}.onnx"


def build_graph_file(folder: ModelFolder, path: Path, key: str) -> None:
    """Convert ``folder``'s safetensors into an ONNX graph at ``path`` (atomically)."""
    size = folder.weights_file.stat().st_size
    if size > MAX_GRAPH_BYTES:
        raise ConfigurationError(
            f"{str(folder.weights_file)!r} is {size / 1e9:.1f} GB, too large to convert in one ONNX file",
            hint="ship an ONNX export with the model as onnx/model.onnx",
        )
    started = time.perf_counter()
    try:
        weights = load_file(str(folder.weights_file))
    except (OSError, SafetensorError) as exc:
        raise ConfigurationError(f"cannot read weights {str(folder.weights_file)!r}: {exc}") from exc
    model = build_bert_graph(BertConfig.from_file(folder.config_file), weights, folder.pooling)
    helper.set_model_props(model, {KEY_METADATA: key, "ragd_source": folder.name})
    write_atomically(model.SerializeToString(), path)
    logger.info("built ONNX graph for %s in %.2f s: %s", folder.name, time.perf_counter() - started, path)


def write_atomically(data: bytes, path: Path) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same folder and a rename."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise ConfigurationError(
            f"cannot write to the model cache {str(path.parent)!r}: {exc}",
            hint="set embedding.cache_dir (or data_dir) to a writable folder",
        ) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except OSError as exc:
        Path(temp_name).unlink(missing_ok=True)
        raise ConfigurationError(f"cannot write the ONNX graph {str(path)!r}: {exc}") from exc


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()
