"""Who may touch which dataset: the one place tenant isolation and roles are decided.

A dataset of another tenant is reported exactly like a missing one (404
with the same message), so ids cannot be probed across tenants.  A reader
that may see a dataset but not change it gets 403.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragd.catalog.base import DatasetRepo
from ragd.errors import Forbidden, IngestOnly, InvalidRequest, NotFound
from ragd.kb_types import Dataset, Principal


def dataset_not_found(dataset_id: str) -> NotFound:
    return NotFound(f"dataset {dataset_id!r} not found")


async def readable(principal: Principal, datasets: DatasetRepo, dataset_id: str) -> Dataset:
    found = await datasets.get_dataset(dataset_id)
    if found is None or not principal.can_read(found):
        raise dataset_not_found(dataset_id)
    return found


async def writable(principal: Principal, datasets: DatasetRepo, dataset_id: str) -> Dataset:
    found = await readable(principal, datasets, dataset_id)
    if not principal.can_write:
        raise Forbidden(f"role {principal.role!r} may read but not change datasets")
    return found


def require_writer(principal: Principal) -> None:
    if not principal.can_write:
        raise Forbidden(f"role {principal.role!r} may read but not change datasets")


def require_chunk_reader(principal: Principal) -> None:
    """Searches, the chat proxy, chunk inspection and exports read chunks: not with an ``ingest`` key."""
    if not principal.can_read_chunks:
        raise IngestOnly(f"role {principal.role!r} is scoped to ingestion and may not read chunks")


def require_admin(principal: Principal, tenant_id: str) -> None:
    """Tenant admins act on their own tenant; the service key on every tenant."""
    if principal.is_service:
        return
    if tenant_id != principal.tenant_id:
        raise NotFound("not found")
    if not principal.can_admin:
        raise Forbidden("this needs an admin key of the tenant")


def owning_tenant(principal: Principal, tenant_id: str | None) -> str:
    """The tenant a new dataset belongs to: the key's own (the service key must name one)."""
    if principal.tenant_id is not None:
        return principal.tenant_id
    if not tenant_id:
        raise InvalidRequest("the service key must name the tenant (tenant_id) a dataset belongs to")
    return tenant_id


async def readable_datasets(
    principal: Principal, datasets: DatasetRepo, ids: tuple[str, ...] | None = None
) -> list[Dataset]:
    """The datasets a search may cover: the given ids (each must be readable) or all readable."""
    if ids:
        return [await readable(principal, datasets, dataset_id) for dataset_id in ids]
    return [d for d in await datasets.list_datasets(principal.tenant_id) if principal.can_read(d)]


async def dataset_refs(principal: Principal, datasets: DatasetRepo, refs: Sequence[str]) -> tuple[str, ...]:
    """The ids of the readable datasets ``refs`` name, each by id or by name (names are unique per
    tenant; an id wins over a name).  One that names none is NOT_FOUND (as a dataset the key may not
    read is); a name of datasets in two tenants (the service key reads both) is INVALID_REQUEST."""
    if not refs:
        return ()
    reach = [d for d in await datasets.list_datasets(principal.tenant_id) if principal.can_read(d)]
    ids = {d.id for d in reach}
    out = []
    for ref in refs:
        if ref in ids:
            out.append(ref)
            continue
        named = [d.id for d in reach if d.name == ref]
        if not named:
            raise NotFound(f"no dataset with the id or name {ref[:200]!r}")
        if len(named) > 1:
            raise InvalidRequest(f"datasets of several tenants are named {ref[:200]!r}: give its id")
        out.append(named[0])
    return tuple(dict.fromkeys(out))


async def searchable_collections(
    principal: Principal, datasets: DatasetRepo, names: Sequence[str]
) -> list[str]:
    """The collections among ``names`` a key may search on the Open WebUI surface (``/search``, the
    chat proxy): every one for the service key; for a tenant key only the collections of datasets its
    role may read.  The others are left out, exactly as unknown collections are."""
    if principal.is_service:
        return list(names)
    allowed = {d.collection_name for d in await readable_datasets(principal, datasets)}
    return [name for name in names if name in allowed]
