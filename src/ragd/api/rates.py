"""Requests per minute and key (``RAGD_LIMITS__*_PER_MINUTE``, per tenant overrides): a dependency
of each counted route, run once the key is known (the body gate verified it before any body was
read).  Over the rate: 429 ``RATE_LIMITED`` with ``Retry-After``, in the surface's error shape."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends

from ragd.api.auth import Caller
from ragd.api.deps import services
from ragd.bootstrap import Services
from ragd.kb_types import RateSurface


def rate_limited(surface: RateSurface) -> Any:
    """``Depends`` that counts the request on ``surface`` for the caller's key."""

    async def count(caller: Caller, svc: Annotated[Services, Depends(services)]) -> None:
        await svc.check_rate(caller, surface)

    return Depends(count)


SEARCH_RATE = rate_limited(RateSurface.SEARCH)
CHAT_RATE = rate_limited(RateSurface.CHAT)
MODELS_RATE = rate_limited(RateSurface.MODELS)
