"""onnxruntime sessions that turn one padded batch into unit sentence vectors.

Two kinds of graph are run the same way:

* the graph ragd builds from safetensors (cached by :mod:`ragd.embed.graph_cache`), which pools
  and normalises inside the graph and returns ``sentence_embedding``;
* an ONNX export shipped with the model (``model.onnx`` / ``onnx/model.onnx``), whose first output
  is the token states: pooling and normalisation then happen here in numpy.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort

from ragd.embed.bert_onnx import POOLED_OUTPUT
from ragd.embed.graph_cache import KEY_METADATA, build_graph_file, cached_graph_path, file_sha256, graph_key
from ragd.embed.hf_tokenizer import ModelInputs
from ragd.embed.model_source import ModelFolder, Pooling
from ragd.embed.quantize import quantize_graph, quantized_key, quantized_path
from ragd.errors import ConfigurationError, EmbeddingFailed

logger = logging.getLogger(__name__)

Matrix = npt.NDArray[np.float32]
_PROVIDERS = ["CPUExecutionProvider"]


class OnnxEncoder:
    """One onnxruntime session: :meth:`encode` returns L2-normalised float32 [batch, dim]."""

    def __init__(
        self,
        session: ort.InferenceSession,
        pooling: Pooling | None,
        *,
        source: Path,
        built: bool,
        query_session: Callable[[], ort.InferenceSession] | None = None,
    ):
        self._session = session
        # the latency session is opened on the first query: an ingest-only process (``ragd ingest``)
        # never pays its memory (~120 MB for MiniLM: its own weights and pre-packed matrices)
        self._open_query = query_session
        self._query_session: ort.InferenceSession | None = None if query_session else session
        self._query_lock = threading.Lock()
        self._pooling = pooling  # None: the graph pools and normalises by itself
        self._inputs = {node.name for node in session.get_inputs()}
        self._output = POOLED_OUTPUT if pooling is None else session.get_outputs()[0].name
        self.source = source
        self.built = built

    def encode(self, batch: ModelInputs, *, query: bool = False) -> Matrix:
        """Vectors for ``batch``; ``query`` runs on the query session (see :func:`open_encoder`)."""
        feed = {name: array for name, array in batch.as_feed().items() if name in self._inputs}
        session = self._latency_session() if query else self._session
        try:
            (output,) = session.run([self._output], feed)
        except Exception as exc:  # onnxruntime's errors derive straight from Exception
            raise EmbeddingFailed(f"onnxruntime failed on a batch of {len(batch.input_ids)}: {exc}") from exc
        matrix = np.asarray(output, dtype=np.float32)
        if self._pooling is None:
            return matrix
        if matrix.ndim == 2:  # an export whose first output is already pooled
            return normalise(matrix)
        return normalise(pool(matrix, batch.attention_mask, self._pooling))

    def _latency_session(self) -> ort.InferenceSession:
        if self._query_session is None:
            with self._query_lock:
                if self._query_session is None:
                    assert self._open_query is not None
                    self._query_session = self._open_query()
        return self._query_session


def pool(hidden: Matrix, attention_mask: npt.NDArray[np.int64], pooling: Pooling) -> Matrix:
    """Mean over unmasked tokens, or the first ([CLS]) token, of ``hidden`` [batch, seq, dim]."""
    if pooling is Pooling.CLS:
        return hidden[:, 0, :]
    mask = attention_mask[:, :, None].astype(np.float32)
    counts = np.maximum(mask.sum(axis=1), 1e-9)
    return np.asarray((hidden * mask).sum(axis=1) / counts, dtype=np.float32)


def normalise(matrix: Matrix) -> Matrix:
    norms = np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    return np.asarray(matrix / norms, dtype=np.float32)


def session_options(threads: int) -> ort.SessionOptions:
    """``threads`` intra-op threads that sleep between runs instead of spin-waiting.

    Spinning workers would steal the cores the event loop and the store need; on a busy
    2-core machine turning it off measured 3.2 -> 4.3 chunks/s, never slower.  The query
    session does not spin either: spinning saves a lone query the workers' wake-up (1.85 ->
    1.23 ms of model time), but after every run the workers spin on, on the core the GIL
    holder needs; served search at 20 clients measured 217 -> 293 req/s without it, and the
    one-client p50 the same (5.36 ms; docs/benchmarks.md, "Served throughput").
    """
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    return options


def open_encoder(
    folder: ModelFolder,
    cache_dir: Path,
    *,
    batch_threads: int,
    query_threads: int,
    precision: str = "fp32",
    calibration: Callable[[], ModelInputs] | None = None,
) -> OnnxEncoder:
    """An encoder for ``folder``: its own ONNX export if it has one, else the cached (or new) graph.

    Two sessions share the file: documents' batches run on one with ``batch_threads`` workers (it
    may be called from several lanes at once: ``run`` is thread-safe), queries on one with
    ``query_threads`` workers, so a search's query never waits behind an ingest's batch (neither
    spins: see :func:`session_options`).  With ``precision="int8"``
    the sessions run the graph's int8 quantisation (:mod:`ragd.embed.quantize`), made once from
    ``calibration`` and cached beside it.
    """
    options = session_options(batch_threads)
    started = time.perf_counter()
    pooling: Pooling | None = None  # ragd's own graph pools and normalises by itself
    built = False
    session: ort.InferenceSession | None = None
    if folder.onnx_file is not None:
        path, pooling = folder.onnx_file, folder.pooling
        key = export_key(path) if precision == "int8" else ""
    else:
        key = graph_key(folder)
        path = cached_graph_path(cache_dir, key)
    if precision == "int8":
        int8_key = quantized_key(key)
        int8_path = quantized_path(cache_dir, int8_key)
        session = _open_cached(int8_path, int8_key, options)
        if session is None:
            if calibration is None:
                raise ConfigurationError("an int8 graph is made from a calibration batch: none was given")
            if folder.onnx_file is None and not _is_complete(path, key):
                build_graph_file(folder, path, key)
            quantize_graph(path, int8_path, int8_key, calibration())
            built = True
        path = int8_path
    elif folder.onnx_file is None:
        session = _open_cached(path, key, options)
        built = session is None
        if built:
            build_graph_file(folder, path, key)
    session = session or _session(path, options)
    query_session = functools.partial(_session, path, session_options(query_threads))
    logger.info(
        "loaded %s graph %s in %.2f s", "new" if built else "cached", path.name, time.perf_counter() - started
    )
    return OnnxEncoder(session, pooling, source=path, built=built, query_session=query_session)


def export_key(path: Path) -> str:
    """Content key of a model's own ONNX export (its bytes)."""
    return hashlib.sha256(f"export;{file_sha256(path)}".encode()).hexdigest()


