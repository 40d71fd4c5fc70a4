"""Page images of a dataset's files, a chunk's passage marked (docs/knowledge-bases.md#page-images).

GET /api/v1/datasets/{dataset_id}/files/{file_id}/pages/{n}[?chunk=<chunk id>][&dpi=<36..max>]

``n`` is 1-based.  Answers ``image/png`` with ``ETag`` (``If-None-Match`` gets a 304),
``Cache-Control: private`` (the page is the tenant's), ``X-Page-Count`` (the file's pages) and
``X-Ragd-Cache: hit|miss`` (whether this request drew the page).  The drawing runs off the event
loop (:mod:`ragd.kb.pages`).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from ragd.api.auth import Caller
from ragd.api.deps import services
from ragd.bootstrap import Services
from ragd.kb.pages import PageSetup, page_image, page_setup

router = APIRouter(prefix="/api/v1", tags=["knowledge bases"])
Svc = Annotated[Services, Depends(services)]

_MAX_PAGE = 1_000_000


def _setup(svc: Services) -> PageSetup:
    pages = svc.settings.pages
    return page_setup(
        dpi=pages.dpi,
        max_dpi=pages.max_dpi,
        max_pixels=pages.max_pixels,
        cache_dir=svc.settings.page_cache_dir,
        cache_mb=pages.cache_mb,
        extract=svc.settings.extract,
    )


@router.get(
    "/datasets/{dataset_id}/files/{file_id}/pages/{n}",
    response_class=Response,
    responses={200: {"content": {"image/png": {}}, "description": "the page as a PNG"}, 304: {}},
)
async def file_page(
    dataset_id: str,
    file_id: str,
    n: int,
    request: Request,
    caller: Caller,
    svc: Svc,
    chunk: Annotated[
        str | None, Query(max_length=64, description="a chunk id: its passage is marked")
    ] = None,
    dpi: Annotated[int | None, Query(description="36 to RAGD_PAGES__MAX_DPI (RAGD_PAGES__DPI)")] = None,
) -> Response:
    """Page ``n`` (1-based) of the file as a PNG; ``chunk`` marks that chunk's passage on it."""
    found = await page_image(
        svc.knowledge(),
        caller,
        dataset_id,
        file_id,
        min(n, _MAX_PAGE),
        _setup(svc),
        chunk_id=chunk,
        dpi=dpi,
    )
    headers = {
        "ETag": f'"{found.etag}"',
        "Cache-Control": "private, max-age=3600",
        "X-Page-Count": str(found.page_count),
        "X-Ragd-Cache": "hit" if found.cached else "miss",
        "Vary": "Authorization, Cookie",
    }
    if request.headers.get("if-none-match", "").strip() in (f'"{found.etag}"', f'W/"{found.etag}"'):
        return Response(status_code=304, headers=headers)
    return Response(found.png, media_type="image/png", headers=headers)
