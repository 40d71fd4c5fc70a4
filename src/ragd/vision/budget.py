"""Budgets of the vision engines: one file's time, and the calls a process starts per minute.

:class:`Deadline` is the time left for one file (``RAGD_EXTRACT__TIMEOUT_S`` from its start):
every call, retry pause and wait for a call slot fits in it, and running out is
:class:`ragd.errors.VisionUnavailable` (the endpoint was too slow; a later try may do).

:class:`CallRate` spaces call starts ``60 / calls_per_minute`` seconds apart.  It is one object
per process (built with the process's client, :func:`ragd.vision.engines.build_vision`), shared by
every thread of it, so the limit is **per extraction process**: with ``RAGD_EXTRACT_CONCURRENCY``
workers the endpoint sees up to that many times the rate.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ragd.errors import VisionUnavailable


@dataclass(frozen=True, slots=True)
class Deadline:
    """``limit_s`` seconds from ``started`` (monotonic) for everything one file asks."""

    source: str
    limit_s: float
    started: float = field(default_factory=time.monotonic)

    def left(self) -> float:
        return self.started + self.limit_s - time.monotonic()

    def check(self, need_s: float = 0.0) -> None:
        """Raise when less than ``need_s`` seconds are left."""
        if self.left() <= need_s:
            raise self.expired()

    def expired(self) -> VisionUnavailable:
        return VisionUnavailable(
            f"reading {self.source!r} with the vision model took longer than {self.limit_s:g} s",
            hint="raise RAGD_EXTRACT__TIMEOUT_S (the whole file's time) or lower RAGD_VISION__MAX_PAGES; "
            "check the endpoint's load",
        )


class CallRate:
    """At most ``per_minute`` call starts per minute in this process (0: no limit)."""

    def __init__(self, per_minute: int) -> None:
        self._gap = 60.0 / per_minute if per_minute > 0 else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self, deadline: Deadline) -> None:
        """Take the next call slot, sleeping until it comes; raise when it comes after the deadline."""
        if not self._gap:
            return
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next)
            if slot - now >= deadline.left():
                raise deadline.expired()
            self._next = slot + self._gap
        if slot > now:
            time.sleep(slot - now)
