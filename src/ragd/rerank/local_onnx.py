"""A :class:`~ragd.rerank.base.Reranker` running a local ONNX cross-encoder in onnxruntime.

The model is a BERT-style sequence classifier exported to ONNX (e.g.
``cross-encoder/ms-marco-MiniLM-L-6-v2``) in a folder (see :mod:`ragd.rerank.model_folder`).
Build with :meth:`OnnxCrossEncoder.from_settings`.

* Each (query, passage) pair is tokenized with the model's ``tokenizer.json`` (its own pair
  template: ``[CLS] query [SEP] passage [SEP]`` with token type ids 0/1 for BERT) and cut to
  the window — ``rerank.max_tokens``, capped by ``model_max_length`` in ``tokenizer_config.json``
  — by shortening the passage; the query is cut only when it alone fills the window.
* Passages are batched shortest-first (``rerank.batch_size``), padded per batch; the graph is fed
  ``input_ids``, ``attention_mask`` and ``token_type_ids`` when it declares them.
* Logits ``[batch, 1]`` go through the sigmoid; ``[batch, 2]`` through a softmax, keeping the
  probability of class 1 ("relevant").
* Inference runs in one dedicated worker thread per encoder, one batch per job: never on the event
  loop, never two at a time, and a cancelled caller cannot let a second inference start while
  the first is still running (as a lock around ``asyncio.to_thread`` would).  onnxruntime uses
  ``rerank.threads`` intra-op threads (0: its default, one per physical core).

onnxruntime and tokenizers are imported here and nowhere else in :mod:`ragd.rerank`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from tokenizers import Encoding, Tokenizer

from ragd.errors import ConfigurationError, RerankFailed
from ragd.model_inputs import ModelInputs, encode_heads, pad_id
from ragd.rerank.model_folder import locate
from ragd.rerank.pair_batch import EncodedPair, pad, query_budget
from ragd.rerank.scores import logit_probabilities
from ragd.settings import RerankSettings

logger = logging.getLogger(__name__)

_FEEDS = ("input_ids", "attention_mask", "token_type_ids")
_INT_TYPES: dict[str, type[np.signedinteger]] = {"tensor(int64)": np.int64, "tensor(int32)": np.int32}


class PairTokenizer:
    """Tokenizes (query, passage) pairs with the model's template, within a token window."""

    def __init__(self, tokenizer: Tokenizer, window: int) -> None:
        self._tokenizer = Tokenizer.from_str(tokenizer.to_str())  # truncation and padding are state
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self.budget = window - self._tokenizer.num_special_tokens_to_add(is_pair=True)
        if self.budget < 2:
            raise ConfigurationError(f"a window of {window} tokens leaves no room for a query and a passage")
        self.pad_id = pad_id(tokenizer)

    @classmethod
    def from_file(cls, path: Path, window: int) -> PairTokenizer:
        try:
            tokenizer = Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises plain Exceptions for unreadable files
            raise ConfigurationError(f"cannot load tokenizer {str(path)!r}: {exc}") from exc
        return cls(tokenizer, window)

    def encode(self, query: str, passages: Sequence[str]) -> list[EncodedPair]:
        """One pair per passage, special tokens added, at most ``budget`` content tokens each.

        Long texts are cut before the tokenizer reads them
        (:func:`~ragd.model_inputs.encode_heads`): the same tokens, for a window's worth of work."""
        (first,) = encode_heads([query], self.budget, self._encode, lambda e: len(e.ids) >= self.budget)
        keep = query_budget(len(first.ids), self.budget)
        if keep < len(first.ids):
            first.truncate(keep)
        room = self.budget - keep
        pairs = []
        for second in encode_heads(passages, room, self._encode, lambda e: len(e.ids) >= room):
            if len(second.ids) > room:
                second.truncate(room)
            encoding = self._tokenizer.post_process(first, second, add_special_tokens=True)
            pairs.append(EncodedPair(encoding.ids, encoding.type_ids))
        return pairs

    def _encode(self, texts: list[str]) -> list[Encoding]:
        return self._tokenizer.encode_batch(texts, add_special_tokens=False)


