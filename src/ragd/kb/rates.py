"""Requests per minute and key: token buckets, the math pure and the state in this process.

A bucket holds up to ``per_minute`` tokens (a key may spend a whole minute's worth at once) and
refills at ``per_minute / 60`` a second; a request takes one token or is refused with the whole
seconds until one is back.  Each replica keeps its own buckets: behind a balancer that spreads a
key over N replicas, the key gets up to N times its rate (docs/knowledge-bases.md, "Limits").
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from ragd.kb_types import RateSurface

#: buckets kept before the full ones (idle keys: a full bucket is the same as no bucket) are dropped
MAX_BUCKETS = 10_000


@dataclass(frozen=True, slots=True)
class Bucket:
    tokens: float
    at: float


def take(bucket: Bucket | None, *, per_minute: int, now: float) -> tuple[Bucket, int]:
    """The bucket after one request at ``now`` and the seconds to wait (0: the request is taken;
    else it is refused and the bucket only refilled).  ``None`` is a full bucket."""
    capacity = float(per_minute)
    rate = per_minute / 60.0
    refilled = capacity if bucket is None else bucket.tokens + max(0.0, now - bucket.at) * rate
    tokens = min(capacity, refilled)
    if tokens >= 1.0:
        return Bucket(tokens - 1.0, now), 0
    return Bucket(tokens, now), max(1, math.ceil((1.0 - tokens) / rate))


def is_full(bucket: Bucket, *, per_minute: int, now: float) -> bool:
    return bucket.tokens + max(0.0, now - bucket.at) * per_minute / 60.0 >= per_minute


class KeyRates:
    """This process's buckets, one per (key, surface); an event loop's requests take in turn (no
    await between reading and writing a bucket)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[tuple[str, RateSurface], tuple[Bucket, int]] = {}

    def take(self, key: str, surface: RateSurface, per_minute: int) -> int:
        """0 when ``key`` may make this request (and it is counted), else the seconds to wait.
        ``per_minute`` 0: no limit (nothing is counted)."""
        if per_minute <= 0:
            self._buckets.pop((key, surface), None)
            return 0
        now = self._clock()
        held = self._buckets.get((key, surface))
        # a changed limit starts with a full bucket
        bucket = held[0] if held is not None and held[1] == per_minute else None
        after, wait = take(bucket, per_minute=per_minute, now=now)
        if held is None and len(self._buckets) >= MAX_BUCKETS:
            self._prune(now)
        self._buckets[(key, surface)] = (after, per_minute)
        return wait

    def _prune(self, now: float) -> None:
        for name, (bucket, per_minute) in list(self._buckets.items()):
            if is_full(bucket, per_minute=per_minute, now=now):
                del self._buckets[name]
