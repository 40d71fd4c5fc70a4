"""The tenant template: the datasets every new tenant is created with (docs/knowledge-bases.md,
"Standard datasets").

The service key sets it (``PUT /api/v1/tenants/template``: names with their settings, checked like
a dataset's); until it does, or after it resets it, the settings' names apply
(``RAGD_TENANTS__DATASETS``, by default the Leadmetrics set: knowledge, products, support,
marketing).  A tenant gets the template's datasets in the transaction that creates it; editing the
template never changes a tenant that exists.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from ragd.catalog.base import TenantTemplates
from ragd.errors import Forbidden, InvalidRequest
from ragd.kb import audit
from ragd.kb.context import KbContext
from ragd.kb.datasets import clean_name, clean_roles, collection_name_for
from ragd.kb_types import Dataset, DatasetTemplate, Principal

#: datasets one template may hold
MAX_DATASETS = 50


@dataclass(frozen=True, slots=True)
class TenantTemplate:
    datasets: tuple[DatasetTemplate, ...]
    #: True: set by the service key; False: the settings' default
    custom: bool


async def current_template(catalog: TenantTemplates, default_names: Sequence[str]) -> TenantTemplate:
    stored = await catalog.get_tenant_template()
    if stored is not None:
        return TenantTemplate(tuple(stored), custom=True)
    return TenantTemplate(tuple(DatasetTemplate(name=n) for n in default_names), custom=False)


def template_datasets(template: TenantTemplate) -> list[Dataset]:
    """New dataset records of the template (the catalog sets their tenant as it creates it)."""
    now = time.time()
    out = []
    for spec in template.datasets:
        dataset_id = str(uuid.uuid4())
        out.append(
            Dataset(
                id=dataset_id,
                tenant_id="",
                name=spec.name,
                collection_name=collection_name_for(dataset_id),
                description=spec.description,
                chunking=spec.chunking,
                allowed_roles=spec.allowed_roles,
                created_at=now,
                updated_at=now,
            )
        )
    return out


def _service_only(principal: Principal) -> None:
    if not principal.is_service:
        raise Forbidden("only the service key reads or sets the tenant template")


async def get_template(ctx: KbContext, principal: Principal) -> TenantTemplate:
    _service_only(principal)
    return await current_template(ctx.catalog, ctx.standard_datasets)


@audit.audited("tenant_template.set", "tenant_template")
async def set_template(
    ctx: KbContext, principal: Principal, datasets: Sequence[DatasetTemplate] | None
) -> TenantTemplate:
    """Replace the template (None: back to the settings' default); existing tenants keep theirs."""
    _service_only(principal)
    if datasets is None:
        audit.note(reset=True)
        await ctx.catalog.set_tenant_template(None)
        return await current_template(ctx.catalog, ctx.standard_datasets)
    checked = [check_spec(ctx, spec) for spec in datasets]
    if len(checked) > MAX_DATASETS:
        raise InvalidRequest(f"a tenant template holds at most {MAX_DATASETS} datasets")
    names = [d.name for d in checked]
    if len(set(names)) != len(names):
        raise InvalidRequest("the template's dataset names must differ (they are unique per tenant)")
    audit.note(datasets=names)
    await ctx.catalog.set_tenant_template(checked)
    return TenantTemplate(tuple(checked), custom=True)


def check_spec(ctx: KbContext, spec: DatasetTemplate) -> DatasetTemplate:
    """``spec`` with its name and roles cleaned; chunking checked as a dataset's (INVALID_REQUEST)."""
    ctx.chunker_for(spec.chunking, None)
    return DatasetTemplate(
        name=clean_name(spec.name),
        description=spec.description,
        chunking=spec.chunking,
        allowed_roles=clean_roles(spec.allowed_roles),
    )
