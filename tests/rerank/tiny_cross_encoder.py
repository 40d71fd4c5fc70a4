"""A tiny random BERT cross-encoder, written as a real ONNX graph, plus a numpy forward pass of it.

The graph is the Hugging Face ``BertForSequenceClassification`` forward pass: word + position
(+ token type) embeddings, LayerNorm, post-norm layers of multi-head self-attention with an
additive padding mask and an erf-GELU feed-forward, a tanh pooler on [CLS] and a linear
classifier -> ``logits`` [batch, labels].  Weights come from a seeded numpy RNG.

:func:`reference_logits` runs the same weights in float64 numpy on ONE unpadded sequence, so it
shares no code with the graph: masking, type ids, positions and pair order are checked for real.
The tokenizer is a small WordPiece ``tokenizer.json`` with BERT's normaliser, pre-tokenizer and
``[CLS] A [SEP] B [SEP]`` template (type ids 0/1).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

Array = npt.NDArray[np.float64]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
WORD_LIST = (
    "the a of and to in on is what where how do does cat cats dog dogs sat sit sits mat park chase run "
    "river sun moon red blue fast slow house tree water quantum physics experiment ##s ##ing ##ed . , ?"
)
WORDS = WORD_LIST.split(" ")
VOCAB = {token: index for index, token in enumerate(SPECIALS + WORDS)}


@dataclass(frozen=True)
class TinyConfig:
    hidden: int = 16
    heads: int = 2
    layers: int = 2
    intermediate: int = 32
    max_positions: int = 64
    labels: int = 1
    type_ids: bool = True  # declare a token_type_ids input (False: a DistilBERT-like graph)
    eps: float = 1e-12
    seed: int = 4  # chosen for spread-out scores that move visibly with type ids and pair order


@dataclass(frozen=True)
class TinyModel:
    config: TinyConfig
    weights: dict[str, Array] = field(repr=False)


def make_model(config: TinyConfig) -> TinyModel:
    rng = np.random.default_rng(config.seed)
    h, i = config.hidden, config.intermediate

    def dense(rows: int, cols: int, scale: float) -> Array:
        return rng.normal(0.0, scale, (rows, cols))

    w: dict[str, Array] = {
        "word": rng.normal(0.0, 1.0, (len(VOCAB), h)),
        "pos": rng.normal(0.0, 0.5, (config.max_positions, h)),
        "type": rng.normal(0.0, 1.0, (2, h)),
        "emb_g": rng.normal(1.0, 0.1, h),
        "emb_b": rng.normal(0.0, 0.1, h),
        "pool_w": dense(h, h, 0.5),
        "pool_b": rng.normal(0.0, 0.1, h),
        "cls_w": dense(h, config.labels, 0.8),
        "cls_b": rng.normal(0.0, 0.1, config.labels),
    }
    for n in range(config.layers):
        for name, shape in [
            ("q", (h, h)),
            ("k", (h, h)),
            ("v", (h, h)),
            ("o", (h, h)),
            ("f1", (h, i)),
            ("f2", (i, h)),
        ]:
            w[f"{n}.{name}_w"] = dense(*shape, 1.0 / math.sqrt(shape[0]))
            w[f"{n}.{name}_b"] = rng.normal(0.0, 0.1, shape[1])
        for norm in ("ln1", "ln2"):
            w[f"{n}.{norm}_g"] = rng.normal(1.0, 0.1, h)
            w[f"{n}.{norm}_b"] = rng.normal(0.0, 0.1, h)
    return TinyModel(config, w)


# -- the numpy reference -----------------------------------------------------------------------


def _layer_norm(x: Array, gain: Array, bias: Array, eps: float) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gain + bias


def _softmax(x: Array) -> Array:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def reference_logits(model: TinyModel, ids: Sequence[int], type_ids: Sequence[int]) -> Array:
    """Logits [labels] for one unpadded sequence (no mask needed: every token is real)."""
    c, w = model.config, model.weights
    x = w["word"][list(ids)] + w["pos"][: len(ids)]
    if c.type_ids:
        x = x + w["type"][list(type_ids)]
    x = _layer_norm(x, w["emb_g"], w["emb_b"], c.eps)
    dh = c.hidden // c.heads
    for n in range(c.layers):

        def proj(name: str, inp: Array, n: int = n) -> Array:
            return inp @ w[f"{n}.{name}_w"] + w[f"{n}.{name}_b"]

        q, k, v = (proj(name, x).reshape(len(ids), c.heads, dh).transpose(1, 0, 2) for name in "qkv")
        attention = _softmax(q @ k.transpose(0, 2, 1) / math.sqrt(dh))
        context = (attention @ v).transpose(1, 0, 2).reshape(len(ids), c.hidden)
        x = _layer_norm(proj("o", context) + x, w[f"{n}.ln1_g"], w[f"{n}.ln1_b"], c.eps)
        hidden = proj("f1", x)
        gelu = 0.5 * hidden * (1.0 + np.vectorize(math.erf)(hidden / math.sqrt(2.0)))
        x = _layer_norm(proj("f2", gelu) + x, w[f"{n}.ln2_g"], w[f"{n}.ln2_b"], c.eps)
    pooled = np.tanh(x[0] @ w["pool_w"] + w["pool_b"])
    return np.asarray(pooled @ w["cls_w"] + w["cls_b"])


def reference_probability(model: TinyModel, ids: Sequence[int], type_ids: Sequence[int]) -> float:
    """Sigmoid of the single logit, or the softmax probability of class 1 of two."""
    logits = reference_logits(model, ids, type_ids)
    if model.config.labels == 1:
        return float(1.0 / (1.0 + math.exp(-logits[0])))
    return float(_softmax(logits)[1])


# -- the ONNX graph ----------------------------------------------------------------------------


class _GraphBuilder:
    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def const(self, name: str, value: npt.ArrayLike, dtype: type = np.float32) -> str:
        self.initializers.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(self, op_type: str, *inputs: str, **attributes: object) -> str:
        output = f"{op_type.lower()}_{len(self.nodes)}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [output], **attributes))
        return output

    def linear(self, x: str, prefix: str) -> str:
        return self.op("Add", self.op("MatMul", x, f"{prefix}_w"), f"{prefix}_b")

    def norm(self, x: str, prefix: str, eps: float) -> str:
        return self.op("LayerNormalization", x, f"{prefix}_g", f"{prefix}_b", axis=-1, epsilon=eps)


def _embeddings(g: _GraphBuilder, c: TinyConfig) -> str:
    seq_len = g.op("Gather", g.op("Shape", "input_ids"), g.const("one", 1, np.int64), axis=0)
    positions = g.op("Range", g.const("zero", 0, np.int64), seq_len, "one")
    x = g.op("Add", g.op("Gather", "word", "input_ids"), g.op("Gather", "pos", positions))
    if c.type_ids:
        x = g.op("Add", x, g.op("Gather", "type", "token_type_ids"))
    return g.norm(x, "emb", c.eps)


def _attention(g: _GraphBuilder, x: str, mask: str, n: int, c: TinyConfig) -> str:
    dh = c.hidden // c.heads
    split = g.const(f"{n}.split", [0, 0, c.heads, dh], np.int64)

    def heads(name: str, perm: list[int]) -> str:
        return g.op("Transpose", g.op("Reshape", g.linear(x, f"{n}.{name}"), split), perm=perm)

    q, k, v = heads("q", [0, 2, 1, 3]), heads("k", [0, 2, 3, 1]), heads("v", [0, 2, 1, 3])
    scores = g.op("Mul", g.op("MatMul", q, k), g.const(f"{n}.scale", 1.0 / math.sqrt(dh)))
    probs = g.op("Softmax", g.op("Add", scores, mask), axis=-1)
    context = g.op("Transpose", g.op("MatMul", probs, v), perm=[0, 2, 1, 3])
    merged = g.op("Reshape", context, g.const(f"{n}.merge", [0, 0, c.hidden], np.int64))
    return g.norm(g.op("Add", g.linear(merged, f"{n}.o"), x), f"{n}.ln1", c.eps)


def _feed_forward(g: _GraphBuilder, x: str, n: int, c: TinyConfig) -> str:
    hidden = g.linear(x, f"{n}.f1")
    erf = g.op("Erf", g.op("Div", hidden, g.const(f"{n}.sqrt2", math.sqrt(2.0))))
    gelu = g.op(
        "Mul", g.op("Mul", hidden, g.const(f"{n}.half", 0.5)), g.op("Add", erf, g.const(f"{n}.1", 1.0))
    )
    return g.norm(g.op("Add", g.linear(gelu, f"{n}.f2"), x), f"{n}.ln2", c.eps)


def build_graph(model: TinyModel) -> onnx.ModelProto:
    c, g = model.config, _GraphBuilder()
    for name, array in model.weights.items():
        g.const(name, array)
    x = _embeddings(g, c)
    keep = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    additive = g.op("Mul", g.op("Sub", g.const("ones", 1.0), keep), g.const("neg", -1e4))
    mask = g.op("Unsqueeze", additive, g.const("mask_axes", [1, 2], np.int64))  # [B, 1, 1, S]
    for n in range(c.layers):
        x = _feed_forward(g, _attention(g, x, mask, n, c), n, c)
    cls = g.op("Gather", x, g.const("first", 0, np.int64), axis=1)
    pooled = g.op("Tanh", g.linear(cls, "pool"))
    g.nodes.append(helper.make_node("Identity", [g.linear(pooled, "cls")], ["logits"]))
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if c.type_ids else [])
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"]) for name in names]
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", c.labels])
    graph = helper.make_graph(g.nodes, "tiny_cross_encoder", inputs, [output], g.initializers)
    model_proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    onnx.checker.check_model(model_proto)
    return model_proto


# -- the tokenizer and the folder --------------------------------------------------------------


def build_tokenizer() -> Tokenizer:
    tokenizer = Tokenizer(models.WordPiece(VOCAB, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", VOCAB["[CLS]"]), ("[SEP]", VOCAB["[SEP]"])],
    )
    tokenizer.add_special_tokens(SPECIALS)
    return tokenizer


def write_folder(
    folder: Path, model: TinyModel, *, model_max_length: int | None = None, onnx_subdir: bool = False
) -> Path:
    """``folder`` with ``model.onnx`` (or ``onnx/model.onnx``), ``tokenizer.json`` and maybe a config."""
    onnx_file = folder / "onnx" / "model.onnx" if onnx_subdir else folder / "model.onnx"
    onnx_file.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(build_graph(model), str(onnx_file))
    build_tokenizer().save(str(folder / "tokenizer.json"))
    if model_max_length is not None:
        config = {"model_max_length": model_max_length, "do_lower_case": True}
        (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def expected_scores(model: TinyModel, query: str, passages: Sequence[str], window: int) -> list[float]:
    """What a correct adapter returns: the tokenizers library's own ``only_second`` truncation of each
    (query, passage) pair, then the numpy forward pass of each pair alone."""
    tokenizer = build_tokenizer()
    tokenizer.enable_truncation(max_length=window, strategy="only_second")
    scores = []
    for passage in passages:
        encoding = tokenizer.encode(query, passage)
        assert len(encoding.ids) <= window
        scores.append(reference_probability(model, encoding.ids, encoding.type_ids))
    return scores
