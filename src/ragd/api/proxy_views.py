"""What ``ragd proxy`` shows of its folder and configuration: JSON views, secrets masked."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragd.api.settings_view import masked
from ragd.ingest.mirror import FolderMirror, SyncOutcome, skipped_image
from ragd.settings import Settings
from ragd.types import IngestReport, IngestStatus

#: a file's status in ``GET /files`` when it is an image this server cannot OCR
SKIPPED = "skipped"

#: the settings groups ``GET /health`` shows
SHOWN_SETTINGS = (
    "llm",
    "chat",
    "embedding",
    "embedders",
    "sparse",
    "chunking",
    "retrieval",
    "rerank",
    "rerankers",
    "query_generation",
    "agent",
    "server",
    "store",
)


def file_view(report: IngestReport, counts: Mapping[str, int]) -> dict[str, Any]:
    """A file's row: ``indexed``, ``failed`` (with its code and message) or ``skipped`` (an image
    with no OCR engine to read it, with the code and message saying so)."""
    failed = report.status is IngestStatus.FAILED
    status = IngestStatus.FAILED.value if failed else IngestStatus.INDEXED.value
    view: dict[str, Any] = {
        "path": report.source,
        "name": Path(report.source).name,
        "file_id": report.file_id or None,
        "status": SKIPPED if skipped_image(report) else status,
        "chunks": counts.get(report.file_id, 0),
    }
    if failed:
        view |= {"code": report.code, "message": report.message}
    return view


def sync_view(mirror: FolderMirror | None) -> dict[str, Any]:
    if mirror is None:
        return {"state": "starting"}
    view: dict[str, Any] = {"state": "syncing" if mirror.syncing else "idle", "syncs": mirror.syncs}
    if mirror.last is not None:
        view["last"] = outcome_view(mirror.last)
    if mirror.last_error is not None:
        view["error"] = {"code": mirror.last_error.code, "message": mirror.last_error.message}
    return view


def outcome_view(outcome: SyncOutcome) -> dict[str, Any]:
    return {
        "indexed": outcome.count(IngestStatus.INDEXED),
        "unchanged": outcome.count(IngestStatus.UNCHANGED),
        "failed": outcome.count(IngestStatus.FAILED),
        "skipped": outcome.skipped,
        "removed": [f.source for f in outcome.removed],
        "pruned": outcome.pruned,
        "finished_at": outcome.finished_at,
        "seconds": round(outcome.seconds, 3),
    }


def public_settings(settings: Settings) -> dict[str, Any]:
    """The settings in effect (:data:`SHOWN_SETTINGS`), every secret shown as ``"***"``."""
    return {name: masked(getattr(settings, name)) for name in SHOWN_SETTINGS}
