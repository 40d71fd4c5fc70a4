"""What ``ragd proxy`` shows of its folder and configuration: JSON views, secrets masked."""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr

from ragd.ingest.mirror import FolderMirror, SyncOutcome
from ragd.settings import Settings
from ragd.types import IngestReport, IngestStatus

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
MASK = "***"
#: a field holding a secret whatever its type (StoreSettings.api_key is a plain str)
SECRET_NAME = re.compile(r"(key|secret|password|token)$", re.IGNORECASE)


def file_view(report: IngestReport, counts: Mapping[str, int]) -> dict[str, Any]:
    failed = report.status is IngestStatus.FAILED
    view: dict[str, Any] = {
        "path": report.source,
        "name": Path(report.source).name,
        "file_id": report.file_id or None,
        "status": IngestStatus.FAILED.value if failed else IngestStatus.INDEXED.value,
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
        "removed": [f.source for f in outcome.removed],
        "pruned": outcome.pruned,
        "finished_at": outcome.finished_at,
        "seconds": round(outcome.seconds, 3),
    }


def public_settings(settings: Settings) -> dict[str, Any]:
    """The settings in effect (:data:`SHOWN_SETTINGS`), every secret shown as ``"***"``."""
    return {name: _public(getattr(settings, name)) for name in SHOWN_SETTINGS}


def _public(value: object) -> Any:
    """A settings value as JSON, every secret as ``"***"``: SecretStr values, any value of a field
    named like a secret (``api_key``, ``…_secret``, ``password``, ``token``), URL passwords."""
    if isinstance(value, SecretStr):
        return MASK
    if isinstance(value, BaseModel):
        return {name: _field(name, getattr(value, name)) for name in type(value).model_fields}
    if isinstance(value, Mapping):
        return {str(k): _field(str(k), v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_public(v) for v in value]
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, str) and "://" in value and "@" in value:
        return _masked_url(value)
    return value


def _field(name: str, value: object) -> Any:
    return MASK if value is not None and SECRET_NAME.search(name) else _public(value)


def _masked_url(url: str) -> str:
    """``scheme://user:secret@host/…`` -> ``scheme://user:***@host/…``."""
    scheme, sep, rest = url.partition("://")
    authority, slash, tail = rest.partition("/")
    if "@" not in authority:
        return url
    userinfo, _, host = authority.rpartition("@")
    user = userinfo.partition(":")[0]
    return f"{scheme}{sep}{user}:{MASK}@{host}{slash}{tail}"
