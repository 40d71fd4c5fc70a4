"""This process's view of every tenant's limits: the settings' defaults, a short cache of each
tenant's overrides, and the rate buckets (:mod:`ragd.kb.rates`).  Built once by the composition
root and held by :class:`ragd.kb.context.KbContext`."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from ragd.catalog.base import TenantLimitsRepo
from ragd.kb.rates import KeyRates
from ragd.kb_types import LIMIT_NAMES, TenantLimits

#: a tenant's overrides are read again after this long (a change reaches every replica within it)
CACHE_S = 5.0


@dataclass(slots=True)
class LimitsBook:
    """This process's view of the limits: the settings' defaults, a short cache of each tenant's
    effective limits, and the rate buckets."""

    defaults: TenantLimits = field(default_factory=TenantLimits)
    rates: KeyRates = field(default_factory=KeyRates)
    clock: Callable[[], float] = time.monotonic
    _cache: dict[str, tuple[float, TenantLimits]] = field(default_factory=dict)

    def effective(self, overrides: Mapping[str, int]) -> TenantLimits:
        return replace(self.defaults, **{k: v for k, v in overrides.items() if k in LIMIT_NAMES})

    async def of(self, catalog: TenantLimitsRepo, tenant_id: str) -> TenantLimits:
        now = self.clock()
        held = self._cache.get(tenant_id)
        if held is not None and now - held[0] < CACHE_S:
            return held[1]
        limits = self.effective(await catalog.get_tenant_limits(tenant_id))
        self._cache[tenant_id] = (now, limits)
        return limits

    def forget(self, tenant_id: str) -> None:
        self._cache.pop(tenant_id, None)
