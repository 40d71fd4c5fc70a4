"""The one filter parser: the record it builds, and INVALID_FILTER naming the field path otherwise."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragd.errors import InvalidFilter
from ragd.retrieve.filters import MAX_CONDITIONS, MAX_DEPTH, iso_datetime, parse_filter, parse_filter_json
from ragd.types import EmptyCondition, MatchCondition, MetaFilter, RangeCondition


def test_a_filter_parses_to_the_store_independent_record() -> None:
    raw = {
        "must": [
            {"key": "tags", "match": {"value": "invoice"}},
            {"key": "fields.amount", "range": {"gte": 10, "lt": 20.5}},
            {"key": "fields.issued", "range": {"gte": "2024-01-01", "lt": "2024-06-01T12:00:00+02:00"}},
        ],
        "should": [
            {"key": "language", "match": {"any": ["en", "de", "en"]}},
            {"exists": {"key": "fields.x"}},
        ],
        "must_not": [{"must": [{"is_empty": {"key": "tags"}}]}],
    }
    assert parse_filter(raw) == MetaFilter(
        must=(
            MatchCondition("tags", ("invoice",)),
            RangeCondition("fields.amount", gte=10.0, lt=20.5),
            RangeCondition(
                "fields.issued", gte="2024-01-01T00:00:00Z", lt="2024-06-01T10:00:00Z", dates=True
            ),
        ),
        should=(MatchCondition("language", ("en", "de")), EmptyCondition("fields.x", empty=False)),
        must_not=(MetaFilter(must=(EmptyCondition("tags", empty=True),)),),
    )
    assert parse_filter_json(json.dumps(raw)) == parse_filter(raw)


@pytest.mark.parametrize("raw", [None, {}, {"must": []}, {"must": [], "should": []}])
def test_an_empty_filter_is_no_filter(raw: Any) -> None:
    assert parse_filter(raw) is None
    assert parse_filter_json("  ") is None


def _nested(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"must": [{"key": "tags", "match": {"value": "x"}}]}
    for _ in range(depth - 1):
        node = {"must": [node]}
    return node


BAD: list[tuple[Any, str]] = [
    ([], "filter: must be a clause object"),
    ({"where": []}, "filter.where: unknown clause"),
    ({"must": {"key": "tags"}}, "filter.must: must be a list"),
    ({"must": [{"key": "colour", "match": {"value": "x"}}]}, "filter.must[0].key: unknown key 'colour'"),
    ({"must": [{"key": "fields.9x", "match": {"value": 1}}]}, "filter.must[0].key: field name '9x'"),
    ({"must": [{"key": 3, "match": {"value": 1}}]}, "filter.must[0].key: must be a string"),
    ({"should": [{"key": "tags"}]}, "filter.should[0]: a condition with a key needs exactly one of"),
    (
        {"must": [{"key": "tags", "match": {"value": "a"}, "range": {"gt": 1}}]},
        "exactly one of match and range",
    ),
    ({"must": [{"key": "tags", "match": {"value": [1]}}]}, "filter.must[0].match.value: must be a string"),
    ({"must": [{"key": "tags", "match": {"value": 1.5}}]}, "filter.must[0].match.value: match takes"),
    ({"must": [{"key": "tags", "match": {"any": []}}]}, "filter.must[0].match.any: must be a non-empty list"),
    ({"must": [{"key": "tags", "match": {"any": ["a", 1]}}]}, "filter.must[0].match.any: all strings"),
    ({"must": [{"key": "tags", "match": {"values": ["a"]}}]}, "filter.must[0].match: must be"),
    ({"must": [{"key": "tags", "range": {"gt": 1}}]}, "filter.must[0].range: range applies to fields"),
    ({"must": [{"key": "fields.a", "range": {}}]}, "filter.must[0].range: give at least one"),
    ({"must": [{"key": "fields.a", "range": {"above": 1}}]}, "filter.must[0].range.above: unknown bound"),
    (
        {"must": [{"key": "fields.a", "range": {"gt": "soon"}}]},
        "filter.must[0].range.gt: 'soon' is not an ISO",
    ),
    ({"must": [{"key": "fields.a", "range": {"gt": "2024-02-30"}}]}, "range.gt: '2024-02-30' is not an ISO"),
    ({"must": [{"key": "fields.a", "range": {"gt": 1, "lt": "2024-01-01"}}]}, "all numbers or all dates"),
    ({"must": [{"key": "fields.a", "range": {"gt": True}}]}, "filter.must[0].range.gt: must be a number"),
    (
        {"must_not": [{"exists": {"key": "tags"}, "key": "tags"}]},
        "filter.must_not[0]: is_empty or exists stands",
    ),
    ({"must": [{"is_empty": {"key": "nope"}}]}, "filter.must[0].is_empty.key: unknown key"),
    ({"must": [{"match": {"value": 1}}]}, "filter.must[0]: a condition needs a key"),
    ({"must": ["tags"]}, "filter.must[0]: must be a condition or a clause, got a string"),
    (_nested(MAX_DEPTH + 1), f"clauses nest deeper than {MAX_DEPTH} levels"),
    (
        {"must": [{"key": "tags", "match": {"value": "x"}}] * (MAX_CONDITIONS + 1)},
        f"at most {MAX_CONDITIONS}",
    ),
    ({"must": [{"key": "tags", "match": {"value": "x" * 300}}]}, "at most 256 characters"),
]


@pytest.mark.parametrize(("raw", "message"), BAD, ids=[m[:40] for _, m in BAD])
def test_a_bad_filter_is_invalid_filter_naming_the_field(raw: Any, message: str) -> None:
    with pytest.raises(InvalidFilter) as caught:
        parse_filter(raw)
    assert message in caught.value.message
    assert caught.value.code == "INVALID_FILTER"
    assert caught.value.http_status == 422


def test_the_deepest_allowed_filter_parses() -> None:
    assert parse_filter(_nested(MAX_DEPTH)) is not None


def test_json_text_that_is_not_json_is_invalid_filter() -> None:
    with pytest.raises(InvalidFilter, match="--filter: not JSON"):
        parse_filter_json("{must: [", "--filter")
    with pytest.raises(InvalidFilter, match=r"rag_filter\.must"):
        parse_filter({"must": 1}, "rag_filter")


def test_iso_dates_are_canonical_utc() -> None:
    assert iso_datetime("2024-05-01") == "2024-05-01T00:00:00Z"
    assert iso_datetime("2024-05-01T02:30:00+02:00") == "2024-05-01T00:30:00Z"
    assert iso_datetime("2024-05-01 10:00") == "2024-05-01T10:00:00Z"
    assert iso_datetime("2024-05-01T10:00:00.5Z") == "2024-05-01T10:00:00.500000Z"
    assert iso_datetime("May 1") is None
    assert iso_datetime("2024-13-01") is None
