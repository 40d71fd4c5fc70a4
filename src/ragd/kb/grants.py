"""Source grants: which folders and S3 bucket/prefixes each tenant's sources may reach.

    service key       grants, revokes and lists any tenant's grants
    tenant admin      lists its own tenant's grants (read-only)

The rule that holds (docs/security.md, "Sources"): every live folder or S3 source lies inside a
live grant of its dataset's tenant, and two tenants' grants never overlap unless the later one
says ``shared``, so two tenants' sources never overlap unless the service key said so.  Whatever
breaks it is **disabled** (``disabled_reason`` set, a WARNING, an audit record ``source.disable``):
at start-up (:func:`sweep`) and when a grant is revoked.  A grant that covers a disabled source
enables it again (``source.enable``).  Web sources are not grant-bound (they have the private
address check, ``ragd.kb.sources.check_url``).
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path

from ragd.catalog.base import Catalog
from ragd.errors import Forbidden, GrantOverlap, NotFound, RagError, SourceDisabled, SourceNotGranted
from ragd.kb import audit
from ragd.kb.grant_reach import covering, grant_target, overlaps, source_reach
from ragd.kb_types import ADMIN_ROLE, AuditOutcome, Principal, SourceGrant, SourceKind, SourceSpec
from ragd.observe.logging import sanitize

log = logging.getLogger(__name__)

#: what else changes with a source's state: its files leave search while it is disabled
#: (``ragd.kb.sources.search_visibility``); called with the source and True when now disabled
Apply = Callable[[SourceSpec, bool], Awaitable[None]]

#: who acts when ragd itself disables a source (at start-up): recorded as ``service``
SYSTEM = Principal(tenant_id=None, role=ADMIN_ROLE)
GRANT_HINT = "the operator grants it: POST /api/v1/tenants/{tenant}/grants or `ragd grants add`"


def _not_found(tenant_id: str) -> NotFound:
    return NotFound(f"tenant {tenant_id[:100]!r} not found")


async def _tenant(catalog: Catalog, principal: Principal, tenant_id: str) -> None:
    if not principal.is_service and principal.tenant_id != tenant_id:
        raise _not_found(tenant_id)
    if not any(t.id == tenant_id for t in await catalog.list_tenants()):
        raise _not_found(tenant_id)


async def _service_only(catalog: Catalog, principal: Principal, action: str, tenant_id: str) -> None:
    if principal.is_service:
        return
    await audit.record(catalog, principal, action, outcome=AuditOutcome.DENIED, tenant_id=tenant_id)
    if principal.tenant_id != tenant_id:
        raise _not_found(tenant_id)
    raise Forbidden("only the service key grants and revokes what a tenant's sources may reach")


async def create_grant(
    catalog: Catalog,
    principal: Principal,
    tenant_id: str,
    kind: SourceKind,
    target: str,
    *,
    shared: bool = False,
    folder_roots: Iterable[Path] = (),
    allowed_buckets: Sequence[str] = (),
    client: str | None = None,
    apply: Apply | None = None,
) -> SourceGrant:
    """Grant ``target`` to the tenant; GRANT_OVERLAP when another tenant's live grant overlaps it
    and ``shared`` is not set.  Disabled sources of the tenant it covers are enabled again."""
    await _service_only(catalog, principal, "grant.create", tenant_id)
    await _tenant(catalog, principal, tenant_id)
    try:
        clean = grant_target(kind, target, folder_roots=folder_roots, allowed_buckets=allowed_buckets)
        grant = SourceGrant(
            id=uuid.uuid4().hex,
            tenant_id=tenant_id,
            kind=kind,
            target=clean,
            shared=shared,
            created_by=audit.actor_of(principal),
        )
        check = None if shared else functools.partial(refuse_overlap, grant)
        grant = await catalog.create_grant(grant, check=check)
    except RagError as exc:
        await audit.record(
            catalog,
            principal,
            "grant.create",
            outcome=audit.outcome_of(exc),
            tenant_id=tenant_id,
            target_kind="grant",
            detail={"kind": kind.value, "target": target[:500], "code": exc.code, "error": str(exc)[:500]},
            client=client,
        )
        raise
    detail: dict[str, object] = {"kind": kind.value, "target": clean, "shared": shared}
    await audit.record(
        catalog,
        principal,
        "grant.create",
        tenant_id=tenant_id,
        target_kind="grant",
        target_id=grant.id,
        detail=detail,
        client=client,
    )
    await sweep(catalog, principal, tenant_id, client=client, apply=apply)
    return grant


def refuse_overlap(grant: SourceGrant, live: Iterable[SourceGrant]) -> None:
    """GRANT_OVERLAP when one of the ``live`` grants of another tenant overlaps ``grant``."""
    for other in live:
        if (
            other.tenant_id != grant.tenant_id
            and other.kind is grant.kind
            and overlaps(grant.kind, other.target, grant.target)
        ):
            raise GrantOverlap(
                f"{grant.target[:200]!r} overlaps grant {other.id} ({other.target[:200]!r}) of tenant "
                f"{other.tenant_id}",
                hint="grant it with shared: true if both tenants may reach it",
            )


async def list_grants(
    catalog: Catalog, principal: Principal, tenant_id: str, *, include_revoked: bool = False
) -> list[SourceGrant]:
    await _tenant(catalog, principal, tenant_id)
    if not principal.can_admin:
        raise Forbidden("listing grants needs an admin key of the tenant")
    return await catalog.list_grants(tenant_id, include_revoked=include_revoked)


async def revoke_grant(
    catalog: Catalog,
    principal: Principal,
    tenant_id: str,
    grant_id: str,
    *,
    client: str | None = None,
    apply: Apply | None = None,
) -> tuple[SourceGrant, list[SourceSpec]]:
    """Revoke the grant; returns it and the sources this disabled (no other grant covers them)."""
    await _service_only(catalog, principal, "grant.revoke", tenant_id)
    found = await catalog.get_grant(grant_id)
    if found is None or found.tenant_id != tenant_id:
        raise NotFound(f"grant {grant_id[:100]!r} not found for this tenant")
    revoked = await catalog.revoke_grant(grant_id) or found
    if found.live:
        await audit.record(
            catalog,
            principal,
            "grant.revoke",
            tenant_id=tenant_id,
            target_kind="grant",
            target_id=grant_id,
            detail={"kind": found.kind.value, "target": found.target},
            client=client,
        )
    disabled, _ = await sweep(catalog, principal, tenant_id, client=client, apply=apply)
    return revoked, disabled


def refuse_disabled(spec: SourceSpec) -> None:
    """409 SOURCE_DISABLED for a disabled source: nothing syncs or re-indexes from it."""
    if spec.disabled_reason is not None:
        raise SourceDisabled(
            f"source {spec.id} is disabled: {spec.disabled_reason}",
            hint="grant its folder or bucket/prefix to the tenant, then enable it again (POST …/enable)",
        )


async def check_source(catalog: Catalog, tenant_id: str, kind: SourceKind, reach: str) -> SourceGrant:
    """The live grant of ``tenant_id`` that covers ``reach``; SOURCE_NOT_GRANTED when none does."""
    found = covering(await catalog.list_grants(tenant_id), kind, reach)
    if found is None:
        raise SourceNotGranted(
            f"no grant of this tenant covers the {kind.value} source {reach[:200]!r}",
            hint=GRANT_HINT.format(tenant=tenant_id),
        )
    return found


async def grant_for_service(
    catalog: Catalog,
    principal: Principal,
    tenant_id: str,
    kind: SourceKind,
    reach: str,
    *,
    folder_roots: Iterable[Path] = (),
    allowed_buckets: Sequence[str] = (),
    apply: Apply | None = None,
) -> SourceGrant:
    """A source the service key adds to a tenant's dataset: the tenant's grant that covers it, or
    a new grant of exactly its reach (GRANT_OVERLAP when another tenant's grant overlaps it)."""
    try:
        return await check_source(catalog, tenant_id, kind, reach)
    except SourceNotGranted:
        return await create_grant(
            catalog,
            principal,
            tenant_id,
            kind,
            reach,
            folder_roots=folder_roots,
            allowed_buckets=allowed_buckets,
            apply=apply,
        )


def disabled_reason(spec: SourceSpec, reach: str) -> str:
    return f"no live grant of its tenant covers {spec.kind.value} {reach[:500]!r}"


async def sweep(
    catalog: Catalog,
    principal: Principal = SYSTEM,
    tenant_id: str | None = None,
    *,
    client: str | None = None,
    apply: Apply | None = None,
) -> tuple[list[SourceSpec], list[SourceSpec]]:
    """Disable every folder/S3 source of ``tenant_id`` (None: of every tenant) that no live grant
    of its tenant covers, and enable the disabled ones a grant now covers (``apply`` to each one
    changed); returns both lists."""
    tenants = {d.id: d.tenant_id for d in await catalog.list_datasets(tenant_id)}
    grants = await catalog.list_grants(tenant_id)
    disabled: list[SourceSpec] = []
    enabled: list[SourceSpec] = []
    for spec in await catalog.list_sources():
        owner = tenants.get(spec.dataset_id)
        reach = source_reach(spec.kind, spec.config)
        if owner is None or reach is None:
            continue
        covered = covering((g for g in grants if g.tenant_id == owner), spec.kind, reach) is not None
        if covered == (not spec.disabled):
            continue
        changed = await _change(catalog, principal, spec, owner, reach, covered=covered, client=client)
        if changed is None:
            continue
        (enabled if covered else disabled).append(changed)
        if apply is not None:
            await apply(changed, not covered)
    return disabled, enabled


async def _change(
    catalog: Catalog,
    principal: Principal,
    spec: SourceSpec,
    owner: str,
    reach: str,
    *,
    covered: bool,
    client: str | None,
) -> SourceSpec | None:
    """Enable (``covered``) or disable one source: stored, logged and recorded in the audit trail."""
    reason = None if covered else disabled_reason(spec, reach)
    changed = await catalog.set_source_disabled(spec.id, reason)
    if changed is None:
        return None
    if covered:
        log.info("source %s enabled again: a grant covers it", spec.id)
    else:
        log.warning("source %s disabled: %s", spec.id, sanitize(str(reason)))
    await audit.record(
        catalog,
        principal,
        "source.enable" if covered else "source.disable",
        tenant_id=owner,
        target_kind="source",
        target_id=spec.id,
        detail={"kind": spec.kind.value, "reach": reach, "reason": reason},
        client=client,
    )
    return changed


async def sweep_at_start(catalog: Catalog, apply: Apply | None = None) -> None:
    """Start-up: disable what no grant covers (logged), and ``apply`` to every disabled source (the
    ones ``ragd grants revoke`` disabled while no server ran too).  Errors are logged, never fatal."""
    try:
        disabled, _ = await sweep(catalog)
        if apply is not None:
            for spec in await catalog.list_sources():
                if spec.disabled:
                    await apply(spec, True)
    except RagError as exc:
        log.warning("cannot check sources against their grants: %s", exc)
        return
    if disabled:
        log.warning(
            "%d folder/S3 source(s) disabled at start-up: no grant of their tenant covers them "
            "(grant them: docs/knowledge-bases.md#source-grants)",
            len(disabled),
        )
