"""Dynamic int8 quantisation of an encoder graph (``RAGD_EMBEDDING__PRECISION=int8``).

The fp32 graph (ragd's own, or a model's ONNX export) goes through onnxruntime's
``quantize_dynamic``: weights int8 per output channel, activations uint8 per tensor, scaled at run
time.  Measured on all-MiniLM-L6-v2 here, quantising every projection made a 256-token batch 1.8x
faster but cost up to 0.007 nDCG@10 on a shared dataset; almost all of the error came from three of
its 24 projections (the feed-forward outputs of layers 0-2, whose inputs carry the GELU's
outliers).  So the projections are measured first: each one's int8 output is compared with its
fp32 output on a calibration batch (:func:`int8_output_error`, pure numpy), and those whose error
stands out (:func:`projections_to_keep`) stay fp32.  The choice is the model's own, not a list of
layer names, so another BERT-style model gets its own.

The result is cached beside the fp32 graph, keyed by that graph's key, the quantiser's version and
onnxruntime's (whose kernels decide the numbers), and written atomically like every cached graph.
"""

from __future__ import annotations

import hashlib
import logging
import statistics
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from ragd.embed.graph_cache import KEY_METADATA
from ragd.errors import ConfigurationError
from ragd.model_inputs import ModelInputs

logger = logging.getLogger(__name__)

QUANTIZER_VERSION = "1"
#: the ops whose constant weight is quantised (``Attention``: onnxruntime's fused Q/K/V projection)
PROJECTIONS = ("MatMul", "Attention")
#: a projection whose int8 output error is above this multiple of the median stays fp32 ...
OUTLIER_RATIO = 2.0
#: ... but never more than this share of them (the speed comes from the int8 ones)
MAX_KEPT_SHARE = 0.25
KEPT_METADATA = "ragd_int8_kept"
Array = npt.NDArray[Any]


@dataclass(frozen=True, slots=True)
class QuantReport:
    """What :func:`quantize_graph` did: projections quantised and kept fp32 (by node name)."""

    quantised: tuple[str, ...]
    kept: tuple[str, ...]
    seconds: float


def quantized_key(source_key: str) -> str:
    """Cache key of the int8 graph made from the fp32 graph whose key is ``source_key``."""
    text = f"int8;quantizer={QUANTIZER_VERSION};onnxruntime={ort.__version__};{source_key}"
    return hashlib.sha256(text.encode()).hexdigest()


def quantized_path(cache_dir: Path, key: str) -> Path:
    return cache_dir / f"int8-{key[:32]}.onnx"


def calibration_texts() -> list[str]:
    """Short paragraphs of several genres and languages, shipped with ragd (``calibration.txt``)."""
    text = resources.files("ragd.embed").joinpath("calibration.txt").read_text(encoding="utf-8")
    return [part.strip() for part in text.split("\n\n") if part.strip()]