def _is_complete(path: Path, key: str) -> bool:
    """Whether ``path`` holds a graph whose metadata carries ``key`` (a whole file of this key)."""
    if not path.is_file():
        return False
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception:  # a cut or foreign file: onnx raises DecodeError, OSError, ValueError
        logger.warning("cached ONNX graph %s is unreadable; rebuilding it", path)
        return False
    if {entry.key: entry.value for entry in model.metadata_props}.get(KEY_METADATA) != key:
        logger.warning("cached ONNX graph %s is incomplete or foreign; rebuilding it", path)
        return False
    return True


def _open_cached(path: Path, key: str, options: ort.SessionOptions) -> ort.InferenceSession | None:
    if not path.is_file():
        return None
    try:
        session = ort.InferenceSession(str(path), options, providers=_PROVIDERS)
    except Exception as exc:  # onnxruntime's errors derive straight from Exception
        logger.warning("cached ONNX graph %s is unreadable (%s); rebuilding it", path, exc)
        return None
    if session.get_modelmeta().custom_metadata_map.get(KEY_METADATA) != key:
        logger.warning("cached ONNX graph %s is incomplete or foreign; rebuilding it", path)
        return None
    return session


def _session(path: Path, options: ort.SessionOptions) -> ort.InferenceSession:
    try:
        return ort.InferenceSession(str(path), options, providers=_PROVIDERS)
    except Exception as exc:  # onnxruntime's errors derive straight from Exception
        raise ConfigurationError(f"onnxruntime cannot load {str(path)!r}: {exc}") from exc
