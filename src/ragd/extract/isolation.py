"""Extraction in child processes: a crash or a memory blow-up costs one file, never the service.

Document readers are native code (kreuzberg's Rust, pdfium, Tesseract) fed hostile
bytes: a zip bomb, a malformed PDF, a deeply nested document.  :class:`IsolatedExtractor`
runs the type router (:func:`ragd.extract.router.build_extractor`) in a small pool
of worker processes (``spawn``: nothing of the parent's threads, model or event
loop is inherited), each started with an address-space limit of
``ExtractSettings.memory_mb``, and waits at most ``timeout_s`` plus a grace period
for each file.  Then:

* a reader's own error comes back as the same :class:`RagError` (same code);
* running out of memory in the child is :class:`PayloadTooLarge` (``FILE_TOO_LARGE``, 413);
* a child that dies (a native crash, the kernel's OOM killer) or hangs is killed
  and replaced, and that one file fails with :class:`ExtractionCrashed`
  (``EXTRACTION_CRASHED``, 422); files extracted by other workers carry on.

Workers start on first use (~0.25 s each) and stay up until :meth:`close`.  With
:class:`VisionSettings` (an endpoint), each worker builds its own vision client and call rate
(:func:`ragd.vision.kit.build_vision`): the vision engines run in the workers too, under the same
limits.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from ragd.errors import ExtractionCrashed, ExtractionError, PayloadTooLarge, RagError
from ragd.extract.base import Extractor
from ragd.extract.router import build_extractor, engines, pinned
from ragd.settings import ExtractSettings, VisionSettings
from ragd.types import Blob, Document
from ragd.vision.kit import build_vision

logger = logging.getLogger(__name__)

_GRACE_S = 10.0
# engine, profile, name, mime, path, data
_Request = tuple[str | None, str | None, str, str | None, str | None, bytes | None]


class IsolatedExtractor:
    """Implements :class:`ragd.extract.base.Extractor` by delegating to worker processes."""

    name = "isolated"

    def __init__(
        self, settings: ExtractSettings, *, workers: int = 2, vision: VisionSettings | None = None
    ) -> None:
        self._settings = settings
        self._vision = vision if vision is not None and vision.enabled else None
        self._context = multiprocessing.get_context("spawn")
        self._slots = threading.BoundedSemaphore(workers)
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False

    def extract(self, blob: Blob) -> Document:
        return self.extract_with(None, blob)

    def engine(self, name: str, profile: str | None = None) -> EngineView:
        """An extractor that reads every file with the engine ``name`` (in the same workers);
        ``profile``: the vision profile a vision engine asks with."""
        return EngineView(self, name, profile)

    def extract_with(self, engine: str | None, blob: Blob, profile: str | None = None) -> Document:
        """``blob`` read by the worker's router (``engine=None``) or by one named engine."""
        path = str(blob.path) if blob.data is None and blob.path is not None else None
        data = blob.data if path is None else None
        request: _Request = (engine, profile, blob.name, blob.mime_type, path, data)
        with self._worker() as worker:
            reply = worker.call(request, self._settings.timeout_s + _GRACE_S, blob.name)
        document = _unpack(reply, blob.name, self._settings)
        if route := document.meta.get("extraction_route"):  # the worker's own log is not kept
            logger.debug("routed %r to %s: %s", blob.name, document.extractor, route)
        for warning in document.meta.get("extraction_warnings") or ():
            logger.warning("%r: %s", blob.name, warning)
        return document

    def close(self) -> None:
        """Stop every idle worker (busy ones stop when they hand their file back)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.stop()

    @contextmanager
    def _worker(self) -> Iterator[_Worker]:
        with self._slots:
            with self._lock:
                worker = self._idle.pop() if self._idle else None
            if worker is None or not worker.alive():
                if worker is not None:
                    worker.stop()
                worker = _Worker(self._context, self._settings, self._vision)
            try:
                yield worker
            except BaseException:  # lost, timed out or interrupted: its state is unknown
                worker.stop()
                raise
            with self._lock:
                if not self._closed and not worker.retiring:
                    self._idle.append(worker)
                    return
            worker.stop()


class EngineView:
    """One named engine of an :class:`IsolatedExtractor` (``POST /api/v1/extract?engine=``)."""

    def __init__(self, pool: IsolatedExtractor, engine: str, profile: str | None = None) -> None:
        self._pool = pool
        self._engine = engine
        self._profile = profile
        self.name = engine

    def extract(self, blob: Blob) -> Document:
        return self._pool.extract_with(self._engine, blob, self._profile)


class _Worker:
    def __init__(self, context: Any, settings: ExtractSettings, vision: VisionSettings | None) -> None:
        self.conn, child = context.Pipe()
        # the vision settings go pickled, not as JSON: JSON would mask the API key
        self.process: BaseProcess = context.Process(
            target=serve,
            args=(child, settings.model_dump_json(), vision),
            name="ragd-extract",
            daemon=True,
        )
        self.process.start()
        child.close()
        self.retiring = False  # the child said it exits after its last reply

    def alive(self) -> bool:
        return self.process.is_alive()

    def call(self, request: _Request, timeout_s: float, source: str) -> tuple[Any, ...]:
        try:
            self.conn.send(request)
            if self.conn.poll(timeout_s):
                retiring, reply = self.conn.recv()
                self.retiring = bool(retiring)
                return tuple(reply)
        except (EOFError, OSError):
            self.process.join(2.0)
            raise _crashed(source, _cause(self.process.exitcode)) from None
        raise _crashed(source, f"no answer within {timeout_s:g} s")

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(2.0)
        self.conn.close()


def _crashed(source: str, why: str) -> ExtractionCrashed:
    logger.warning("extraction worker lost on %r: %s", source, why)
    return ExtractionCrashed(
        f"the reader crashed on {source!r} ({why}); the file was not indexed",
        hint="the file may be malformed, or need more than RAGD_EXTRACT__MEMORY_MB to read: "
        "open it in its application and save it again, or split it",
    )


def _cause(exitcode: int | None) -> str:
    if exitcode is None:
        return "it stopped answering"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"it exited with status {exitcode}"


def _unpack(reply: tuple[Any, ...], source: str, settings: ExtractSettings) -> Document:
    kind = reply[0]
    if kind == "ok":
        document: Document = reply[1]
        return document
    if kind == "memory":
        raise PayloadTooLarge(
            f"reading {source!r} needs more than {settings.memory_mb} MB of memory",
            hint="raise RAGD_EXTRACT__MEMORY_MB, or split the file",
        )
    _, code, message, hint = reply
    raise _error_class(code)(message, hint=hint)


def _error_class(code: str) -> type[RagError]:
    """The RagError subclass with ``code`` (ExtractionError when none has it)."""
    pending: list[type[RagError]] = [RagError]
    while pending:
        cls = pending.pop()
        if cls.code == code:
            return cls
        pending.extend(cls.__subclasses__())
    return ExtractionError


def serve(conn: Connection, settings_json: str, vision: VisionSettings | None = None) -> None:
    """A worker's main loop (in the child): read files with the router until the pipe closes."""
    import resource

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    settings = ExtractSettings.model_validate_json(settings_json)
    limit = settings.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # a worker that grew past half its limit hands its memory back by exiting after that file
    recycle_kb = settings.memory_mb * 1024 // 2
    kit = build_vision(settings, vision)  # one client and call rate for the whole process
    default = build_extractor(settings, vision=kit)
    by_engine = engines(settings, vision=kit)
    while True:
        try:
            engine, profile, name, mime, path, data = conn.recv()
        except (EOFError, OSError):
            return
        blob = Blob(name=name, data=data, path=Path(path) if path else None, mime_type=mime)
        try:
            extractor = default if engine is None else pinned(_engine(by_engine, engine, profile), settings)
        except (KeyError, ValueError) as exc:  # the parent checks names first: a bug, not the file's
            reply: tuple[Any, ...] = ("error", ExtractionError.code, f"no engine {exc}", None)
        else:
            reply = _read(extractor, blob)
        retiring = reply[0] == "memory" or _resident_kb() > recycle_kb
        conn.send((retiring, reply))
        if retiring:
            return


def _engine(by_engine: dict[str, Extractor], name: str, profile: str | None) -> Extractor:
    """The engine ``name``, asking with ``profile`` when one is given (vision engines)."""
    engine = by_engine[name]
    with_profile = getattr(engine, "with_profile", None)
    return with_profile(profile) if profile and with_profile is not None else engine


def _resident_kb() -> int:
    """This process's resident memory now, in KiB (not ``ru_maxrss``: Linux keeps the peak of the
    forked parent across ``exec``, so a worker spawned by a large server would look large at once)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


def _read(extractor: Extractor, blob: Blob) -> tuple[Any, ...]:
    """The worker's reply for one file: ("ok", document), ("error", code, message, hint) or ("memory",)."""
    try:
        return ("ok", extractor.extract(blob))
    except RagError as exc:
        return ("error", exc.code, exc.message, exc.hint)
    except MemoryError:
        return ("memory",)
    except Exception as exc:  # a reader's bug: that file fails, the worker lives on
        return ("error", ExtractionError.code, f"could not read {blob.name!r}: {exc!r}"[:500], None)
