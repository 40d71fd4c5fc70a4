"""Record administrative actions in the audit trail, and read it (docs/security.md, "Audit trail").

Every use-case that changes who may do what or what a tenant holds calls :func:`record` once it
knows the outcome, or is wrapped in :func:`audited`, which records one entry per call: ``ok``,
``denied`` (a FORBIDDEN or UNAUTHORIZED refusal) or ``failed`` (any other error; its code in
``detail``), then re-raises.  Inside such a call :func:`note` adds what is learnt on the way (the
dataset's tenant, a new record's id, counts).

The actor is the request's :class:`Principal`: its key id, ``service`` for the service key,
``anonymous`` when no key was given; a key's secret is never recorded.  The client address comes
from :data:`CLIENT`, which the HTTP app sets per request.

Reading: the service key reads every record and may filter by tenant; a tenant admin reads only
its own tenant's; any other role gets FORBIDDEN.  Pages are newest first, keyed by ``seq``.
"""

from __future__ import annotations

import functools
import inspect
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Concatenate, ParamSpec, TypeVar

from ragd.catalog.base import AuditLog
from ragd.errors import CatalogUnavailable, Forbidden, InvalidRequest, NotFound, RagError, Unauthorized
from ragd.kb.context import KbContext
from ragd.kb_types import ADMIN_ROLE, AuditOutcome, AuditQuery, AuditRecord, Principal

logger = logging.getLogger(__name__)

SERVICE_ACTOR = "service"
ANONYMOUS_ACTOR = "anonymous"
#: the address of the client the current request came from (set by the HTTP app), or None
CLIENT: ContextVar[str | None] = ContextVar("ragd_audit_client", default=None)
#: the command line (``ragd tenants``, ``ragd keys``, ``ragd audit``) acts as the service key does;
#: its records say ``client`` CLI_CLIENT
OPERATOR = Principal(tenant_id=None, role=ADMIN_ROLE)
CLI_CLIENT = "cli"
#: a page of :func:`list_records` holds at most this many records
MAX_PAGE = 500
_MESSAGE_CHARS = 300

P = ParamSpec("P")
R = TypeVar("R")


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
    """Append one record; ``tenant_id`` defaults to the principal's, ``client`` to the request's.
    A catalog that cannot be reached is logged, not raised: the action itself already happened."""
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
        client=client if client is not None else CLIENT.get(),
    )
    try:
        return await log.append_audit(entry)
    except CatalogUnavailable:
        logger.exception("audit record lost: %s %s by %s", action, target_id, entry.actor)
        return None


# -- recording a use-case -----------------------------------------------------------------------


@dataclass(slots=True)
class _Pending:
    action: str
    tenant_id: str | None
    target_id: str | None
    detail: dict[str, Any] = field(default_factory=dict)


_PENDING: ContextVar[_Pending | None] = ContextVar("ragd_audit_pending", default=None)


def note(
    *, action: str | None = None, tenant_id: str | None = None, target_id: str | None = None, **detail: Any
) -> None:
    """Inside an :func:`audited` call: the action when it depends on the arguments
    (``file.disable``), the tenant the target belongs to, the target's id (a new record's), and
    details for the record.  Outside one it does nothing."""
    pending = _PENDING.get()
    if pending is None:
        return
    if action is not None:
        pending.action = action
    if tenant_id is not None:
        pending.tenant_id = tenant_id
    if target_id is not None:
        pending.target_id = target_id
    pending.detail.update(detail)


def outcome_of(exc: BaseException) -> AuditOutcome:
    return AuditOutcome.DENIED if isinstance(exc, Forbidden | Unauthorized) else AuditOutcome.FAILED