class CrossEncoderSession:
    """One onnxruntime session: a padded batch in, raw logits out."""

    def __init__(self, session: ort.InferenceSession, source: Path) -> None:
        declared = {node.name: node.type for node in session.get_inputs()}
        unknown = sorted(set(declared) - set(_FEEDS))
        if unknown or "input_ids" not in declared:
            raise ConfigurationError(
                f"{str(source)!r} expects inputs {sorted(declared)}; ragd feeds input_ids "
                "(required), attention_mask and token_type_ids"
            )
        odd = {name: kind for name, kind in declared.items() if kind not in _INT_TYPES}
        if odd:
            raise ConfigurationError(f"{str(source)!r} declares non-integer token inputs {odd}")
        self._inputs = {name: _INT_TYPES[kind] for name, kind in declared.items()}
        outputs = [node.name for node in session.get_outputs()]
        self._output = "logits" if "logits" in outputs else outputs[0]
        self._session = session

    @classmethod
    def open(cls, path: Path, threads: int) -> CrossEncoderSession:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads  # 0: onnxruntime's default
        options.inter_op_num_threads = 1
        # idle workers sleep instead of spinning on the cores the event loop needs
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        try:
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime's errors derive straight from Exception
            raise ConfigurationError(f"onnxruntime cannot load {str(path)!r}: {exc}") from exc
        return cls(session, path)

    def logits(self, batch: ModelInputs) -> npt.NDArray[np.float32]:
        feed = {
            name: array.astype(self._inputs[name], copy=False)
            for name, array in batch.as_feed().items()
            if name in self._inputs
        }
        try:
            (output,) = self._session.run([self._output], feed)
        except Exception as exc:  # onnxruntime's errors derive straight from Exception
            raise RerankFailed(f"onnxruntime failed on a batch of {len(batch.input_ids)}: {exc}") from exc
        return np.asarray(output, dtype=np.float32)


class OnnxCrossEncoder:
    """The local :class:`~ragd.rerank.base.Reranker`; build with :meth:`from_settings`."""

    def __init__(
        self, name: str, tokenizer: PairTokenizer, session: CrossEncoderSession, batch_size: int
    ) -> None:
        self.name = name
        self._tokenizer = tokenizer
        self._session = session
        self._batch_size = batch_size
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragd-rerank")
        self._closed = False

    @classmethod
    def from_settings(cls, settings: RerankSettings) -> OnnxCrossEncoder:
        """Load the folder at ``settings.path``; ConfigurationError naming what is missing or broken."""
        started = time.perf_counter()
        folder = locate(settings.path)
        window = folder.window(settings.max_tokens)
        tokenizer = PairTokenizer.from_file(folder.tokenizer_file, window)
        session = CrossEncoderSession.open(folder.onnx_file, settings.threads)
        name = f"local:{folder.root.name}"
        logger.info(
            "cross-encoder %s ready in %.2f s (window %d tokens, %s)",
            name, time.perf_counter() - started, window, folder.onnx_file,
        )  # fmt: skip
        return cls(name, tokenizer, session, settings.batch_size)

    async def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """One probability per passage, in the passages' order; RerankFailed on any failure."""
        order = sorted(range(len(passages)), key=lambda index: len(passages[index]))
        scores = [0.0] * len(passages)
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            batch_scores = await self._run(query, [passages[row] for row in rows])
            for row, score in zip(rows, batch_scores, strict=True):
                scores[row] = score
        return scores

    async def aclose(self) -> None:
        """Stop taking work; waits (off the loop) for a running batch to finish."""
        self._closed = True
        await asyncio.to_thread(self._executor.shutdown, wait=True)

    async def _run(self, query: str, passages: list[str]) -> list[float]:
        if self._closed:
            raise RerankFailed(f"the reranker {self.name} is closed")
        try:
            job = asyncio.get_running_loop().run_in_executor(self._executor, self._score, query, passages)
        except RuntimeError as exc:  # the executor was shut down under us
            raise RerankFailed(f"the reranker {self.name} is closed") from exc
        return await job

    def _score(self, query: str, passages: list[str]) -> list[float]:
        """In the worker thread: tokenize, pad, run, turn logits into probabilities."""
        try:
            pairs = self._tokenizer.encode(query, passages)
        except Exception as exc:  # tokenizers raises plain Exceptions
            raise RerankFailed(f"tokenizing {len(passages)} pair(s) failed: {exc}") from exc
        logits = self._session.logits(pad(pairs, self._tokenizer.pad_id))
        try:
            return logit_probabilities(logits, len(passages))
        except ValueError as exc:
            raise RerankFailed(f"the cross-encoder {self.name} returned unusable logits: {exc}") from exc