def int8_output_error(x: Array, w: Array) -> float:
    """Relative error of ``x @ w`` when ``x`` is quantised as onnxruntime's dynamic kernels do.

    ``x`` [tokens, in] is scaled to uint8 over its whole range (zero included), ``w`` [in, out] to
    int8 symmetrically per output column; the result is ``|x_q @ w_q - x @ w| / |x @ w|``.
    """
    x = np.asarray(x, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    low, high = min(float(x.min(initial=0.0)), 0.0), max(float(x.max(initial=0.0)), 0.0)
    scale = (high - low) / 255.0 or 1.0
    zero = np.round(-low / scale)
    x_q = (np.clip(np.round(x / scale) + zero, 0, 255) - zero) * scale
    w_scale = np.abs(w).max(axis=0) / 127.0
    w_scale[w_scale == 0] = 1.0
    w_q = np.round(w / w_scale) * w_scale
    exact = x @ w
    norm = float(np.linalg.norm(exact))
    return float(np.linalg.norm(x_q @ w_q - exact)) / norm if norm else 0.0


def projections_to_keep(errors: Mapping[str, float]) -> tuple[str, ...]:
    """The projections that stay fp32: error over :data:`OUTLIER_RATIO` x the median, worst first,
    at most :data:`MAX_KEPT_SHARE` of them."""
    if not errors:
        return ()
    median = statistics.median(errors.values())
    ranked = sorted(errors, key=lambda name: errors[name], reverse=True)
    limit = int(len(errors) * MAX_KEPT_SHARE)
    return tuple(name for name in ranked[:limit] if errors[name] > OUTLIER_RATIO * median)


def quantize_graph(source: Path, target: Path, key: str, calibration: ModelInputs) -> QuantReport:
    """Write the int8 graph of the fp32 graph at ``source`` to ``target`` (atomically).

    ``key`` is stored in the model's metadata (the cache's completeness check); ``calibration`` is
    one padded batch the projections are measured on.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    started = time.perf_counter()
    try:
        model = onnx.load(str(source))
    except Exception as exc:  # onnx raises DecodeError, OSError, ValueError
        raise ConfigurationError(f"cannot read the ONNX graph {str(source)!r} to quantise it: {exc}") from exc
    _name_nodes(model)
    projections = _constant_projections(model)
    if not projections:
        raise ConfigurationError(
            f"{str(source)!r} has no projection with a constant weight to quantise",
            hint="use RAGD_EMBEDDING__PRECISION=fp32 for this model",
        )
    errors = _measure(model, projections, calibration)
    kept = projections_to_keep(errors)
    quantised = tuple(name for name in projections if name not in kept)
    props = {entry.key: entry.value for entry in model.metadata_props}
    helper.set_model_props(model, {**props, KEY_METADATA: key, KEPT_METADATA: ",".join(kept)})
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".int8-") as work:
        temp = Path(work) / "model.onnx"
        quantize_dynamic(
            model,
            temp,
            per_channel=True,
            weight_type=QuantType.QInt8,
            nodes_to_quantize=list(quantised),
            extra_options={"DefaultTensorType": TensorProto.FLOAT},
        )
        temp.replace(target)
    seconds = time.perf_counter() - started
    logger.info(
        "quantised %s to int8 in %.2f s: %d projections int8, %d kept fp32 (%s)",
        source.name,
        seconds,
        len(quantised),
        len(kept),
        ", ".join(kept) or "none",
    )
    return QuantReport(quantised, kept, seconds)


def _name_nodes(model: onnx.ModelProto) -> None:
    """Give unnamed nodes stable names (``nodes_to_quantize`` selects by name)."""
    taken = {node.name for node in model.graph.node if node.name}
    for index, node in enumerate(model.graph.node):
        if not node.name:
            name = f"{node.op_type}_{index}"
            while name in taken:
                name += "_"
            node.name = name
            taken.add(name)


def _constant_projections(model: onnx.ModelProto) -> dict[str, tuple[str, Array]]:
    """Projection nodes whose weight (input 1) is a 2-D initializer: name -> (input, weight)."""
    weights = {tensor.name: tensor for tensor in model.graph.initializer}
    out: dict[str, tuple[str, Array]] = {}
    for node in model.graph.node:
        if node.op_type in PROJECTIONS and len(node.input) > 1 and node.input[1] in weights:
            weight = numpy_helper.to_array(weights[node.input[1]])
            if weight.ndim == 2:
                out[node.name] = (node.input[0], weight)
    return out


def _measure(
    model: onnx.ModelProto, projections: Mapping[str, tuple[str, Array]], calibration: ModelInputs
) -> dict[str, float]:
    """Each projection's :func:`int8_output_error` on its real inputs for ``calibration``."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    wanted = sorted({source for source, _ in projections.values()})
    present = {output.name for output in probe.graph.output}
    for name in wanted:
        if name not in present:
            probe.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(probe.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = {node.name for node in session.get_inputs()}
    feed = {name: array for name, array in calibration.as_feed().items() if name in names}
    values = dict(zip(wanted, session.run(wanted, feed), strict=True))
    tokens = calibration.attention_mask.astype(bool)
    errors = {}
    for name, (source, weight) in projections.items():
        x = values[source]
        rows = x[tokens] if x.shape[:2] == tokens.shape else x.reshape(-1, x.shape[-1])
        errors[name] = int8_output_error(rows, weight)
    return errors


def kept_fp32(path: Path) -> Sequence[str]:
    """The projections an int8 graph at ``path`` kept fp32 (from its metadata)."""
    model = onnx.load(str(path), load_external_data=False)
    value = {entry.key: entry.value for entry in model.metadata_props}.get(KEPT_METADATA, "")
    return tuple(name for name in value.split(",") if name)