def audited(
    action: str,
    target_kind: str,
    target_arg: str | None = None,
    *,
    result_target: Callable[[Any], str] | None = None,
) -> Callable[
    [Callable[Concatenate[KbContext, Principal, P], Awaitable[R]]],
    Callable[Concatenate[KbContext, Principal, P], Awaitable[R]],
]:
    """Record each call of a use-case ``(ctx, principal, …)`` as ``action`` on a ``target_kind``
    whose id is the argument ``target_arg``, or what :func:`note` gives, or ``result_target`` of
    what the call returns."""

    def wrap(
        use_case: Callable[Concatenate[KbContext, Principal, P], Awaitable[R]],
    ) -> Callable[Concatenate[KbContext, Principal, P], Awaitable[R]]:
        signature = inspect.signature(use_case)

        @functools.wraps(use_case)
        async def run(ctx: KbContext, principal: Principal, /, *args: P.args, **kwargs: P.kwargs) -> R:
            target = None
            if target_arg is not None:
                target = signature.bind_partial(ctx, principal, *args, **kwargs).arguments.get(target_arg)
            target_id = None if target is None else str(target)
            pending = _Pending(action, principal.tenant_id, target_id)
            token = _PENDING.set(pending)
            try:
                result = await use_case(ctx, principal, *args, **kwargs)
            except Exception as exc:
                _PENDING.reset(token)
                code = exc.code if isinstance(exc, RagError) else RagError.code
                message = exc.message if isinstance(exc, RagError) else type(exc).__name__
                detail = {**pending.detail, "code": code, "error": message[:_MESSAGE_CHARS]}
                await _write(ctx, principal, target_kind, pending, outcome_of(exc), detail)
                raise
            _PENDING.reset(token)
            if result_target is not None:
                pending.target_id = result_target(result)
            await _write(ctx, principal, target_kind, pending, AuditOutcome.OK, pending.detail)
            return result

        return run

    return wrap


async def _write(
    ctx: KbContext,
    principal: Principal,
    target_kind: str,
    pending: _Pending,
    outcome: AuditOutcome,
    detail: Mapping[str, Any],
) -> None:
    await record(
        ctx.catalog,
        principal,
        pending.action,
        outcome=outcome,
        tenant_id=pending.tenant_id,
        target_kind=target_kind,
        target_id=pending.target_id,
        detail=detail,
    )


# -- reading ------------------------------------------------------------------------------------


def as_json(entry: AuditRecord) -> dict[str, Any]:
    """A record as the API and the exports show it."""
    return {
        "seq": entry.seq,
        "id": entry.id,
        "at": entry.at,
        "tenant_id": entry.tenant_id,
        "actor": entry.actor,
        "actor_role": entry.actor_role,
        "action": entry.action,
        "target_kind": entry.target_kind,
        "target_id": entry.target_id,
        "outcome": entry.outcome.value,
        "detail": dict(entry.detail),
        "client": entry.client,
    }


def utc(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S")


def parse_time(name: str, value: str | None) -> float | None:
    """A filter's time: epoch seconds, or ISO 8601 (UTC unless it names its offset); None if empty."""
    if value is None or not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        if not math.isfinite(seconds):
            raise InvalidRequest(f"{name} is not a time: {value[:40]!r}", hint="epoch seconds or ISO 8601")
        return seconds
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError as exc:
        raise InvalidRequest(
            f"{name} is not a time: {value[:40]!r}", hint="epoch seconds or ISO 8601 (2026-01-31T12:00Z)"
        ) from exc
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def scoped(principal: Principal, query: AuditQuery) -> AuditQuery:
    """``query`` as ``principal`` may run it: the service key as asked; a tenant admin within its own
    tenant (another tenant is NOT_FOUND, as everywhere); any other role FORBIDDEN."""
    if principal.is_service:
        return query
    if not principal.can_admin:
        raise Forbidden("reading the audit trail needs an admin key of the tenant")
    if query.tenant_id is not None and query.tenant_id != principal.tenant_id:
        raise NotFound(f"tenant {query.tenant_id[:100]!r} not found")
    return replace(query, tenant_id=principal.tenant_id)


async def list_records(
    log: AuditLog, principal: Principal, query: AuditQuery, *, cursor: int | None = None, limit: int = 100
) -> tuple[list[AuditRecord], int | None]:
    """One page, newest first, and the cursor of the next page (None after the last)."""
    limit = min(max(limit, 1), MAX_PAGE)
    page = await log.list_audit(scoped(principal, query), after_seq=cursor, limit=limit + 1)
    if len(page) > limit:
        return page[:limit], page[limit - 1].seq
    return page, None


async def export_records(
    log: AuditLog, principal: Principal, query: AuditQuery, *, after_seq: int | None = None, batch: int = 500
) -> AsyncIterator[AuditRecord]:
    """Every matching record, oldest first, read ``batch`` at a time (never all at once);
    ``after_seq`` resumes after the last record of an earlier export.  The caller is checked
    before the first record is read."""
    allowed = scoped(principal, query)

    async def records() -> AsyncIterator[AuditRecord]:
        cursor = after_seq
        while True:
            page = await log.list_audit(allowed, after_seq=cursor, limit=batch, newest_first=False)
            for entry in page:
                yield entry
            if len(page) < batch:
                return
            cursor = page[-1].seq

    return records()
