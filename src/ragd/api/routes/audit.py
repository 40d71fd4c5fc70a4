"""The audit trail, read-only (docs/security.md, "Audit trail").

    GET /api/v1/audit          ?tenant=&actor=&action=&since=&until=&cursor=&limit=
                               {"records": [...], "next_cursor": int | null}, newest first
    GET /api/v1/audit/export   the same filters and ?after= (a seq): JSON lines, oldest first

The service key reads every record (``tenant`` filters); a tenant admin reads its own tenant's;
other roles get 403.  ``since``/``until`` are epoch seconds or ISO 8601 times (UTC unless they
name an offset).  There is no route that changes or deletes a record.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import StreamingResponse

from ragd.api.auth import Caller
from ragd.api.deps import services
from ragd.bootstrap import Services
from ragd.kb import audit
from ragd.kb_types import AuditQuery, AuditRecord

router = APIRouter(prefix="/api/v1/audit", tags=["audit"])
Svc = Annotated[Services, Depends(services)]
Text = Annotated[str | None, Query(max_length=200)]
Seq = Annotated[int | None, Query(ge=0)]


async def _query(
    tenant: Text = None, actor: Text = None, action: Text = None, since: Text = None, until: Text = None
) -> AuditQuery:
    """The filters both routes take, as query parameters."""
    return AuditQuery(
        tenant_id=tenant or None,
        actor=actor or None,
        action=action or None,
        since=audit.parse_time("since", since),
        until=audit.parse_time("until", until),
    )


Filters = Annotated[AuditQuery, Depends(_query)]


@router.get("")
async def list_audit(
    caller: Caller,
    svc: Svc,
    query: Filters,
    cursor: Seq = None,
    limit: Annotated[int, Query(ge=1, le=audit.MAX_PAGE)] = 100,
) -> dict[str, Any]:
    records, next_cursor = await audit.list_records(
        svc.knowledge().catalog, caller, query, cursor=cursor, limit=limit
    )
    return {"records": [audit.as_json(r) for r in records], "next_cursor": next_cursor}


@router.get("/export", response_class=StreamingResponse)
async def export_audit(
    caller: Caller,
    svc: Svc,
    query: Filters,
    after: Seq = None,
) -> StreamingResponse:
    records = await audit.export_records(svc.knowledge().catalog, caller, query, after_seq=after)
    return StreamingResponse(_lines(records), media_type="application/x-ndjson")


async def _lines(records: AsyncIterator[AuditRecord]) -> AsyncIterator[bytes]:
    async for entry in records:
        yield (json.dumps(audit.as_json(entry), ensure_ascii=False, separators=(",", ":")) + "\n").encode()
