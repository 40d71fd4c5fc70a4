"""Build an ONNX graph of a BERT sentence encoder straight from ``model.safetensors`` (no torch).

The graph is the Hugging Face ``BertModel`` forward pass — word + position + token-type
embeddings, LayerNorm, N post-norm layers of multi-head self-attention (padding masked) and an
exact (erf) GELU feed-forward — followed by masked pooling (mean or CLS) and L2 normalisation:

    input_ids, attention_mask, token_type_ids  int64 [batch, seq]
        -> sentence_embedding                   float32 [batch, hidden]

Each layer is written with onnxruntime's fused CPU kernels (``com.microsoft`` domain):
``Attention`` (the Q, K and V projections in one matrix, scaled dot product, softmax, the
padding mask), ``SkipLayerNormalization`` (bias + residual + LayerNorm) and ``BiasGelu`` —
6 nodes a layer instead of ~40 plain ONNX ones, which onnxruntime's own fusions did not
recognise.  Same numbers (cosine to the plain graph ≥ 0.9999995); a one-query embedding
measured ~0.3 ms faster of ~3 ms in a search, a batch of 16 x 256 tokens ~10% faster.

With ``pooling=None`` the graph stops at ``last_hidden_state`` [batch, seq, hidden], the shape
of a plain transformer export.  Sizes, head count, depth and epsilon come from ``config.json``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

from ragd.embed.model_source import Pooling
from ragd.errors import ConfigurationError

BUILDER_VERSION = "2"
OPSET = 18
IR_VERSION = 9
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
POOLED_OUTPUT = "sentence_embedding"
#: onnxruntime's contrib-op domain (its fused transformer kernels), version 1
ORT_DOMAIN = "com.microsoft"
HIDDEN_OUTPUT = "last_hidden_state"
Weights = Mapping[str, npt.NDArray[Any]]


@dataclass(frozen=True, slots=True)
class BertConfig:
    """The part of a Hugging Face BERT ``config.json`` the graph depends on."""

    hidden_size: int
    num_heads: int
    num_layers: int
    intermediate_size: int
    layer_norm_eps: float

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_heads

    @classmethod
    def from_file(cls, path: Path) -> BertConfig:
        raw = json.loads(path.read_text(encoding="utf-8"))
        problems = [
            f"{key}={raw.get(key)!r}"
            for key, allowed in (
                ("model_type", {"bert", None}),
                ("hidden_act", {"gelu", None}),
                ("position_embedding_type", {"absolute", None}),
            )
            if raw.get(key) not in allowed
        ]
        if problems:
            raise ConfigurationError(
                f"{str(path)!r} is not a BERT encoder ragd can convert ({', '.join(problems)})",
                hint="use a BERT-architecture model, or ship an ONNX export as onnx/model.onnx",
            )
        config = cls(
            hidden_size=int(raw["hidden_size"]),
            num_heads=int(raw["num_attention_heads"]),
            num_layers=int(raw["num_hidden_layers"]),
            intermediate_size=int(raw["intermediate_size"]),
            layer_norm_eps=float(raw.get("layer_norm_eps", 1e-12)),
        )
        if config.hidden_size % config.num_heads:
            raise ConfigurationError(f"{str(path)!r}: hidden_size is not a multiple of num_attention_heads")
        return config


class _GraphBuilder:
    """Accumulates nodes and initializers under unique names."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def const(self, name: str, value: npt.ArrayLike, dtype: type = np.float32) -> str:
        self.initializers.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(self, op_type: str, *inputs: str, output: str | None = None, **attrs: Any) -> str:
        self._count += 1
        out = output or f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def fused(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        """A node of onnxruntime's contrib domain (:data:`ORT_DOMAIN`)."""
        self._count += 1
        out = f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], domain=ORT_DOMAIN, **attrs))
        return out

    def weight_t(self, weights: Weights, prefix: str) -> str:
        """HF's ``[out, in]`` dense weight, transposed for ``x @ W``."""
        return self.const(f"{prefix}.weight_t", weights[f"{prefix}.weight"].T)

    def dense_add_norm(self, x: str, residual: str, weights: Weights, prefix: str, eps: float) -> str:
        """``LayerNorm(x @ W.T + b + residual)``: HF's ``{prefix}.dense`` then ``{prefix}.LayerNorm``."""
        projected = self.op("MatMul", x, self.weight_t(weights, f"{prefix}.dense"))
        gamma = self.const(f"{prefix}.LayerNorm.weight", weights[f"{prefix}.LayerNorm.weight"])
        beta = self.const(f"{prefix}.LayerNorm.bias", weights[f"{prefix}.LayerNorm.bias"])
        bias = self.const(f"{prefix}.dense.bias", weights[f"{prefix}.dense.bias"])
        return self.fused("SkipLayerNormalization", projected, residual, gamma, beta, bias, epsilon=eps)

    def layer_norm(self, x: str, weights: Weights, prefix: str, eps: float) -> str:
        gamma = self.const(f"{prefix}.weight", weights[f"{prefix}.weight"])
        beta = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.op("LayerNormalization", x, gamma, beta, axis=-1, epsilon=eps)


