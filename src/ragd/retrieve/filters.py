"""The one filter language of every search surface: parse and bound a user's filter expression.

A filter is an object in the spirit of Qdrant's (docs/knowledge-bases.md#filters)::

    {"must": [...], "should": [...], "must_not": [...]}

whose lists hold conditions or nested clauses (at most :data:`MAX_DEPTH` levels of clauses,
:data:`MAX_CONDITIONS` conditions in all)::

    {"key": "tags", "match": {"value": "invoice"}}
    {"key": "fields.customer", "match": {"any": ["acme", "globex"]}}
    {"key": "fields.amount", "range": {"gte": 100, "lt": 1000}}
    {"key": "fields.issued", "range": {"gte": "2024-01-01", "lt": "2025-01-01"}}
    {"is_empty": {"key": "fields.paid"}}     {"exists": {"key": "tags"}}

Keys: ``tags``, ``fields.<name>`` (a file's user metadata) and the built-ins ``language``,
``file_id``, ``name``, ``source`` and ``collection``.  The result is a store-independent
:class:`ragd.types.MetaFilter`; only the store adapters turn it into their engine's filter, and
the search's tenant/dataset scope is always ANDed around it (a filter can only narrow a search).
Anything else is :class:`ragd.errors.InvalidFilter` naming the field path and the problem.

Pure: no I/O, no settings.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any

from ragd.errors import InvalidFilter
from ragd.types import EmptyCondition, FilterNode, MatchCondition, MatchScalar, MetaFilter, RangeCondition

#: how many levels of clauses a filter may nest (the top-level object is level 1)
MAX_DEPTH = 4
#: how many conditions a filter may hold in all
MAX_CONDITIONS = 64
#: how many values one ``match.any`` may list
MAX_ANY = 100
#: how long a string value may be
MAX_VALUE_CHARS = 256
#: how long a filter's JSON text may be (the CLI's ``--filter``, the chat proxy's ``rag_filter``)
MAX_FILTER_CHARS = 32_768

#: a user metadata field's name (``fields.<name>``); also the pattern of a tag-free field name
FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
FIELDS_PREFIX = "fields."
TAGS_KEY = "tags"
#: built-in keys every chunk carries, matched by value (never by range)
BUILTIN_KEYS = frozenset({"language", "file_id", "name", "source", "collection", "dataset"})
CLAUSES = ("must", "should", "must_not")
RANGE_BOUNDS = ("gt", "gte", "lt", "lte")
#: an ISO-8601 date or date-time (what a ``date`` field holds and a date range compares)
ISO_DATE = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})?)?",
)


def parse_filter_json(text: str | None, path: str = "filter") -> MetaFilter | None:
    """A filter given as JSON text (the CLI, a form field); blank text is no filter."""
    if text is None or not text.strip():
        return None
    if len(text) > MAX_FILTER_CHARS:
        raise InvalidFilter(f"{path}: the filter is longer than {MAX_FILTER_CHARS} characters")
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise InvalidFilter(f"{path}: not JSON ({exc.args[0] if exc.args else exc})") from None
    return parse_filter(raw, path)


def parse_filter(raw: object, path: str = "filter") -> MetaFilter | None:
    """A filter given as decoded JSON; ``None`` or ``{}`` is no filter."""
    if raw is None:
        return None
    parser = _Parser()
    parsed = parser.clause(raw, path, 1)
    if not (parsed.must or parsed.should or parsed.must_not):
        return None
    return parsed


def iso_datetime(text: str) -> str | None:
    """``text`` as a canonical UTC date-time (``2024-05-01T00:00:00Z``), or None when it is not an
    ISO-8601 date or date-time.  A date is its midnight UTC; a time without an offset is UTC."""
    if not ISO_DATE.fullmatch(text):
        return None
    try:
        if len(text) == 10:
            parsed = datetime.combine(date.fromisoformat(text), datetime.min.time(), UTC)
        else:
            parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    utc = parsed.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S") + (f".{utc.microsecond:06d}" if utc.microsecond else "") + "Z"


class _Parser:
    def __init__(self) -> None:
        self.conditions = 0

    def clause(self, raw: object, path: str, depth: int) -> MetaFilter:
        if depth > MAX_DEPTH:
            raise InvalidFilter(f"{path}: clauses nest deeper than {MAX_DEPTH} levels")
        obj = _object(raw, path, "a clause object with must, should and/or must_not")
        unknown = sorted(set(obj) - set(CLAUSES))
        if unknown:
            raise InvalidFilter(
                f"{path}.{unknown[0]}: unknown clause; a clause has only must, should and must_not"
            )
        lists: dict[str, tuple[FilterNode, ...]] = {}
        for name in CLAUSES:
            items = obj.get(name)
            if items is None:
                continue
            if not isinstance(items, list):
                raise InvalidFilter(f"{path}.{name}: must be a list of conditions or clauses")
            lists[name] = tuple(self.node(item, f"{path}.{name}[{i}]", depth) for i, item in enumerate(items))
        return MetaFilter(**lists)

    def node(self, raw: object, path: str, depth: int) -> FilterNode:
        obj = _object(raw, path, "a condition or a clause")
        if any(name in obj for name in CLAUSES):
            return self.clause(obj, path, depth + 1)
        self.conditions += 1
        if self.conditions > MAX_CONDITIONS:
            raise InvalidFilter(f"{path}: a filter holds at most {MAX_CONDITIONS} conditions")
        if "is_empty" in obj or "exists" in obj:
            return _empty(obj, path)
        if "key" not in obj:
            raise InvalidFilter(
                f"{path}: a condition needs a key (with match or range), is_empty or exists; "
                "a clause needs must, should or must_not"
            )
        key = _key(obj["key"], f"{path}.key")
        unknown = sorted(set(obj) - {"key", "match", "range"})
        if unknown:
            raise InvalidFilter(f"{path}.{unknown[0]}: unknown; a condition has key and one of match, range")
        if ("match" in obj) == ("range" in obj):
            raise InvalidFilter(f"{path}: a condition with a key needs exactly one of match and range")
        if "match" in obj:
            return _match(key, obj["match"], f"{path}.match")
        return _range(key, obj["range"], f"{path}.range")


def _object(raw: object, path: str, what: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise InvalidFilter(f"{path}: must be {what}, got {_kind(raw)}")
    return raw


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _key(raw: object, path: str) -> str:
    if not isinstance(raw, str):
        raise InvalidFilter(f"{path}: must be a string, got {_kind(raw)}")
    if raw == TAGS_KEY or raw in BUILTIN_KEYS:
        return raw
    if raw.startswith(FIELDS_PREFIX):
        name = raw[len(FIELDS_PREFIX) :]
        if FIELD_NAME.fullmatch(name):
            return raw
        raise InvalidFilter(f"{path}: field name {name[:80]!r} must match {FIELD_NAME.pattern}")
    valid = ", ".join(["tags", "fields.<name>", *sorted(BUILTIN_KEYS)])
    raise InvalidFilter(f"{path}: unknown key {raw[:80]!r}; valid keys: {valid}")


def _empty(obj: Mapping[str, Any], path: str) -> EmptyCondition:
    if len(obj) != 1:
        raise InvalidFilter(f"{path}: is_empty or exists stands alone in its condition")
    ((kind, inner),) = obj.items()
    body = _object(inner, f"{path}.{kind}", 'an object {"key": ...}')
    if set(body) != {"key"}:
        raise InvalidFilter(f"{path}.{kind}: holds exactly one key")
    return EmptyCondition(_key(body["key"], f"{path}.{kind}.key"), empty=kind == "is_empty")


def _scalar(raw: object, path: str) -> MatchScalar:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, int):
        if abs(raw) >= 2**63:
            raise InvalidFilter(f"{path}: integer out of range")
        return raw
    if isinstance(raw, float):
        if raw.is_integer() and abs(raw) < 2**53:
            return int(raw)
        raise InvalidFilter(f"{path}: match takes a string, an integer or a boolean; use range for {raw}")
    if isinstance(raw, str):
        if len(raw) > MAX_VALUE_CHARS:
            raise InvalidFilter(f"{path}: a value is at most {MAX_VALUE_CHARS} characters")
        return raw
    raise InvalidFilter(f"{path}: must be a string, an integer or a boolean, got {_kind(raw)}")


def _match(key: str, raw: object, path: str) -> MatchCondition:
    body = _object(raw, path, 'an object {"value": x} or {"any": [x, ...]}')
    if set(body) == {"value"}:
        return MatchCondition(key, (_scalar(body["value"], f"{path}.value"),))
    if set(body) == {"any"}:
        items = body["any"]
        if not isinstance(items, list) or not items:
            raise InvalidFilter(f"{path}.any: must be a non-empty list")
        if len(items) > MAX_ANY:
            raise InvalidFilter(f"{path}.any: at most {MAX_ANY} values")
        values = tuple(_scalar(v, f"{path}.any[{i}]") for i, v in enumerate(items))
        kinds = {type(v) for v in values}
        if bool in kinds or len(kinds) > 1:
            raise InvalidFilter(f"{path}.any: all strings or all integers (a boolean: use value)")
        return MatchCondition(key, tuple(dict.fromkeys(values)))
    raise InvalidFilter(f'{path}: must be {{"value": x}} or {{"any": [x, ...]}}')


def _range(key: str, raw: object, path: str) -> RangeCondition:
    if not key.startswith(FIELDS_PREFIX):
        raise InvalidFilter(f"{path}: range applies to fields.<name> only, not {key!r}")
    body = _object(raw, path, "an object of gt, gte, lt, lte")
    unknown = sorted(set(body) - set(RANGE_BOUNDS))
    if unknown:
        raise InvalidFilter(f"{path}.{unknown[0]}: unknown bound; a range has gt, gte, lt, lte")
    if not body:
        raise InvalidFilter(f"{path}: give at least one of gt, gte, lt, lte")
    numbers: dict[str, float] = {}
    dates: dict[str, str] = {}
    for bound, value in body.items():
        where = f"{path}.{bound}"
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise InvalidFilter(f"{where}: must be a number or an ISO-8601 date, got {_kind(value)}")
        if isinstance(value, str):
            canonical = iso_datetime(value) if len(value) <= 64 else None
            if canonical is None:
                raise InvalidFilter(f"{where}: {value[:64]!r} is not an ISO-8601 date or date-time")
            dates[bound] = canonical
        else:
            if not math.isfinite(value):
                raise InvalidFilter(f"{where}: must be a finite number")
            numbers[bound] = float(value)
    if numbers and dates:
        raise InvalidFilter(f"{path}: bounds are all numbers or all dates")
    return RangeCondition(key, dates=bool(dates), **(dates or numbers))


def keys_of(flt: MetaFilter) -> Sequence[str]:
    """Every key a filter reads (for logs and metrics)."""
    out: list[str] = []
    for node in (*flt.must, *flt.should, *flt.must_not):
        if isinstance(node, MetaFilter):
            out.extend(keys_of(node))
        else:
            out.append(node.key)
    return out
