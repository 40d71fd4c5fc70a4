"""Extraction in worker processes: limits, crashes and hangs cost one file, never the caller or its siblings.

The workers are real child processes running the real router; a crash is provoked with a real
signal from inside the child (a test-only engine would need code in the package, so the tests kill
the worker from outside while it reads, which is what the kernel's OOM killer does).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ragd.errors import ExtractionCrashed, ExtractionError, PayloadTooLarge, UnsupportedType
from ragd.extract.isolation import IsolatedExtractor
from ragd.extract.router import build_extractor
from ragd.settings import ExtractSettings
from ragd.types import Blob
from tests.extract.builders import build_docx, build_pdf


@pytest.fixture
def pool() -> IsolatedExtractor:
    extractor = IsolatedExtractor(ExtractSettings(), workers=2)
    yield extractor  # type: ignore[misc]
    extractor.close()


def _children() -> set[int]:
    """The pids of this process's live children."""
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                out.add(int(entry.name))
    return out


def test_a_worker_reads_files_like_the_router_does(pool: IsolatedExtractor, tmp_path: Path) -> None:
    path = tmp_path / "memo.docx"
    path.write_bytes(build_docx([("h1", "Saffron"), ("p", "Seventeen crates arrived.")]))
    isolated = pool.extract(Blob(name="memo.docx", path=path))
    direct = build_extractor(ExtractSettings()).extract(Blob(name="memo.docx", path=path))
    assert isolated == direct
    assert pool.extract(Blob(name="a.txt", data=b"hello from bytes")).text == "hello from bytes"


def test_a_readers_error_comes_back_with_its_code(pool: IsolatedExtractor) -> None:
    with pytest.raises(UnsupportedType) as caught:
        pool.extract(Blob(name="a.exe", data=b"MZ\x90\x00" + bytes(range(256)) * 4))
    assert caught.value.code == "UNSUPPORTED_TYPE"
    assert caught.value.hint
    with pytest.raises(ExtractionError) as failed:
        pool.extract(Blob(name="broken.pdf", data=b"%PDF-1.7 not really"))
    assert failed.value.code == "EXTRACTION_FAILED"


def test_a_named_engine_runs_in_the_workers_too(pool: IsolatedExtractor) -> None:
    document = pool.engine("text").extract(Blob(name="notes.md", data=b"# Title\n\nBody."))
    assert document.extractor == "text"


def test_a_worker_killed_mid_file_fails_that_file_only(pool: IsolatedExtractor) -> None:
    before = _children()
    slow = Blob(name="slow.pdf", data=build_pdf([f"Page {i} " + "word " * 400 for i in range(400)]))

    def kill_the_reader() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            new = _children() - before
            if new:
                time.sleep(0.3)  # let it start reading
                os.kill(next(iter(new)), signal.SIGKILL)
                return
            time.sleep(0.01)

    killer = threading.Thread(target=kill_the_reader)
    killer.start()
    with pytest.raises(ExtractionCrashed) as caught:
        pool.extract(slow)
    killer.join()
    assert caught.value.code == "EXTRACTION_CRASHED"
    assert "SIGKILL" in str(caught.value)
    # the pool replaces the worker: the next files are read as usual
    assert pool.extract(Blob(name="a.txt", data=b"still here")).text == "still here"


def test_siblings_in_other_workers_are_not_affected(pool: IsolatedExtractor) -> None:
    before = _children()
    slow = Blob(name="slow.pdf", data=build_pdf([f"Page {i} " + "word " * 400 for i in range(400)]))
    blobs = [Blob(name=f"n{i}.txt", data=f"note {i}".encode()) for i in range(6)]
    with ThreadPoolExecutor(3) as threads:
        crashed = threads.submit(pool.extract, slow)
        deadline = time.monotonic() + 20
        while not _children() - before and time.monotonic() < deadline:
            time.sleep(0.01)
        slow_worker = _children() - before  # the only worker so far: it is reading the slow file
        assert len(slow_worker) == 1
        results = [threads.submit(pool.extract, blob) for blob in blobs]
        time.sleep(0.3)
        os.kill(slow_worker.pop(), signal.SIGKILL)
        texts = [future.result(timeout=60).text for future in results]
        with pytest.raises(ExtractionCrashed):
            crashed.result(timeout=60)
    assert texts == [f"note {i}" for i in range(6)]


def test_a_hung_reader_is_killed_at_the_time_limit() -> None:
    pool = IsolatedExtractor(ExtractSettings(timeout_s=0.5), workers=1)
    try:
        # 400 dense pages take seconds; the worker's own kreuzberg limit or the pool's guard ends it
        started = time.monotonic()
        with pytest.raises(ExtractionError, match=r"timed out|no answer"):
            pool.extract(
                Blob(name="slow.pdf", data=build_pdf([f"Page {i} " + "w " * 900 for i in range(800)]))
            )
        assert time.monotonic() - started < 15
    finally:
        pool.close()


def test_a_zip_bomb_is_refused_before_it_is_unpacked() -> None:
    bomb = build_docx([("p", "A" * 20_000_000)])  # ~20 KB on disk, 20 MB unpacked
    router = build_extractor(ExtractSettings(max_unpacked_bytes=10_000_000))
    started = time.monotonic()
    with pytest.raises(PayloadTooLarge) as caught:
        router.extract(Blob(name="bomb.docx", data=bomb))
    assert time.monotonic() - started < 1.0
    assert caught.value.http_status == 413
    assert "RAGD_EXTRACT__MAX_UNPACKED_BYTES" in str(caught.value)


def test_text_over_the_character_limit_is_refused() -> None:
    router = build_extractor(ExtractSettings(max_chars=1000))
    with pytest.raises(PayloadTooLarge) as caught:
        router.extract(Blob(name="long.txt", data=b"word " * 1000))
    assert "RAGD_EXTRACT__MAX_CHARS" in str(caught.value)
    assert router.extract(Blob(name="short.txt", data=b"word " * 100)).text


def test_out_of_memory_in_a_worker_is_a_413_and_the_pool_recovers() -> None:
    pool = IsolatedExtractor(ExtractSettings(memory_mb=400, max_unpacked_bytes=10**10), workers=1)
    try:
        bomb = build_docx([("p", "A" * 100_000_000)])  # 100 MB of text in a ~100 KB file
        # the reader either reports the failed allocation (413) or aborts on it (the worker dies)
        with pytest.raises((PayloadTooLarge, ExtractionCrashed)) as caught:
            pool.extract(Blob(name="bomb.docx", data=bomb))
        assert caught.value.code in ("FILE_TOO_LARGE", "EXTRACTION_CRASHED")
        assert "RAGD_EXTRACT__MEMORY_MB" in str(caught.value)
        assert pool.extract(Blob(name="a.txt", data=b"after the bomb")).text == "after the bomb"
    finally:
        pool.close()


def test_workers_serve_many_files_and_close_stops_them() -> None:
    before = _children()
    pool = IsolatedExtractor(ExtractSettings(), workers=2)
    with ThreadPoolExecutor(2) as threads:
        list(threads.map(pool.extract, [Blob(name=f"{i}.txt", data=b"x y z") for i in range(4)]))
        workers = _children() - before
        assert workers
        list(threads.map(pool.extract, [Blob(name=f"{i}.txt", data=b"x y z") for i in range(4)]))
    # the same workers, not one per file (a worker spawned by a large parent once retired after
    # every file: Linux keeps the parent's peak RSS in the child's ru_maxrss across exec)
    assert _children() - before == workers
    pool.close()
    deadline = time.monotonic() + 5
    while _children() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _children() - before
