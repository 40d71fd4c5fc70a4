"""What every vision engine of one process shares: the settings, the client (its connection pool,
its call rate) and the file time budget.  Built once per extraction process by
:func:`build_vision`; None when no endpoint is configured (the vision engines do not exist then)."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from ragd.extract.pdf_pages import DEFAULT_MAX_PIXELS
from ragd.settings import ExtractSettings, VisionSettings
from ragd.vision.budget import CallRate, Deadline
from ragd.vision.cache import AnswerCache
from ragd.vision.client import VisionClient


@dataclass(frozen=True, slots=True)
class VisionKit:
    settings: VisionSettings
    extract: ExtractSettings
    client: VisionClient
    #: the largest picture sent (pixels): page renders and pictures are scaled to fit
    max_pixels: int = DEFAULT_MAX_PIXELS

    def deadline(self, source: str) -> Deadline:
        """The time budget of one file (``RAGD_EXTRACT__TIMEOUT_S``), starting now."""
        return Deadline(source, self.extract.timeout_s)

    def close(self) -> None:
        self.client.close()


def build_vision(
    extract: ExtractSettings, vision: VisionSettings | None, *, transport: httpx.BaseTransport | None = None
) -> VisionKit | None:
    """The process's vision kit, or None when ``vision`` has no endpoint."""
    if vision is None or not vision.enabled:
        return None
    client = VisionClient(
        vision,
        cache=AnswerCache(vision.cache_dir),
        rate=CallRate(vision.calls_per_minute),
        transport=transport,
    )
    return VisionKit(vision, extract, client)
