"""When a scheduled source runs next: pure functions over epoch seconds, no I/O, no settings.

    interval   slots are ``interval_s`` apart, counted from the last run
    cron       5 fields (minute hour day month weekday) read in an IANA time zone, as Debian's
               cron reads them across daylight-saving changes (a slot in a skipped hour runs
               just after the jump; a slot in a repeated hour runs once) — ``cronsim``

The next run is always the first slot *after now*: a scheduler that was down for many slots runs
once when it comes back, not once per missed slot.  Jitter delays a run by a random share of its
period (bounded), never brings it forward, so many sources on one schedule do not fire together.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from ragd.errors import InvalidSchedule
from ragd.kb_types import SourceSchedule

MAX_INTERVAL_S = 366 * 86_400.0


def parse_schedule(data: Mapping[str, Any], *, min_interval_s: float) -> SourceSchedule:
    """A schedule from ``{"interval_s": n}`` or ``{"cron": "m h dom mon dow", "timezone": "Area/City"}``;
    422 INVALID_SCHEDULE for anything else."""
    interval, cron = data.get("interval_s"), data.get("cron")
    if (interval is None) == (cron is None):
        raise InvalidSchedule("a schedule has exactly one of interval_s and cron")
    if interval is not None:
        if isinstance(interval, bool) or not isinstance(interval, int | float) or not math.isfinite(interval):
            raise InvalidSchedule("interval_s must be a number of seconds")
        if not min_interval_s <= interval <= MAX_INTERVAL_S:
            raise InvalidSchedule(
                f"interval_s must lie between {min_interval_s:g} and {MAX_INTERVAL_S:g} seconds",
                hint="RAGD_WORKER__SCHEDULE_MIN_INTERVAL_S sets the shortest",
            )
        if data.get("timezone") is not None:
            raise InvalidSchedule("an interval has no time zone (only a cron expression has)")
        return SourceSchedule(interval_s=float(interval))
    zone = data.get("timezone") or "UTC"
    if not isinstance(cron, str) or not isinstance(zone, str):
        raise InvalidSchedule("cron and timezone are strings")
    schedule = SourceSchedule(cron=" ".join(cron.split()), timezone=zone)
    _cron_iter(schedule, 0.0)  # refuses what does not parse
    return schedule


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise InvalidSchedule(f"unknown time zone {name[:64]!r}", hint="an IANA name: Europe/Berlin") from exc


def _cron_iter(schedule: SourceSchedule, after: float) -> CronSim:
    expr = schedule.cron or ""
    if len(expr.split()) != 5 or len(expr) > 200:
        raise InvalidSchedule("a cron expression has 5 fields: minute hour day month weekday")
    start = datetime.fromtimestamp(after, UTC).astimezone(_zone(schedule.timezone))
    try:
        return CronSim(expr, start)
    except CronSimError as exc:
        raise InvalidSchedule(f"invalid cron expression {expr[:64]!r}: {exc}") from exc


def next_slot(schedule: SourceSchedule, after: float) -> float:
    """The first slot strictly after ``after`` (for an interval: ``after`` + the interval)."""
    if schedule.interval_s is not None:
        return after + schedule.interval_s
    try:
        return next(_cron_iter(schedule, after)).timestamp()
    except StopIteration as exc:  # a date that never comes (30 February)
        raise InvalidSchedule(f"the cron expression {schedule.cron!r} never fires") from exc


def period(schedule: SourceSchedule, slot: float) -> float:
    """How far the slot after ``slot`` is from it: the interval, or the cron's gap there."""
    return next_slot(schedule, slot) - slot


def jitter_bound(schedule: SourceSchedule, slot: float, *, ratio: float, max_s: float) -> float:
    """The most a run of ``slot`` may be delayed: ``ratio`` of the period, at most ``max_s``."""
    return max(0.0, min(ratio * period(schedule, slot), max_s))


def next_run(
    schedule: SourceSchedule,
    now: float,
    *,
    ratio: float,
    max_s: float,
    draw: Callable[[], float],
) -> float:
    """When to run next: the first slot after ``now``, delayed by ``draw()`` (in [0, 1)) of the
    jitter's bound."""
    slot = next_slot(schedule, now)
    return slot + draw() * jitter_bound(schedule, slot, ratio=ratio, max_s=max_s)
