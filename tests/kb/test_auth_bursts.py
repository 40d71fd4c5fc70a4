"""Failed authentication counted per client address: one burst per window, bounded memory."""

from __future__ import annotations

from ragd.kb.auth_bursts import FailedAuthBursts


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_one_burst_per_window_per_client() -> None:
    clock = Clock()
    bursts = FailedAuthBursts(3, 60.0, clock=clock)
    assert [bursts.failed("10.0.0.1") for _ in range(7)] == [None, None, 3, None, None, None, None]
    assert [bursts.failed("10.0.0.2") for _ in range(3)] == [None, None, 3]  # counted apart
    clock.now += 59.9
    assert bursts.failed("10.0.0.1") is None  # still the first window
    clock.now += 0.1
    assert [bursts.failed("10.0.0.1") for _ in range(4)] == [None, None, 3, None]  # a new window


def test_failures_below_the_threshold_in_one_window_are_no_burst() -> None:
    clock = Clock()
    bursts = FailedAuthBursts(3, 10.0, clock=clock)
    for _ in range(5):
        assert bursts.failed("10.0.0.1") is None
        assert bursts.failed("10.0.0.1") is None
        clock.now += 10.0


def test_it_remembers_at_most_max_clients_addresses() -> None:
    clock = Clock()
    bursts = FailedAuthBursts(2, 60.0, clock=clock, max_clients=100)
    for i in range(1000):
        bursts.failed(f"10.0.{i // 256}.{i % 256}")
    assert len(bursts._windows) <= 100
    assert bursts.failed("10.0.3.231") == 2  # the newest are kept: its second failure is a burst
