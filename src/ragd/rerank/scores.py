"""Reranker score maths: model logits and server scores onto one [0, 1] scale (pure, numpy only).

* a single logit per passage (``[n, 1]`` or ``[n]``) -> logistic sigmoid;
* two logits per passage (``[n, 2]``, "not relevant"/"relevant") -> softmax probability of
  class 1, which is ``sigmoid(l1 - l0)``;
* scores a server sent back: kept as they are when they all lie in [0, 1] (Cohere's
  ``relevance_score``, TEI with ``raw_scores: false``), else read as logits and sigmoided.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


def sigmoid(x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """The logistic function, without overflow warnings for large ``|x|``."""
    values = np.asarray(x, dtype=np.float64)
    return np.asarray(np.exp(-np.logaddexp(0.0, -values)), dtype=np.float64)


def logit_probabilities(logits: npt.ArrayLike, count: int) -> list[float]:
    """Relevance probabilities from a classifier's logits for ``count`` passages.

    ValueError (with the reason) for any other shape or a non-finite logit.
    """
    matrix = np.asarray(logits, dtype=np.float64)
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    if matrix.ndim != 2 or matrix.shape[0] != count or matrix.shape[1] not in (1, 2):
        raise ValueError(f"expected logits of shape [{count}, 1] or [{count}, 2], got {list(matrix.shape)}")
    if not np.all(np.isfinite(matrix)):
        raise ValueError("the model produced a non-finite logit")
    margin = matrix[:, 0] if matrix.shape[1] == 1 else matrix[:, 1] - matrix[:, 0]
    return [float(p) for p in sigmoid(margin)]


def outside_unit_interval(scores: Sequence[float]) -> bool:
    """True when some score is below 0 or above 1 (the server returned logits)."""
    return any(s < 0.0 or s > 1.0 for s in scores)


def unit_scores(scores: Sequence[float], *, logits: bool) -> list[float]:
    """``scores`` (finite) on [0, 1]: sigmoided when ``logits``, else as they are."""
    if not logits:
        return [float(s) for s in scores]
    return [float(p) for p in sigmoid(list(scores))]
