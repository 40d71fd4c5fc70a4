"""Find a local cross-encoder's files and its token window (pure file checks, no model libraries).

A cross-encoder folder is what a Hugging Face ONNX export of a sequence-classification model
looks like (e.g. ``cross-encoder/ms-marco-MiniLM-L-6-v2``)::

    <path>/model.onnx  or  <path>/onnx/model.onnx      logits [batch, 1] or [batch, 2]
    <path>/tokenizer.json                               the tokenizers-library file
    <path>/tokenizer_config.json                        optional: its model_max_length caps the window
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ragd.errors import ConfigurationError

ONNX_CANDIDATES = ("model.onnx", "onnx/model.onnx")
TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
#: transformers writes ``int(1e30)`` as model_max_length when a tokenizer has no limit
_NO_LIMIT = 1_000_000


@dataclass(frozen=True, slots=True)
class CrossEncoderFolder:
    root: Path
    onnx_file: Path
    tokenizer_file: Path
    model_max_length: int | None  # from tokenizer_config.json, None when absent or unlimited

    def window(self, max_tokens: int) -> int:
        """Tokens per (query, passage) pair: ``max_tokens``, capped by the tokenizer's own limit."""
        if self.model_max_length is None:
            return max_tokens
        return min(max_tokens, self.model_max_length)


def locate(path: Path | None) -> CrossEncoderFolder:
    """The files of the cross-encoder at ``path``; ConfigurationError naming what is missing."""
    if path is None:
        raise ConfigurationError(
            "rerank.path is required when rerank.provider is 'local'",
            hint="point RAGD_RERANK__PATH at a folder with model.onnx and tokenizer.json",
        )
    root = path.expanduser()
    if not root.is_dir():
        raise ConfigurationError(f"rerank.path {str(root)!r} is not a folder (or does not exist)")
    onnx_file = next((root / name for name in ONNX_CANDIDATES if (root / name).is_file()), None)
    tokenizer_file = root / TOKENIZER_FILE
    missing = [] if onnx_file else [" or ".join(ONNX_CANDIDATES)]
    missing += [] if tokenizer_file.is_file() else [TOKENIZER_FILE]
    if onnx_file is None or missing:
        raise ConfigurationError(
            f"rerank.path {str(root)!r} has no {' and no '.join(missing)}",
            hint="an ONNX export of the cross-encoder has both "
            "(optimum-cli export onnx --task text-classification --model <id> <path>)",
        )
    return CrossEncoderFolder(root, onnx_file, tokenizer_file, _model_max_length(root / TOKENIZER_CONFIG))


def _model_max_length(config_file: Path) -> int | None:
    if not config_file.is_file():
        return None
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigurationError(f"cannot read {str(config_file)!r}: {exc}") from exc
    value = config.get("model_max_length") if isinstance(config, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < _NO_LIMIT:
        return None
    return int(value)
