"""Schedule math on a fake clock: interval and cron slots (a time zone, both daylight-saving jumps),
missed slots collapse to one run, jitter stays within its bound, bad schedules are refused."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from ragd.errors import InvalidSchedule
from ragd.kb.schedule_math import jitter_bound, next_run, next_slot, parse_schedule, period
from ragd.kb_types import SourceSchedule

BERLIN = ZoneInfo("Europe/Berlin")


def at(*parts: int, tz: ZoneInfo = BERLIN) -> float:
    return datetime(*parts, tzinfo=tz).timestamp()  # type: ignore[misc]


def local(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, BERLIN)


def test_an_interval_runs_its_interval_after_now() -> None:
    every = SourceSchedule(interval_s=3600)
    assert next_slot(every, 1000.0) == 4600.0
    assert period(every, 4600.0) == 3600.0


def test_a_cron_slot_is_read_in_its_time_zone() -> None:
    nightly = SourceSchedule(cron="0 3 * * *", timezone="Europe/Berlin")
    slot = next_slot(nightly, at(2026, 1, 10, 12, 0))
    assert local(slot) == datetime(2026, 1, 11, 3, 0, tzinfo=BERLIN)
    utc = SourceSchedule(cron="0 3 * * *")
    assert next_slot(utc, at(2026, 1, 10, 12, 0)) - slot == 3600  # 03:00 UTC is 04:00 in Berlin


def test_a_slot_in_the_skipped_spring_hour_runs_once_just_after_the_jump() -> None:
    # 2026-03-29: Berlin jumps from 02:00 to 03:00; 02:30 does not exist that day
    half_past_two = SourceSchedule(cron="30 2 * * *", timezone="Europe/Berlin")
    slot = next_slot(half_past_two, at(2026, 3, 28, 12, 0))
    assert local(slot).date().isoformat() == "2026-03-29"
    assert local(slot).hour == 3
    following = next_slot(half_past_two, slot)
    assert local(following) == datetime(2026, 3, 30, 2, 30, tzinfo=BERLIN)


def test_a_slot_in_the_repeated_autumn_hour_runs_once() -> None:
    # 2026-10-25: Berlin goes back from 03:00 to 02:00; 02:30 happens twice
    half_past_two = SourceSchedule(cron="30 2 * * *", timezone="Europe/Berlin")
    first = next_slot(half_past_two, at(2026, 10, 24, 12, 0))
    assert local(first).date().isoformat() == "2026-10-25"
    second = next_slot(half_past_two, first)
    assert local(second).date().isoformat() == "2026-10-26"
    assert second - first == 25 * 3600  # that day has 25 hours: one run, not two


def test_missed_slots_collapse_to_one_run_after_now() -> None:
    every_minute = SourceSchedule(interval_s=60)
    due_at = 1000.0
    back_at = due_at + 3 * 60 + 7  # down for three slots
    nxt = next_run(every_minute, back_at, ratio=0.0, max_s=0.0, draw=lambda: 0.0)
    assert nxt == back_at + 60  # one run now (the caller's), then the next after now; none owed
    hourly = SourceSchedule(cron="0 * * * *", timezone="Europe/Berlin")
    back = at(2026, 5, 1, 10, 17)
    assert local(next_run(hourly, back, ratio=0.0, max_s=0.0, draw=lambda: 0.0)) == datetime(
        2026, 5, 1, 11, 0, tzinfo=BERLIN
    )


@pytest.mark.parametrize("draw", [0.0, 0.5, 0.999999])
def test_jitter_delays_within_its_bound(draw: float) -> None:
    hourly = SourceSchedule(interval_s=3600)
    slot = 1000.0 + 3600
    bound = jitter_bound(hourly, slot, ratio=0.05, max_s=300)
    assert bound == 180  # 5 % of an hour
    nxt = next_run(hourly, 1000.0, ratio=0.05, max_s=300, draw=lambda: draw)
    assert slot <= nxt < slot + bound
    daily = SourceSchedule(interval_s=86_400)
    assert jitter_bound(daily, 0.0, ratio=0.05, max_s=300) == 300  # capped


def test_a_schedule_parses_from_its_json() -> None:
    assert parse_schedule({"interval_s": 90}, min_interval_s=60) == SourceSchedule(interval_s=90)
    cron = parse_schedule({"cron": " 0  3 * * 1-5 ", "timezone": "Europe/Berlin"}, min_interval_s=60)
    assert cron == SourceSchedule(cron="0 3 * * 1-5", timezone="Europe/Berlin")
    assert SourceSchedule.from_json(cron.to_json()) == cron
    assert parse_schedule({"cron": "*/5 * * * *"}, min_interval_s=60).timezone == "UTC"


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"interval_s": 60, "cron": "* * * * *"},
        {"interval_s": 10},
        {"interval_s": float("inf")},
        {"interval_s": True},
        {"interval_s": "60"},
        {"interval_s": 3600, "timezone": "Europe/Berlin"},
        {"cron": "0 3 * *"},
        {"cron": "0 0 3 * * *"},  # seconds: not a 5-field cron
        {"cron": "61 * * * *"},
        {"cron": "0 3 30 2 *"},  # 30 February never comes
        {"cron": "0 3 * * *", "timezone": "Mars/Olympus"},
        {"cron": "0 3 * * *", "timezone": "../../etc/passwd"},
        {"cron": 5},
    ],
)
def test_a_schedule_that_cannot_run_is_refused(body: dict[str, object]) -> None:
    with pytest.raises(InvalidSchedule) as caught:
        parse_schedule(body, min_interval_s=60)
    assert caught.value.code == "INVALID_SCHEDULE"
    assert caught.value.http_status == 422
