"""The model's own tokenizer (``tokenizer.json`` via the ``tokenizers`` library).

Two jobs, kept on two tokenizer instances because truncation is mutable state:

* :class:`ragd.chunk.base.TokenCounter` for the chunkers — every token, no special
  tokens, no truncation, no padding (the bundled MiniLM file pads/truncates to 128);
* model inputs for inference — special tokens added, truncated to the model window,
  padded per batch by :meth:`HfTokenizer.pad`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer

from ragd.errors import ConfigurationError
from ragd.model_inputs import ModelInputs, TokenIds, encode_heads, pad_id

__all__ = ["HfTokenizer", "ModelInputs", "TokenIds"]

#: Texts longer than this (characters) are tokenized in pieces of about this size.
SEGMENT_CHARS = 100_000
_BREAKS = " \n\t\r"


def segments(text: str, size: int) -> list[tuple[int, int]]:
    """``[start, end)`` pieces of ``text`` of at most ``size`` characters, each ending just after
    white space when there is some in its second half (else cut where the size ends)."""
    out, start = [], 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            cut = max(text.rfind(ch, start + size // 2, end) for ch in _BREAKS)
            end = cut + 1 if cut >= 0 else end
        out.append((start, end))
        start = end
    return out


class HfTokenizer:
    """A ``tokenizers.Tokenizer`` set up for counting and for model input."""

    def __init__(self, tokenizer: Tokenizer, max_length: int) -> None:
        self.max_length = max_length
        self._counter = Tokenizer.from_str(tokenizer.to_str())
        self._counter.no_truncation()
        self._counter.no_padding()
        self._encoder = Tokenizer.from_str(tokenizer.to_str())
        self._encoder.no_padding()
        self._encoder.enable_truncation(max_length=max_length)
        self.pad_id = pad_id(tokenizer)

    @classmethod
    def from_file(cls, path: Path, max_length: int) -> HfTokenizer:
        try:
            return cls(Tokenizer.from_file(str(path)), max_length)
        except Exception as exc:  # tokenizers raises plain Exceptions for unreadable files
            raise ConfigurationError(f"cannot load tokenizer {str(path)!r}: {exc}") from exc

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Character span ``[start, end)`` of every token of ``text`` (no special tokens).

        Spans are in order and never overlap partially, but consecutive tokens split from one
        character by normalisation share its span (a Hangul syllable becomes 2–3 jamo tokens).
        A long text is tokenized in pieces cut at white space (no token spans white space), so
        the tokenizer's own memory stays bounded: a 5 MB text at once held ~460 MB of it.
        """
        if len(text) <= SEGMENT_CHARS:
            return list(self._counter.encode(text, add_special_tokens=False).offsets)
        spans: list[tuple[int, int]] = []
        for start, end in segments(text, SEGMENT_CHARS):
            encoding = self._counter.encode(text[start:end], add_special_tokens=False)
            spans.extend((a + start, b + start) for a, b in encoding.offsets)
        return spans

    def token_arrays(self, text: str) -> npt.NDArray[np.int64]:
        """:meth:`token_spans` as an ``(n, 2)`` array: 16 bytes a token instead of ~120 as tuples."""
        parts = []
        for start, end in segments(text, SEGMENT_CHARS):
            offsets = self._counter.encode(text[start:end], add_special_tokens=False).offsets
            parts.append(np.asarray(offsets, dtype=np.int64).reshape(-1, 2) + start)
        return np.concatenate(parts) if parts else np.zeros((0, 2), dtype=np.int64)

    def count(self, text: str) -> int:
        """Number of tokens in ``text`` (no special tokens)."""
        return len(self._counter.encode(text, add_special_tokens=False).ids)

    def encode_for_model(self, texts: Sequence[str]) -> list[TokenIds]:
        """Token ids with special tokens, truncated to ``max_length`` (unpadded).  A long text is
        cut before the tokenizer reads it (:func:`~ragd.model_inputs.encode_heads`): the same ids,
        for what a window-sized text costs."""
        return encode_heads(texts, self.max_length, self._encode, lambda ids: len(ids) >= self.max_length)

    def _encode(self, texts: list[str]) -> list[TokenIds]:
        if len(texts) == 1:  # a query: skip the batch call's thread pool
            encodings = [self._encoder.encode(texts[0], add_special_tokens=True)]
        else:
            encodings = self._encoder.encode_batch(texts, add_special_tokens=True)
        return [np.asarray(encoding.ids, dtype=np.int64) for encoding in encodings]

    def pad(self, sequences: Sequence[TokenIds]) -> ModelInputs:
        """Right-pad ``sequences`` to the longest of them (single-segment inputs)."""
        width = max((len(ids) for ids in sequences), default=0)
        input_ids = np.full((len(sequences), width), self.pad_id, dtype=np.int64)
        attention_mask = np.zeros((len(sequences), width), dtype=np.int64)
        for row, ids in enumerate(sequences):
            input_ids[row, : len(ids)] = ids
            attention_mask[row, : len(ids)] = 1
        return ModelInputs(input_ids, attention_mask, np.zeros_like(input_ids))
