"""watch_folder on real filesystem events: batches of changed keys, debounced, filtered, stoppable."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from ragd.errors import NotFound
from ragd.sources.watch import watch_folder

WAIT_S = 10.0  # generous: the machine is shared
QUIET_S = 0.4  # no batch for this long: the watcher has reported everything


class Watch:
    """A running watch_folder whose batches land in a queue."""

    def __init__(self, root: Path, stop: asyncio.Event) -> None:
        self.root = root
        self.stop = stop
        self.batches: asyncio.Queue[set[str]] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None

    async def next(self, timeout: float = WAIT_S) -> set[str]:
        return await asyncio.wait_for(self.batches.get(), timeout)

    async def until(self, expected: set[str]) -> list[set[str]]:
        """Batches until their union covers ``expected``; the union must then equal it."""
        got: list[set[str]] = []
        async with asyncio.timeout(WAIT_S):
            while not expected <= set().union(*got):
                got.append(await self.batches.get())
        assert set().union(*got) == expected, got
        return got

    async def quiet(self) -> list[set[str]]:
        """Whatever arrives until nothing has for QUIET_S."""
        got: list[set[str]] = []
        with contextlib.suppress(TimeoutError):
            while True:
                got.append(await self.next(QUIET_S))
        return got


@contextlib.asynccontextmanager
async def watching(root: Path, ignore: Sequence[str] = (), debounce_ms: int = 100) -> AsyncIterator[Watch]:
    """Start a watch, wait until it sees events (a probe file), yield it, stop it and check it ended."""
    watch = Watch(root, asyncio.Event())

    async def consume() -> None:
        async for batch in watch_folder(root, ignore=ignore, debounce_ms=debounce_ms, stop_event=watch.stop):
            await watch.batches.put(batch)

    watch.task = asyncio.create_task(consume())
    try:
        await _ready(watch)
        yield watch
    finally:
        watch.stop.set()
        await asyncio.wait_for(watch.task, WAIT_S)


async def _ready(watch: Watch) -> None:
    probe = watch.root / "probe.txt"
    async with asyncio.timeout(WAIT_S):
        while True:  # the watcher starts inside its task: write until it reports
            probe.write_text("probe")
            with contextlib.suppress(TimeoutError):
                if "probe.txt" in await watch.next(0.2):
                    break
        probe.unlink()
        while "probe.txt" not in await watch.next():
            pass
    await watch.quiet()


def write(root: Path, rel: str, text: str = "x") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


async def test_create_modify_delete_and_rename(tmp_path: Path) -> None:
    async with watching(tmp_path) as watch:
        write(tmp_path, "a.txt", "one")
        await watch.until({"a.txt"})
        write(tmp_path, "sub/b.md", "new folder, new file")
        await watch.until({"sub/b.md"})
        write(tmp_path, "a.txt", "two")
        await watch.until({"a.txt"})
        (tmp_path / "a.txt").rename(tmp_path / "sub/c.txt")
        await watch.until({"a.txt", "sub/c.txt"})
        (tmp_path / "sub/b.md").unlink()
        await watch.until({"sub/b.md"})
        assert await watch.quiet() == []


async def test_a_burst_of_writes_arrives_in_one_or_few_batches(tmp_path: Path) -> None:
    async with watching(tmp_path, debounce_ms=1000) as watch:
        for n in range(20):
            write(tmp_path, f"burst/{n:02}.txt", f"edit {n}")
            await asyncio.sleep(0.005)
        batches = await watch.until({f"burst/{n:02}.txt" for n in range(20)})
        assert len(batches) <= 3, batches


async def test_ignored_paths_produce_nothing(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.log\n")
    write(tmp_path, "sub/.gitignore", "scratch/\n")
    async with watching(tmp_path, ignore=["*.tmp"]) as watch:
        for rel in [
            "debug.log",
            "sub/scratch/x.md",
            ".hidden/y.md",
            ".env",
            "node_modules/pkg/z.js",
            "pkg/__pycache__/m.pyc",
            "notes.tmp",
        ]:
            write(tmp_path, rel)
        (tmp_path / "debug.log").unlink()
        assert await watch.quiet() == []
        write(tmp_path, "sentinel.txt")
        await watch.until({"sentinel.txt"})


async def test_gitignore_edits_are_reported_and_apply_at_once(tmp_path: Path) -> None:
    # the folder exists before the watch: a file made in a folder created a moment earlier can beat
    # the OS watch being added on that new folder (an inotify race this test is not about)
    (tmp_path / "sub").mkdir()
    async with watching(tmp_path) as watch:
        write(tmp_path, "sub/.gitignore", "*.draft\n")
        await watch.until({"sub/.gitignore"})
        write(tmp_path, "sub/a.draft")
        write(tmp_path, "sub/a.md")
        await watch.until({"sub/a.md"})


async def test_folders_moved_in_and_out_whole(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    write(outside, "docs/one.md")
    write(outside, "docs/deep/two.md")
    write(outside, "docs/.git/config")
    async with watching(root) as watch:
        (outside / "docs").rename(root / "docs")
        await watch.until({"docs/one.md", "docs/deep/two.md"})
        (root / "docs").rename(outside / "docs")
        await watch.until({"docs"})  # gone whole: the consumer treats it as a prefix


async def test_stop_event_cancel_and_aclose_end_the_watch(tmp_path: Path) -> None:
    stop = asyncio.Event()
    stream = watch_folder(tmp_path, debounce_ms=50, stop_event=stop)
    pending = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0.2)
    stop.set()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(pending, WAIT_S)

    shared = asyncio.Event()

    async def consume() -> None:
        async for _ in watch_folder(tmp_path, debounce_ms=50, stop_event=shared):
            pass

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, WAIT_S)
    assert not shared.is_set()  # cancelling one watch leaves a shared stop event alone


async def test_aclose_of_a_suspended_watch(tmp_path: Path) -> None:
    stream = watch_folder(tmp_path, debounce_ms=50)
    first = asyncio.ensure_future(anext(stream))
    async with asyncio.timeout(WAIT_S):
        while not first.done():
            write(tmp_path, "a.txt")
            await asyncio.wait([first], timeout=0.2)
    assert first.result() == {"a.txt"}
    await asyncio.wait_for(stream.aclose(), WAIT_S)  # type: ignore[attr-defined]


async def test_a_missing_root_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        await anext(watch_folder(tmp_path / "nope"))
