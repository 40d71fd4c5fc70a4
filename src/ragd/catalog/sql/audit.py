"""The audit trail: append-only (migration 0005 adds triggers that refuse UPDATE and DELETE).

There is no update or delete path here: records are appended and read, nothing else.  Reads are
keyset pages by ``seq`` (the order of appending), newest or oldest first.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from sqlalchemy import RowMapping, insert, or_, select

from ragd.catalog.sql.engine import Database
from ragd.catalog.sql.tables import audit_log
from ragd.kb_types import AuditOutcome, AuditQuery, AuditRecord


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

    async def list_audit(
        self, query: AuditQuery, *, after_seq: int | None = None, limit: int = 100, newest_first: bool = True
    ) -> list[AuditRecord]:
        c = audit_log.c
        statement = select(audit_log).where(*_conditions(query))
        if after_seq is not None:
            statement = statement.where(c.seq < after_seq if newest_first else c.seq > after_seq)
        statement = statement.order_by(c.seq.desc() if newest_first else c.seq).limit(max(limit, 0))
        async with self._db.read() as conn:
            return [_record(row) for row in (await conn.execute(statement)).mappings()]


def _conditions(query: AuditQuery) -> list[Any]:
    c = audit_log.c
    found: list[Any] = []
    if query.tenant_id is not None:
        found.append(c.tenant_id == query.tenant_id)
    if query.actor is not None:
        found.append(c.actor == query.actor)
    if query.action is not None:
        noun = query.action.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        found.append(or_(c.action == query.action, c.action.like(f"{noun}.%", escape="\\")))
    if query.since is not None:
        found.append(c.at >= query.since)
    if query.until is not None:
        found.append(c.at < query.until)
    return found


def _record(row: RowMapping) -> AuditRecord:
    return AuditRecord(
        id=row["id"],
        at=row["at"],
        actor=row["actor"],
        action=row["action"],
        outcome=AuditOutcome(row["outcome"]),
        tenant_id=row["tenant_id"],
        actor_role=row["actor_role"],
        target_kind=row["target_kind"],
        target_id=row["target_id"],
        detail=dict(row["detail"] or {}),
        client=row["client"],
        seq=row["seq"],
    )
