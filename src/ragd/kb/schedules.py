"""A source's schedule: set (or clear) it, pause it, resume it (tenant admins; audited).

    PUT  …/sources/{id}/schedule   {"interval_s": 3600} | {"cron": "0 3 * * *", "timezone": "Europe/Berlin"}
                                   | null (no schedule)
    POST …/sources/{id}/pause      the schedule stays; nothing fires until resumed
    POST …/sources/{id}/resume     the next run is the first slot after now (no catching up)

The runs themselves are fired by :class:`ragd.kb.scheduler.SourceScheduler`.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragd.errors import NotFound
from ragd.kb import audit
from ragd.kb.access import require_admin, writable
from ragd.kb.context import KbContext
from ragd.kb.schedule_math import next_run, parse_schedule
from ragd.kb_types import Dataset, Principal, SourceSchedule, SourceSpec


@dataclass(frozen=True, slots=True)
class ScheduleRules:
    """The operator's bounds (``worker.schedule_*`` settings)."""

    min_interval_s: float = 60.0
    jitter: float = 0.05
    jitter_max_s: float = 300.0

    def next_run(self, schedule: SourceSchedule, now: float) -> float:
        return next_run(schedule, now, ratio=self.jitter, max_s=self.jitter_max_s, draw=random.random)


async def _admin_source(
    ctx: KbContext, principal: Principal, dataset_id: str, source_id: str
) -> tuple[Dataset, SourceSpec]:
    dataset = await writable(principal, ctx.catalog, dataset_id)
    audit.note(tenant_id=dataset.tenant_id, dataset_id=dataset.id)
    require_admin(principal, dataset.tenant_id)
    spec = await ctx.catalog.get_source(source_id)
    if spec is None or spec.dataset_id != dataset.id:
        raise NotFound(f"source {source_id!r} not found in this dataset")
    return dataset, spec


def _stored(spec: SourceSpec | None, source_id: str) -> SourceSpec:
    if spec is None:  # removed meanwhile
        raise NotFound(f"source {source_id!r} not found in this dataset")
    return spec


@audit.audited("source.schedule", "source", "source_id")
async def set_schedule(
    ctx: KbContext,
    principal: Principal,
    dataset_id: str,
    source_id: str,
    body: Mapping[str, Any] | None,
    rules: ScheduleRules,
) -> SourceSpec:
    """Give the source ``body``'s schedule (None: none); 422 INVALID_SCHEDULE for one that cannot
    run.  Its first run is the first slot after now."""
    _, spec = await _admin_source(ctx, principal, dataset_id, source_id)
    schedule = parse_schedule(body, min_interval_s=rules.min_interval_s) if body is not None else None
    audit.note(schedule=schedule.to_json() if schedule else None)
    first = rules.next_run(schedule, ctx.clock()) if schedule else None
    return _stored(await ctx.catalog.set_schedule(spec.id, schedule, first), source_id)


@audit.audited("source.pause", "source", "source_id")
async def pause(ctx: KbContext, principal: Principal, dataset_id: str, source_id: str) -> SourceSpec:
    _, spec = await _admin_source(ctx, principal, dataset_id, source_id)
    return _stored(await ctx.catalog.set_paused(spec.id, True, spec.next_run_at), source_id)


@audit.audited("source.resume", "source", "source_id")
async def resume(
    ctx: KbContext, principal: Principal, dataset_id: str, source_id: str, rules: ScheduleRules
) -> SourceSpec:
    _, spec = await _admin_source(ctx, principal, dataset_id, source_id)
    following = rules.next_run(spec.schedule, ctx.clock()) if spec.schedule else None
    return _stored(await ctx.catalog.set_paused(spec.id, False, following), source_id)
