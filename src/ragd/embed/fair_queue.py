"""Work from many keys, served in turns: one key's flood never stands in front of another's query.

A model endpoint request may carry 2,048 texts; a search carries one query.  Served first come,
first served, a search that arrives behind such a request waits for all of it.  So waiting work is
kept per *key* (whose work it is: the API key's id, ``""`` for work nobody claimed) and served
round-robin: each key with work waiting gets one turn before any key gets a second.

* :class:`FairQueue` — the pure scheduler (no threads, no clock): items by key, taken in turns;
* :class:`FairTurns` — an asyncio gate over it: at most ``slots`` turns held at once, the waiting
  ones granted key by key (the model endpoints take one turn per slice of a request's inputs);
* :func:`working_for` / :func:`work_key` — whose work the current task does (a context variable,
  so the embedders need no key parameter: the delivery layer sets it, the scheduler reads it).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import Generic, TypeVar

T = TypeVar("T")

_WORK_KEY: ContextVar[str] = ContextVar("ragd_work_key", default="")


def work_key() -> str:
    """Whose work the current task does (``""``: nobody said)."""
    return _WORK_KEY.get()


@contextmanager
def working_for(key: str) -> Iterator[None]:
    """Run the block as ``key``'s work (tasks it starts inherit it)."""
    token = _WORK_KEY.set(key)
    try:
        yield
    finally:
        _WORK_KEY.reset(token)


class FairQueue(Generic[T]):
    """Items queued by key, taken round-robin: one item of each waiting key in turn, each key's
    items in the order they came.  A key that has been served goes behind every other waiting key;
    a key that arrives joins the end of the round.  Not thread-safe (one event loop, or a lock)."""

    def __init__(self) -> None:
        self._items: dict[str, deque[T]] = {}
        self._turns: deque[str] = deque()  # keys with items, next turn first

    def __len__(self) -> int:
        return sum(len(items) for items in self._items.values())

    def __bool__(self) -> bool:
        return bool(self._turns)

    def put(self, key: str, item: T) -> None:
        items = self._items.get(key)
        if items is None:
            items = self._items[key] = deque()
            self._turns.append(key)
        items.append(item)

    def take(self) -> T:
        """The next key's oldest item (IndexError when empty); that key goes to the end of the round."""
        key = self._turns.popleft()
        items = self._items[key]
        item = items.popleft()
        if items:
            self._turns.append(key)
        else:
            del self._items[key]
        return item

    def take_many(self, limit: int) -> list[T]:
        """Up to ``limit`` items, taken in turns (one per key per round)."""
        return [self.take() for _ in range(min(limit, len(self)))]


class FairTurns:
    """At most ``slots`` turns held at once; the waiting turns are granted key by key."""

    def __init__(self, slots: int = 1) -> None:
        self._slots = max(1, slots)
        self._held = 0
        self._waiting: FairQueue[asyncio.Future[None]] = FairQueue()

    @property
    def held(self) -> int:
        return self._held

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @asynccontextmanager
    async def turn(self, key: str | None = None) -> AsyncIterator[None]:
        """Hold one turn for ``key`` (default: :func:`work_key`) while the block runs."""
        await self._acquire(work_key() if key is None else key)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, key: str) -> None:
        if self._held < self._slots and not self._waiting:
            self._held += 1
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.put(key, granted)
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self._release()  # granted just as it was cancelled: pass the turn on
            raise

    def _release(self) -> None:
        self._held -= 1
        while self._waiting and self._held < self._slots:
            granted = self._waiting.take()
            if not granted.done():  # a cancelled waiter's future is done
                self._held += 1
                granted.set_result(None)
