"""``ragd serve`` takes its start-up heap out of the garbage collector's scans once ready."""

from __future__ import annotations

import gc

from ragd.bootstrap.heap import freeze_startup_heap


def _scanned(obj: object) -> bool:
    """Whether the collector's generations hold ``obj`` (frozen objects are in none of them)."""
    return any(o is obj for o in gc.get_objects())


def test_the_start_up_heap_is_frozen_and_later_objects_are_not() -> None:
    startup = [["model"], ["routes"]]  # alive at start-up
    try:
        frozen = freeze_startup_heap()
        assert frozen == gc.get_freeze_count() > len(startup)
        later = ["a request's list"]
        assert not _scanned(startup[0])
        assert _scanned(later)
    finally:
        gc.unfreeze()
    assert _scanned(startup[0])
