"""``POST /api/v1/system/backup``: the service key has the running server back itself up.

The backup is written on the server, into a new folder under ``RAGD_BACKUP__DIR`` (default
``<data_dir>/backups``) named by the request (``name``) or by the time; the server goes on serving
and ingesting meanwhile (:mod:`ragd.kb.backup`).  ``ragd backup`` goes through this route when a
server holds the index.  Recorded in the audit trail as ``system.backup``.
"""

from __future__ import annotations

import re
import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from ragd.api.auth import Caller
from ragd.api.deps import services
from ragd.bootstrap import Services
from ragd.bootstrap.backups import backup_services
from ragd.errors import InvalidRequest

router = APIRouter(prefix="/api/v1", tags=["system"])

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class BackupRequest(BaseModel):
    name: str | None = Field(
        None, description="the backup's folder under RAGD_BACKUP__DIR (default: the time)"
    )


@router.post("/system/backup", status_code=201)
async def backup(
    caller: Caller, svc: Annotated[Services, Depends(services)], body: BackupRequest | None = None
) -> dict[str, Any]:
    name = (body.name if body else None) or time.strftime("ragd-%Y%m%d-%H%M%S", time.gmtime())
    if not NAME.match(name):
        raise InvalidRequest(
            "a backup name is 1-100 letters, digits, '.', '_' or '-', not starting with a dot"
        )
    report = await backup_services(svc, svc.settings.backup_dir / name, principal=caller)
    return {
        "path": str(report.path),
        "name": name,
        "points": report.points,
        "bytes": report.bytes,
        "files": report.files,
        "seconds": round(report.seconds, 3),
    }
