"""Storage per tenant: an ingest that would take a tenant over ``max_chunks`` or ``max_bytes`` fails
``QUOTA_EXCEEDED`` before anything is written (docs/knowledge-bases.md, "Limits").

The check runs twice: on an upload, for its bytes alone (nothing is kept when they are already
over), and in the ingest after chunking, before embedding or writing (:func:`storage_check`):
the tenant's chunks and bytes, the file's own previous version left out, plus the new version's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ragd.catalog.base import Catalog
from ragd.errors import QuotaExceeded
from ragd.kb.limits_book import LimitsBook
from ragd.kb_types import TenantLimits, TenantUsage


def over_quota(limits: TenantLimits, held: TenantUsage, *, chunks: int, size: int) -> str | None:
    """Why ``chunks`` more chunks and ``size`` more bytes would break the limits, or None."""
    if limits.max_chunks and held.chunks + chunks > limits.max_chunks:
        return f"{held.chunks:,} + {chunks:,} chunks would exceed the tenant's {limits.max_chunks:,}"
    if limits.max_bytes and held.bytes + size > limits.max_bytes:
        return f"{held.bytes:,} + {size:,} bytes would exceed the tenant's {limits.max_bytes:,}"
    return None


async def check_storage(
    catalog: Catalog,
    book: LimitsBook,
    tenant_id: str,
    *,
    chunks: int,
    size: int,
    exclude_file: str | None = None,
) -> None:
    """QUOTA_EXCEEDED (413) when the tenant's storage (``exclude_file`` left out) plus ``chunks``
    and ``size`` would exceed its ``max_chunks``/``max_bytes``."""
    limits = await book.of(catalog, tenant_id)
    if not (limits.max_chunks or limits.max_bytes):
        return
    held = (await catalog.tenant_usage(tenant_id, exclude_file=exclude_file)).get(tenant_id, TenantUsage())
    reason = over_quota(limits, held, chunks=chunks, size=size)
    if reason is not None:
        raise QuotaExceeded(
            f"storage quota: {reason}",
            hint="delete files, or ask the operator to raise max_chunks/max_bytes, then re-index",
        )


def storage_check(
    catalog: Catalog, book: LimitsBook, tenant_id: str, file_id: str, size: int
) -> Callable[[int], Awaitable[None]]:
    """What the ingest calls with a file's chunk count, after chunking and before embedding or
    writing: QUOTA_EXCEEDED when the tenant's storage (this file's previous version left out) plus
    this version would exceed its limits."""

    async def check(chunks: int) -> None:
        await check_storage(catalog, book, tenant_id, chunks=chunks, size=size, exclude_file=file_id)

    return check
