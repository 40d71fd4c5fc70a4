"""Work from many keys served in turns: the pure scheduler, the asyncio turns over it, and the
query batcher that uses it (one key's flood of queries does not stand in front of another's)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from ragd.embed.base import DenseSpec
from ragd.embed.fair_queue import FairQueue, FairTurns, work_key, working_for
from ragd.embed.query_batcher import QueryBatcher
from ragd.embed.serving import SLICE, InputType, ServedModels
from ragd.types import DenseVector


def test_a_later_key_s_one_item_is_served_in_the_first_slice() -> None:
    queue: FairQueue[tuple[str, int]] = FairQueue()
    for index in range(150):
        queue.put("A", ("A", index))
    queue.put("B", ("B", 0))
    first = queue.take_many(SLICE)
    assert ("B", 0) in first
    assert first[:2] == [("A", 0), ("B", 0)]  # A was there first: its turn, then B's
    assert [item for _, item in first if _ == "A"] == list(range(15))  # each key's in its order
    assert len(queue) == 150 - 15


def test_keys_take_turns_one_item_each_in_the_order_they_came() -> None:
    queue: FairQueue[str] = FairQueue()
    for key, count in (("A", 3), ("B", 1), ("C", 2)):
        for index in range(count):
            queue.put(key, f"{key}{index}")
    assert [queue.take() for _ in range(len(queue))] == ["A0", "B0", "C0", "A1", "C1", "A2"]
    assert not queue
    with pytest.raises(IndexError):
        queue.take()


def test_a_key_that_arrives_joins_the_end_of_the_round() -> None:
    queue: FairQueue[str] = FairQueue()
    for item in ("A0", "A1", "A2"):
        queue.put("A", item)
    queue.put("B", "B0")
    assert queue.take() == "A0"
    queue.put("C", "C0")
    assert queue.take_many(10) == ["B0", "A1", "C0", "A2"]


def test_the_work_key_is_the_block_s_and_tasks_inherit_it() -> None:
    async def main() -> list[str]:
        seen = [work_key()]
        with working_for("A"):
            seen.append(await asyncio.create_task(asyncio.sleep(0, work_key())))
            with working_for("B"):
                seen.append(work_key())
            seen.append(work_key())
        seen.append(work_key())
        return seen

    assert asyncio.run(main()) == ["", "A", "B", "A", ""]


def test_turns_waiting_are_granted_key_by_key() -> None:
    async def main() -> list[str]:
        turns = FairTurns(slots=1)
        order: list[str] = []

        async def slices(key: str, count: int) -> None:
            for index in range(count):
                async with turns.turn(key):
                    order.append(f"{key}{index}")
                    await asyncio.sleep(0)

        a = asyncio.create_task(slices("A", 5))
        a2 = asyncio.create_task(slices("A", 5))  # a second request of the same key
        await asyncio.sleep(0)
        b = asyncio.create_task(slices("B", 2))
        await asyncio.gather(a, a2, b)
        assert turns.held == 0
        return order

    order = asyncio.run(main())
    assert len(order) == 12
    assert order.index("B0") <= 3  # not behind A's ten slices: after the turns in flight
    assert order.index("B1") <= order.index("B0") + 3  # then every other turn at most


def test_a_cancelled_waiter_gives_its_turn_on() -> None:
    async def main() -> list[str]:
        turns = FairTurns(slots=1)
        order: list[str] = []
        release = asyncio.Event()

        async def hold(key: str) -> None:
            async with turns.turn(key):
                order.append(key)
                await release.wait()

        first = asyncio.create_task(hold("A"))
        await asyncio.sleep(0)
        cancelled = asyncio.create_task(hold("B"))
        third = asyncio.create_task(hold("C"))
        await asyncio.sleep(0)
        cancelled.cancel()
        await asyncio.sleep(0)
        release.set()
        await asyncio.gather(first, third)
        assert turns.held == 0
        return order

    assert asyncio.run(main()) == ["A", "C"]


class GatedModel:
    """A blocking batch embedder whose first call waits for ``release``; records every call."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.started = threading.Event()
        self.release = threading.Event()

    def __call__(self, texts: list[str]) -> list[DenseVector]:
        self.calls.append(list(texts))
        self.started.set()
        self.release.wait(timeout=30)
        return [np.full(3, float(len(t)), dtype=np.float32) for t in texts]


def test_the_query_batcher_serves_another_key_s_query_in_the_next_batch() -> None:
    model = GatedModel()

    async def main() -> None:
        with ThreadPoolExecutor(max_workers=1) as pool:
            batcher = QueryBatcher(model, pool, max_batch=8)
            with working_for("A"):
                flood = [asyncio.create_task(batcher.embed(f"a{i}")) for i in range(40)]
            await asyncio.sleep(0)
            await asyncio.to_thread(model.started.wait, 30)  # a0..a7 run; a8..a39 queue
            with working_for("B"):
                search = asyncio.create_task(batcher.embed("b-query"))
            await asyncio.sleep(0)
            model.release.set()
            await asyncio.gather(search, *flood)

    asyncio.run(main())
    assert model.calls[0] == [f"a{i}" for i in range(8)]
    assert "b-query" in model.calls[1], model.calls  # first come, first served put it in the 6th batch
    embedded = sorted(t for call in model.calls for t in call)
    assert embedded == sorted([f"a{i}" for i in range(40)] + ["b-query"])


class Recording:
    """A dense model that records each call's texts (as ``key:text`` of the caller's work key)."""

    def __init__(self) -> None:
        self.spec = DenseSpec(model="rec", dimension=2, max_tokens=16)
        self.calls: list[list[str]] = []

    @property
    def tokenizer(self) -> None:
        return None

    async def embed_query(self, text: str) -> DenseVector:
        return (await self.embed_documents([text]))[0]

    async def embed_documents(self, texts: Sequence[str]) -> list[DenseVector]:
        self.calls.append([f"{work_key()}:{text}" for text in texts])
        await asyncio.sleep(0)  # the model is busy: others may queue
        return [np.zeros(2, dtype=np.float32) for _ in texts]

    async def aclose(self) -> None:
        return None


def test_a_model_endpoint_request_is_embedded_in_turns_shared_by_key() -> None:
    """Key A's 64 inputs (4 slices) and, just after, key B's one: B's slice is the second embedded."""
    model = Recording()
    served = ServedModels.build(model, {}, {})

    async def main() -> None:
        turns = FairTurns(slots=1)

        async def request(key: str, count: int) -> int:
            with working_for(key):
                texts = [f"{key.lower()}{i}" for i in range(count)]
                embedded = await served.embed(served.default, texts, InputType.DOCUMENT, turns=turns)
                return len(embedded.vectors)

        a = asyncio.create_task(request("A", 64))
        await asyncio.sleep(0)
        b = asyncio.create_task(request("B", 1))
        assert list(await asyncio.gather(a, b)) == [64, 1]

    asyncio.run(main())
    assert [len(call) for call in model.calls] == [SLICE, 1, SLICE, SLICE, SLICE]
    assert model.calls[1] == ["B:b0"]
    assert model.calls[0][0] == "A:a0"
