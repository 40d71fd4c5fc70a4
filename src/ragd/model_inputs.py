"""What a BERT-style ONNX graph is fed, shared by the embedder and the cross-encoder.

A padded batch of ``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64,
``[batch, seq]``), and the padding id a ``tokenizers`` tokenizer declares.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

TokenIds = npt.NDArray[np.int64]


class _Vocabulary(Protocol):
    @property
    def padding(self) -> dict[str, Any] | None: ...

    def token_to_id(self, token: str) -> int | None: ...


@dataclass(frozen=True, slots=True)
class ModelInputs:
    """One padded batch, int64 [batch, seq] each."""

    input_ids: TokenIds
    attention_mask: TokenIds
    token_type_ids: TokenIds

    def as_feed(self) -> dict[str, TokenIds]:
        return {
            "input_ids": self.input_ids,
            "attention_mask": self.attention_mask,
            "token_type_ids": self.token_type_ids,
        }


def pad_id(tokenizer: _Vocabulary) -> int:
    """The tokenizer's padding id: its padding config, else ``[PAD]`` / ``<pad>``, else 0."""
    padding = tokenizer.padding
    if padding is not None:
        return int(padding["pad_id"])
    for token in ("[PAD]", "<pad>"):
        token_id = tokenizer.token_to_id(token)
        if token_id is not None:
            return token_id
    return 0
