"""A first dataset for a new installation (``ragd demo --serve``): a tenant, a dataset, its files queued.

Idempotent: the tenant and the dataset are found by name, and files are queued only while the
dataset has none, so running the demo twice indexes nothing twice. The files are copied (an
upload is moved into the dataset's store), then indexed by the service's job worker, where the
web UI shows their progress.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ragd.kb.context import KbContext
from ragd.kb.datasets import create_dataset
from ragd.kb.files import Upload, upload_files
from ragd.kb_types import ADMIN_ROLE, Dataset, Job, Principal

SERVICE = Principal(tenant_id=None, role=ADMIN_ROLE)


@dataclass(frozen=True, slots=True)
class Seeded:
    dataset: Dataset
    #: the job indexing the files, None when the dataset already had files
    job: Job | None


async def seed_dataset(
    ctx: KbContext, files: Sequence[Path], *, tenant: str, dataset: str, description: str = ""
) -> Seeded:
    tenants = {t.name: t for t in await ctx.catalog.list_tenants()}
    owner = tenants.get(tenant) or await ctx.catalog.create_tenant(tenant)
    found = next((d for d in await ctx.catalog.list_datasets(owner.id) if d.name == dataset), None)
    if found is None:
        found = await create_dataset(ctx, SERVICE, name=dataset, description=description, tenant_id=owner.id)
    if await ctx.catalog.list_files(found.id, limit=1):
        return Seeded(found, None)
    with tempfile.TemporaryDirectory(prefix="ragd-seed-") as tmp:
        uploads = []
        for n, path in enumerate(files):
            copy = Path(tmp) / f"{n}-{path.name}"
            shutil.copyfile(path, copy)
            uploads.append(Upload(name=path.name, path=copy, size=copy.stat().st_size))
        _, job = await upload_files(ctx, SERVICE, found.id, uploads)
    return Seeded(found, job)
