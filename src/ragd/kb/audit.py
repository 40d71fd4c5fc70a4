"""Record administrative actions in the audit trail (docs/security.md, "Audit trail").

Every use-case that changes who may do what or what a tenant holds calls :func:`record` once it
knows the outcome.  The actor is the request's :class:`Principal`: its key id, ``service`` for the
service key, ``anonymous`` when no key was given; a key's secret is never recorded.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ragd.catalog.base import AuditLog
from ragd.errors import CatalogUnavailable
from ragd.kb_types import AuditOutcome, AuditRecord, Principal

logger = logging.getLogger(__name__)

SERVICE_ACTOR = "service"
ANONYMOUS_ACTOR = "anonymous"


def actor_of(principal: Principal | None) -> str:
    if principal is None:
        return ANONYMOUS_ACTOR
    if principal.is_service:
        return SERVICE_ACTOR
    return principal.key_id or ANONYMOUS_ACTOR


async def record(
    log: AuditLog,
    principal: Principal | None,
    action: str,
    *,
    outcome: AuditOutcome = AuditOutcome.OK,
    tenant_id: str | None = None,
    target_kind: str | None = None,
    target_id: str | None = None,
    detail: Mapping[str, Any] | None = None,
    client: str | None = None,
) -> AuditRecord | None:
    """Append one record; ``tenant_id`` defaults to the principal's.  A catalog that cannot be
    reached is logged, not raised: the action itself already happened."""
    entry = AuditRecord(
        id="",
        at=0.0,
        actor=actor_of(principal),
        actor_role=principal.role if principal is not None else None,
        action=action,
        outcome=outcome,
        tenant_id=tenant_id if tenant_id is not None else (principal.tenant_id if principal else None),
        target_kind=target_kind,
        target_id=target_id,
        detail=dict(detail or {}),
        client=client,
    )
    try:
        return await log.append_audit(entry)
    except CatalogUnavailable:
        logger.exception("audit record lost: %s %s by %s", action, target_id, entry.actor)
        return None
