"""What a BERT-style ONNX graph is fed, shared by the embedder and the cross-encoder.

A padded batch of ``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64,
``[batch, seq]``), the padding id a ``tokenizers`` tokenizer declares, and long texts cut to what
can fill the window before a tokenizer reads them (:func:`encode_heads`); what one request to a model
endpoint may hold (:class:`InputLimits`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from ragd.errors import InputTooLarge, InvalidRequest

TokenIds = npt.NDArray[np.int64]
E = TypeVar("E")


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


#: characters a window's token stands for at first, when a long text is cut before tokenizing: about
#: twice English's ~4.5 (spaces included); a text with fewer tokens per character is cut again, longer
CHARS_PER_TOKEN = 8
_SPACE = re.compile(r"\s")


def head(text: str, chars: int) -> str:
    """``text`` cut just before white space (any Unicode white space), never inside a word, so the
    words it keeps tokenize as they do in the whole text: before the last white space of its first
    ``chars`` characters (of their second half if there is some there); else, when they hold none
    (a first word longer than ``chars``: a base64 blob, text without spaces), before the first white
    space after them, or not at all."""
    if len(text) <= chars:
        return text
    for start in (chars // 2, 1):
        last = None
        for last in _SPACE.finditer(text, start, chars + 1):  # noqa: B007 (the last one is wanted)
            pass
        if last is not None:
            return text[: last.start()]
    after = _SPACE.search(text, chars)
    return text[: after.start()] if after is not None else text


def encode_heads(
    texts: Sequence[str], tokens: int, encode: Callable[[list[str]], Sequence[E]], filled: Callable[[E], bool]
) -> list[E]:
    """``encode`` (a batch tokenizer call) of each text cut for a window of ``tokens``, in order.

    A tokenizer costs what it reads, and truncation to a window happens after it has read the whole
    text: a 100,000-character input cost ~50x a window-sized one.  So each text is cut first to
    ``tokens`` x :data:`CHARS_PER_TOKEN` characters (:func:`head`); a cut whose encoding does not
    fill the window (``filled``) and is not the whole text is encoded again twice as long.  The
    window's tokens are those of the whole text; a long text costs about what a window-sized one does.
    """
    encoded: dict[int, E] = {}
    chars = max(1, tokens) * CHARS_PER_TOKEN
    pending = list(range(len(texts)))
    while pending:
        cuts = [head(texts[index], chars) for index in pending]
        short = []
        for index, cut, encoding in zip(pending, cuts, encode(cuts), strict=True):
            encoded[index] = encoding
            if not filled(encoding) and len(cut) < len(texts[index]):
                short.append(index)
        pending, chars = short, chars * 2
    return [encoded[index] for index in range(len(texts))]


#: texts in one request at most, by default (OpenAI's own limit)
MAX_INPUTS = 2048
#: characters in one text at most, by default (far past any model's window: it is cut to the window)
MAX_INPUT_CHARS = 100_000
#: characters in all of a request's texts at most, by default (about OpenAI's 300k tokens a request)
MAX_TOTAL_CHARS = 1_000_000


@dataclass(frozen=True, slots=True)
class InputLimits:
    """What one model endpoint request may hold (RAGD_SERVER__MAX_EMBED_INPUTS and its siblings):
    past a limit is :class:`~ragd.errors.InputTooLarge` (413), naming it."""

    inputs: int = MAX_INPUTS
    chars: int = MAX_INPUT_CHARS
    total_chars: int = MAX_TOTAL_CHARS

    @property
    def body_bytes(self) -> int:
        """The largest JSON body such a request needs: 6 bytes a character (``\\u00e9``: what JSON
        encoders that escape non-ASCII text write), a few per input, 64 KiB for the rest.  A bigger
        body is refused before it is read (the body gate): the issue's 15 MB cost a parse to refuse."""
        return 6 * self.total_chars + 16 * self.inputs + 65_536

    def check(self, texts: Sequence[str], what: str = "input") -> None:
        """At least one text, none empty; InputTooLarge past a limit, naming it."""
        if not texts:
            raise InvalidRequest(f"the {what} is empty: send a string or a list of strings")
        if len(texts) > self.inputs:
            raise InputTooLarge(
                f"{len(texts):,} {what}s in one request; at most {self.inputs:,}",
                hint="split them into batches (RAGD_SERVER__MAX_EMBED_INPUTS)",
            )
        for index, text in enumerate(texts):
            if not text:
                raise InvalidRequest(f"{what} {index} is an empty string")
        self.check_chars(texts, what)

    def check_chars(self, texts: Sequence[str], what: str = "input") -> None:
        """No text past :attr:`chars`, nor all of them past :attr:`total_chars`."""
        for index, text in enumerate(texts):
            self.check_text(f"{what} {index}", text)
        self.check_total(sum(len(text) for text in texts), f"the {what}s")

    def check_text(self, where: str, text: str) -> None:
        if len(text) > self.chars:
            raise InputTooLarge(
                f"{where} has {len(text):,} characters; at most {self.chars:,}",
                hint="the model reads only its window of tokens: send less text "
                "(RAGD_SERVER__MAX_INPUT_CHARS)",
            )

    def check_total(self, total: int, what: str) -> None:
        if total > self.total_chars:
            raise InputTooLarge(
                f"{what} have {total:,} characters in all; at most {self.total_chars:,} in one request",
                hint="split them into smaller requests (RAGD_SERVER__MAX_TOTAL_CHARS)",
            )
