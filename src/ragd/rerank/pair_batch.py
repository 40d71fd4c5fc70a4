"""(query, passage) pairs as model input: the token budget split and per-batch padding (pure numpy).

The query is never cut unless it alone leaves no room in the window: then it keeps the first half
of the budget and the passage the rest.  Otherwise the passage takes what the query leaves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragd.model_inputs import ModelInputs


def query_budget(query_tokens: int, budget: int) -> int:
    """Query tokens kept out of ``budget`` (the window less the pair's special tokens)."""
    return query_tokens if query_tokens < budget else budget // 2


@dataclass(frozen=True, slots=True)
class EncodedPair:
    """One tokenized pair, special tokens included, unpadded."""

    ids: Sequence[int]
    type_ids: Sequence[int]


def pad(pairs: Sequence[EncodedPair], pad_id: int) -> ModelInputs:
    """Right-pad ``pairs`` to the longest of them (mask 0 and type id 0 on padding)."""
    width = max((len(pair.ids) for pair in pairs), default=0)
    input_ids = np.full((len(pairs), width), pad_id, dtype=np.int64)
    attention_mask = np.zeros((len(pairs), width), dtype=np.int64)
    token_type_ids = np.zeros((len(pairs), width), dtype=np.int64)
    for row, pair in enumerate(pairs):
        length = len(pair.ids)
        input_ids[row, :length] = pair.ids
        attention_mask[row, :length] = 1
        token_type_ids[row, :length] = pair.type_ids
    return ModelInputs(input_ids, attention_mask, token_type_ids)
