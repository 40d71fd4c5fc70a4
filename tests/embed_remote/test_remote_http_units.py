"""Pure pieces of the remote layer: backoff, Retry-After parsing, batching, vector checks."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from ragd.embed.remote_http import Backoff, batched, parse_retry_after, unit_vectors
from ragd.errors import EmbeddingFailed


def test_backoff_grows_exponentially_with_jitter_and_a_cap() -> None:
    backoff = Backoff(base_s=0.1, max_s=1.0)
    for attempt, ceiling in [(1, 0.1), (2, 0.2), (3, 0.4), (4, 0.8), (5, 1.0), (9, 1.0)]:
        delays = [backoff.delay(attempt) for _ in range(200)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(set(delays)) > 1  # jittered


def test_retry_after_wins_over_backoff_but_is_capped() -> None:
    backoff = Backoff(base_s=0.1, max_retry_after_s=5.0)
    assert backoff.delay(1, 2.5) == 2.5
    assert backoff.delay(1, 60.0) == 5.0


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        (None, None),
        ("", None),
        ("7", 7.0),
        ("1.5", 1.5),
        ("-3", 0.0),
        ("soon", None),
        ("Wed, 21 Oct 2026 07:28:10 GMT", 10.0),
        ("Wed, 21 Oct 2026 07:27:00 GMT", 0.0),
    ],
)
def test_parse_retry_after(header: str | None, seconds: float | None) -> None:
    now = datetime(2026, 10, 21, 7, 28, 0, tzinfo=UTC)
    assert parse_retry_after(header, now=now) == seconds


def test_batched() -> None:
    assert list(batched([1, 2, 3, 4, 5], 2)) == [[1, 2], [3, 4], [5]]
    assert list(batched([], 3)) == []
    with pytest.raises(ValueError, match="positive"):
        list(batched([1], 0))


def test_unit_vectors_normalise_to_float32() -> None:
    vectors = unit_vectors([[3.0, 4.0], [0.0, -2.0]], count=2, dimension=2, source="x")
    np.testing.assert_allclose(np.stack(vectors), [[0.6, 0.8], [0.0, -1.0]], rtol=1e-6)
    assert all(v.dtype == np.float32 for v in vectors)


@pytest.mark.parametrize(
    ("rows", "count", "dimension", "reason"),
    [
        ([[1.0, 0.0]], 2, 2, r"1 vector\(s\) for 2"),
        ([[1.0, 0.0], [1.0]], 2, None, "malformed"),
        ([[1.0, 0.0]], 1, 3, "2-dimensional vectors, expected 3"),
        ([["a", "b"]], 1, None, "malformed"),
        ([[]], 1, None, "malformed"),
        ([[float("nan"), 1.0]], 1, None, "non-finite"),
    ],
)
def test_unit_vectors_reject_bad_rows(
    rows: list[object], count: int, dimension: int | None, reason: str
) -> None:
    with pytest.raises(EmbeddingFailed, match=reason):
        unit_vectors(rows, count=count, dimension=dimension, source="x")
