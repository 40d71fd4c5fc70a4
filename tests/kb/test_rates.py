"""Token buckets: the pure math (table and property tests) and this process's buckets per key."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ragd.kb.rates import MAX_BUCKETS, Bucket, KeyRates, take
from ragd.kb_types import RateSurface


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_full_bucket_takes_a_minutes_worth_then_refuses_with_the_wait() -> None:
    bucket = None
    for _ in range(3):
        bucket, wait = take(bucket, per_minute=3, now=0.0)
        assert wait == 0
    bucket, wait = take(bucket, per_minute=3, now=0.0)
    assert wait == 20  # one token comes back every 60/3 s
    bucket, wait = take(bucket, per_minute=3, now=19.5)
    assert wait == 1  # whole seconds, rounded up
    _, wait = take(bucket, per_minute=3, now=20.0)
    assert wait == 0


def test_a_refused_request_costs_nothing() -> None:
    empty = Bucket(tokens=0.0, at=0.0)
    after, wait = take(empty, per_minute=60, now=0.5)
    assert wait == 1
    assert after.tokens == 0.5
    _, wait = take(after, per_minute=60, now=1.0)
    assert wait == 0


@given(
    per_minute=st.integers(1, 10_000),
    gaps=st.lists(st.floats(0, 120, allow_nan=False), min_size=1, max_size=60),
)
def test_never_more_than_the_burst_plus_the_refill(per_minute: int, gaps: list[float]) -> None:
    bucket, now, taken = None, 0.0, 0
    for gap in gaps:
        now += gap
        bucket, wait = take(bucket, per_minute=per_minute, now=now)
        taken += wait == 0
        assert 0 <= bucket.tokens <= per_minute
        assert wait >= 0
    assert taken <= per_minute + now * per_minute / 60 + 1e-6


def test_keys_and_surfaces_count_apart_and_zero_is_unlimited() -> None:
    clock = Clock()
    rates = KeyRates(clock)
    assert [rates.take("k1", RateSurface.SEARCH, 2) for _ in range(3)] == [0, 0, 30]
    assert rates.take("k2", RateSurface.SEARCH, 2) == 0  # another key: its own bucket
    assert rates.take("k1", RateSurface.CHAT, 2) == 0  # another surface: its own bucket
    assert all(rates.take("k1", RateSurface.MODELS, 0) == 0 for _ in range(100))
    assert rates.take("k1", RateSurface.SEARCH, 5) == 0  # a changed limit starts full
    clock.now += 30
    assert rates.take("k2", RateSurface.SEARCH, 2) == 0


def test_idle_keys_are_forgotten_when_the_table_is_full() -> None:
    clock = Clock()
    rates = KeyRates(clock)
    for n in range(MAX_BUCKETS):
        rates.take(f"k{n}", RateSurface.SEARCH, 60)
    clock.now += 60  # every bucket refilled: the same as no bucket
    rates.take("new", RateSurface.SEARCH, 60)
    assert len(rates._buckets) == 1
