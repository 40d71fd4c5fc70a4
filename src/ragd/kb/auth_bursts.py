"""Bursts of failed authentication, counted per client address (docs/security.md, "Audit trail").

A single 401 is not an administrative action and recording each would let anyone with no key fill
the audit trail.  A *burst* is: ``threshold`` failures from one address within a window that starts
at its first failure.  The failure that reaches the threshold makes one ``auth.failed_burst``
record (tenant unknown: None); further failures in that window only count.  Counts live in this
process (each replica counts its own; the records land in the shared catalog), for at most
``max_clients`` addresses: beyond that the oldest window is forgotten first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ragd.catalog.base import AuditLog
from ragd.kb import audit
from ragd.kb_types import AuditOutcome, AuditRecord

ACTION = "auth.failed_burst"
MAX_CLIENTS = 10_000


@dataclass(slots=True)
class _Window:
    start: float
    failures: int = 0


class FailedAuthBursts:
    def __init__(
        self,
        threshold: int,
        window_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_clients: int = MAX_CLIENTS,
    ) -> None:
        self.threshold = threshold
        self.window_s = window_s
        self._clock = clock
        self._max_clients = max_clients
        self._windows: dict[str, _Window] = {}

    def failed(self, client: str) -> int | None:
        """Count one failure from ``client``; the window's count when this one makes it a burst
        (once per window), else None."""
        now = self._clock()
        window = self._windows.get(client)
        if window is None or now - window.start >= self.window_s:
            self._windows.pop(client, None)  # a new window goes to the end: the oldest stay first
            self._forget(now)
            window = self._windows[client] = _Window(start=now)
        window.failures += 1
        return window.failures if window.failures == self.threshold else None

    def _forget(self, now: float) -> None:
        if len(self._windows) < self._max_clients:
            return
        for client in [c for c, w in self._windows.items() if now - w.start >= self.window_s]:
            del self._windows[client]
        while len(self._windows) >= self._max_clients:
            del self._windows[next(iter(self._windows))]

    async def record(self, log: AuditLog, client: str, failures: int) -> AuditRecord | None:
        return await audit.record(
            log,
            None,
            ACTION,
            outcome=AuditOutcome.DENIED,
            target_kind="client",
            target_id=client,
            detail={"failures": failures, "window_s": self.window_s},
            client=client,
        )
