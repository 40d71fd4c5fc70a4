"""The shared length-ordered queue behind the local embedder's batches."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragd.embed.length_queue import LengthQueue, QueueClosed, fits, window_around

lengths_st = st.lists(st.integers(min_value=1, max_value=512), min_size=1, max_size=60)


@given(lengths_st, st.data(), st.integers(1, 32))
def test_window_holds_the_anchor_and_fits(lengths: list[int], data: st.DataObject, size: int) -> None:
    lengths.sort()
    anchor = data.draw(st.integers(0, len(lengths) - 1))
    lo, hi = window_around(lengths, anchor, size)
    assert lo <= anchor < hi
    assert 1 <= hi - lo <= size
    assert fits(lengths[lo], lengths[hi - 1])


@given(lengths_st, st.integers(1, 32))
def test_window_from_the_shortest_is_maximal(lengths: list[int], size: int) -> None:
    lengths.sort()
    lo, hi = window_around(lengths, 0, size)
    assert lo == 0
    if hi < len(lengths) and hi - lo < size:
        assert not fits(lengths[0], lengths[hi]), "stopped although the next row fits"


@given(st.lists(lengths_st, min_size=1, max_size=6), st.integers(1, 16))
def test_every_item_is_taken_exactly_once_and_the_lightest_caller_is_in_every_batch(
    calls: list[list[int]], size: int
) -> None:
    queue: LengthQueue[tuple[int, int]] = LengthQueue(size)
    owners = [object() for _ in calls]
    for owner, (index, lengths) in zip(owners, enumerate(calls), strict=True):
        queue.put(owner, [(length, (index, row)) for row, length in enumerate(lengths)])
    queue.close()
    pending = {(index, row) for index, lengths in enumerate(calls) for row in range(len(lengths))}
    taken: list[tuple[int, int]] = []
    while (batch := queue.take()) is not None:
        left = {index: sum(1 for i, _ in pending if i == index) for index, _ in pending}
        lightest = min(left, key=lambda index: (left[index], index))  # fewest pending, then oldest
        assert any(index == lightest for index, _ in batch), "the caller with the least work was skipped"
        assert 1 <= len(batch) <= size
        batch_lengths = [calls[index][row] for index, row in batch]
        assert batch_lengths == sorted(batch_lengths)
        assert fits(min(batch_lengths), max(batch_lengths))
        taken.extend(batch)
        pending -= set(batch)
    assert sorted(taken) == sorted((i, r) for i, lengths in enumerate(calls) for r in range(len(lengths)))
    assert len(queue) == 0


def test_a_small_call_arriving_behind_a_large_one_goes_first() -> None:
    queue: LengthQueue[str] = LengthQueue(4)
    queue.put("big", [(100, f"big{i}") for i in range(40)])
    queue.put("small", [(300, "small0"), (300, "small1")])  # longer texts, queued later
    first = queue.take()
    assert first == ["small0", "small1"]  # not after the 10 batches of the big call
    assert len(queue) == 40


def test_one_call_is_cut_like_a_sort_and_slice() -> None:
    queue: LengthQueue[int] = LengthQueue(2)
    queue.put("call", [(length, row) for row, length in enumerate([100, 10, 101, 100, 12])])
    queue.close()
    batches = list(iter(queue.take, None))
    assert batches == [[1, 4], [0, 3], [2]]


def test_alike_texts_of_different_callers_share_a_batch() -> None:
    queue: LengthQueue[str] = LengthQueue(4)
    queue.put("a", [(50, "a50"), (200, "a200")])
    queue.put("b", [(52, "b52"), (198, "b198")])
    queue.close()
    assert queue.take() == ["a50", "b52"]
    assert queue.take() == ["b198", "a200"]
    assert queue.take() is None


def test_discard_drops_only_that_callers_items() -> None:
    queue: LengthQueue[str] = LengthQueue(8)
    a, b = object(), object()
    queue.put(a, [(10, "a1"), (11, "a2")])
    queue.put(b, [(10, "b1")])
    assert queue.discard(a) == 2
    assert queue.discard(a) == 0
    queue.close()
    assert queue.take() == ["b1"]
    assert queue.take() is None


def test_a_closed_queue_refuses_items_and_wakes_waiting_workers() -> None:
    queue: LengthQueue[str] = LengthQueue(4)
    results: list[object] = []
    worker = threading.Thread(target=lambda: results.append(queue.take()))
    worker.start()
    queue.close()
    worker.join(timeout=5)
    assert not worker.is_alive()
    assert results == [None]
    with pytest.raises(QueueClosed):
        queue.put("late", [(1, "x")])


def test_a_waiting_worker_gets_items_put_later() -> None:
    queue: LengthQueue[str] = LengthQueue(4)
    results: list[object] = []
    worker = threading.Thread(target=lambda: results.append(queue.take()))
    worker.start()
    queue.put("a", [(5, "x")])
    worker.join(timeout=5)
    assert results == [["x"]]
    queue.close()


@given(st.lists(st.integers(min_value=1, max_value=512), min_size=1, max_size=80), st.integers(1, 32))
def test_a_token_budget_bounds_padded_tokens_but_never_starves(lengths: list[int], size: int) -> None:
    budget = 2048
    queue: LengthQueue[int] = LengthQueue(size, max_tokens=budget)
    queue.put(object(), [(n, n) for n in lengths])
    taken: list[int] = []
    while len(queue):
        batch = queue.take()
        assert batch is not None
        assert len(batch) <= size
        assert len(batch) == 1 or len(batch) * max(batch) <= budget  # a lone long text still runs
        taken += batch
    assert sorted(taken) == sorted(lengths)


def test_long_texts_go_fewer_to_a_batch_than_short_ones() -> None:
    queue: LengthQueue[int] = LengthQueue(16, max_tokens=2048)
    queue.put(object(), [(250, 250)] * 16 + [(40, 40)] * 16)
    first = queue.take()
    second = queue.take()
    assert first == [40] * 16  # 16 x 48 padded tokens fit the budget
    assert second == [250] * 7  # 2048 // (250 x 1.1 + 4) rows
