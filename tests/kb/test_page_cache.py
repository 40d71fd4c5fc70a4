"""The disk cache of drawn pages: entries by key, the least recently used dropped over the budget."""

from __future__ import annotations

import os
import time
from pathlib import Path

from ragd.kb.page_cache import PageCache


def aged(cache_dir: Path, seconds_ago: float) -> None:
    """Every entry in the folder last used ``seconds_ago``."""
    when = time.time() - seconds_ago
    for entry in cache_dir.iterdir():
        os.utime(entry, (when, when))


def test_entries_come_back_by_key_and_the_least_recently_used_go_first(tmp_path: Path) -> None:
    cache = PageCache(tmp_path, max_bytes=3500)
    cache.put("a", b"A" * 1000)
    cache.put("b", b"B" * 1000)
    aged(tmp_path, 60)
    assert cache.get("a") == b"A" * 1000  # used now: kept longer than b
    cache.put("c", b"C" * 1000)
    cache.put("d", b"D" * 1000)  # 4000 bytes > 3500: the oldest go until 3150 at most
    assert cache.get("b") is None
    assert cache.get("a") == b"A" * 1000
    assert cache.get("d") == b"D" * 1000
    assert sum(p.stat().st_size for p in tmp_path.iterdir()) == 3000


def test_a_zero_budget_keeps_nothing_and_an_entry_over_the_budget_is_not_kept(tmp_path: Path) -> None:
    off = PageCache(tmp_path / "off", max_bytes=0)
    off.put("a", b"x")
    assert off.get("a") is None
    assert not (tmp_path / "off").exists()
    small = PageCache(tmp_path / "small", max_bytes=10)
    small.put("big", b"x" * 11)
    assert small.get("big") is None
