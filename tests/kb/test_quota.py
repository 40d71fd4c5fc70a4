"""The storage quota's arithmetic: what is held plus what comes, against each limit (0: none)."""

from __future__ import annotations

import pytest

from ragd.kb.quota import over_quota
from ragd.kb_types import TenantLimits, TenantUsage

HELD = TenantUsage(chunks=90, bytes=9_000)


@pytest.mark.parametrize(
    ("limits", "chunks", "size", "refused"),
    [
        (TenantLimits(), 10**9, 10**12, None),  # no limits
        (TenantLimits(max_chunks=100), 10, 0, None),  # exactly at the limit is allowed
        (TenantLimits(max_chunks=100), 11, 0, "chunks"),
        (TenantLimits(max_bytes=10_000), 0, 1_000, None),
        (TenantLimits(max_bytes=10_000), 0, 1_001, "bytes"),
        (TenantLimits(max_chunks=100, max_bytes=10_000), 11, 1_001, "chunks"),  # the first one broken
        (TenantLimits(max_chunks=0, max_bytes=10_000), 10**6, 0, None),  # 0 is no limit
    ],
)
def test_over_quota(limits: TenantLimits, chunks: int, size: int, refused: str | None) -> None:
    reason = over_quota(limits, HELD, chunks=chunks, size=size)
    if refused is None:
        assert reason is None
    else:
        assert reason is not None
        assert refused in reason
