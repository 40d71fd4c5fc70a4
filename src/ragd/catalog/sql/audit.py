"""The audit trail: append-only (migration 0005 adds triggers that refuse UPDATE and DELETE)."""

from __future__ import annotations

import uuid
from dataclasses import replace

from sqlalchemy import insert

from ragd.catalog.sql.engine import Database
from ragd.catalog.sql.tables import audit_log
from ragd.kb_types import AuditRecord


class SqlAudit:
    _db: Database

    async def append_audit(self, record: AuditRecord) -> AuditRecord:
        """Store ``record`` (a new id and ``at`` = now when they are empty/0); returns it as stored."""
        stored = replace(record, id=record.id or uuid.uuid4().hex, at=record.at or self._db.now())
        async with self._db.write() as conn:
            result = await conn.execute(
                insert(audit_log).values(
                    id=stored.id,
                    at=stored.at,
                    tenant_id=stored.tenant_id,
                    actor=stored.actor,
                    actor_role=stored.actor_role,
                    action=stored.action,
                    target_kind=stored.target_kind,
                    target_id=stored.target_id,
                    outcome=stored.outcome.value,
                    detail=dict(stored.detail),
                    client=stored.client,
                )
            )
            seq = result.inserted_primary_key[0] if result.inserted_primary_key else 0
        return replace(stored, seq=int(seq or 0))