def build_bert_graph(config: BertConfig, weights: Weights, pooling: Pooling | None) -> onnx.ModelProto:
    """The ONNX model for ``config`` with ``weights`` (HF names; a ``bert.`` prefix is accepted)."""
    weights = _strip_prefix(weights)
    g = _GraphBuilder()
    _constants(g)
    hidden = _embeddings(g, config, weights)
    mask = g.op("Cast", "attention_mask", output="mask_i32", to=TensorProto.INT32)  # Attention's mask
    for index in range(config.num_layers):
        hidden = _encoder_layer(g, config, weights, prefix=f"encoder.layer.{index}", x=hidden, mask=mask)
    if pooling is None:
        g.op("Identity", hidden, output=HIDDEN_OUTPUT)
        output = helper.make_tensor_value_info(
            HIDDEN_OUTPUT, TensorProto.FLOAT, ["batch", "sequence", config.hidden_size]
        )
    else:
        _pool_and_normalise(g, hidden, pooling)
        output = helper.make_tensor_value_info(
            POOLED_OUTPUT, TensorProto.FLOAT, ["batch", config.hidden_size]
        )
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"]) for n in INPUT_NAMES]
    graph = helper.make_graph(g.nodes, "bert_sentence_encoder", inputs, [output], g.initializers)
    # onnxruntime validates the graph on load; the tests also run onnx.checker on it
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(ORT_DOMAIN, 1)],
        producer_name="ragd",
        ir_version=IR_VERSION,
    )


def _strip_prefix(weights: Weights) -> Weights:
    if "embeddings.word_embeddings.weight" in weights:
        return weights
    if "bert.embeddings.word_embeddings.weight" in weights:
        return {key.removeprefix("bert."): value for key, value in weights.items()}
    raise ConfigurationError("the weights file holds no BERT embeddings (embeddings.word_embeddings.weight)")


def _constants(g: _GraphBuilder) -> None:
    g.const("zero_i64", 0, np.int64)
    g.const("one_i64", 1, np.int64)
    g.const("axes_0", [0], np.int64)
    g.const("axes_1", [1], np.int64)
    g.const("axes_2", [2], np.int64)


def _embeddings(g: _GraphBuilder, config: BertConfig, weights: Weights) -> str:
    prefix = "embeddings"
    seq_len = g.op("Squeeze", g.op("Shape", "input_ids", start=1, end=2), "axes_0")
    positions = g.op("Range", "zero_i64", seq_len, "one_i64")
    word = g.op("Gather", g.const("word_emb", weights[f"{prefix}.word_embeddings.weight"]), "input_ids")
    pos = g.op("Gather", g.const("pos_emb", weights[f"{prefix}.position_embeddings.weight"]), positions)
    kind = g.op(
        "Gather", g.const("type_emb", weights[f"{prefix}.token_type_embeddings.weight"]), "token_type_ids"
    )
    summed = g.op("Add", g.op("Add", word, kind), pos)
    return g.layer_norm(summed, weights, f"{prefix}.LayerNorm", config.layer_norm_eps)


def _encoder_layer(
    g: _GraphBuilder, config: BertConfig, weights: Weights, *, prefix: str, x: str, mask: str
) -> str:
    attn = f"{prefix}.attention"
    qkv = [f"{attn}.self.{name}" for name in ("query", "key", "value")]
    stacked = np.concatenate([weights[f"{p}.weight"].T for p in qkv], axis=1)  # [hidden, 3 * hidden]
    qkv_weight = g.const(f"{attn}.qkv.weight", stacked)
    qkv_bias = g.const(f"{attn}.qkv.bias", np.concatenate([weights[f"{p}.bias"] for p in qkv]))
    # scale defaults to 1/sqrt(head size); padded keys are masked out before the softmax
    context = g.fused("Attention", x, qkv_weight, qkv_bias, mask, num_heads=config.num_heads)
    x = g.dense_add_norm(context, x, weights, f"{attn}.output", config.layer_norm_eps)
    intermediate = f"{prefix}.intermediate.dense"
    projected = g.op("MatMul", x, g.weight_t(weights, intermediate))
    inner = g.fused("BiasGelu", projected, g.const(f"{intermediate}.bias", weights[f"{intermediate}.bias"]))
    return g.dense_add_norm(inner, x, weights, f"{prefix}.output", config.layer_norm_eps)


def _pool_and_normalise(g: _GraphBuilder, hidden: str, pooling: Pooling) -> None:
    if pooling is Pooling.CLS:
        pooled = g.op("Gather", hidden, "zero_i64", axis=1)
    else:
        mask_f32 = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
        mask = g.op("Unsqueeze", mask_f32, "axes_2")
        summed = g.op("ReduceSum", g.op("Mul", hidden, mask), "axes_1", keepdims=0)
        count = g.op("ReduceSum", mask, "axes_1", keepdims=0)
        pooled = g.op("Div", summed, g.op("Max", count, g.const("min_count", 1e-9)))
    norm = g.op("ReduceL2", pooled, "axes_1", keepdims=1)
    g.op("Div", pooled, g.op("Max", norm, g.const("min_norm", 1e-12)), output=POOLED_OUTPUT)
