"""A file's user metadata: checked, stored in the catalog, copied into its chunks' payload.

    tags    a list of strings (1-64 printable characters each, at most MAX_TAGS)
    fields  {name: value}: name ``[A-Za-z_][A-Za-z0-9_]{0,63}`` (the filter language's
            ``fields.<name>``), value a string (<= MAX_VALUE_CHARS), a number, a boolean, or a date
            (an ISO-8601 date or date-time string, kept as canonical UTC ``2024-05-01T00:00:00Z``)

A field keeps one type in a dataset: the first file that sets it records its type (a string that
reads as an ISO-8601 date records ``date``); a later value of another type is INVALID_METADATA.
A string field stays a string even when a later value looks like a date.

A change (``PATCH /api/v1/datasets/{id}/files/{file}``) replaces the chunks' ``meta.tags`` and
``meta.fields`` in the store by file id (set-payload: no re-embedding).  An upload's metadata is
stored before its job indexes it; an ingest that ran with older metadata than the catalog holds
once it finishes copies the newer one onto the points (:func:`sync_points`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from ragd.errors import InvalidMetadata
from ragd.kb import audit
from ragd.kb.access import readable, writable
from ragd.kb.context import KbContext
from ragd.kb.files import file_of
from ragd.kb_types import Dataset, FieldType, FieldValue, FileEntry, FileMetadata, Principal
from ragd.retrieve.filters import FIELD_NAME, MAX_VALUE_CHARS, iso_datetime
from ragd.store.base import VectorStore
from ragd.store.payload import IndexKind, field_index
from ragd.types import PointFilter

#: the payload index a field of each type gets (a number's: ranges; match it by range for speed)
INDEX_KINDS = {
    FieldType.STRING: IndexKind.KEYWORD,
    FieldType.NUMBER: IndexKind.FLOAT,
    FieldType.BOOLEAN: IndexKind.BOOL,
    FieldType.DATE: IndexKind.DATETIME,
}
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_FIELDS = 32
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_metadata(
    tags: object, fields: object, declared: Mapping[str, FieldType]
) -> tuple[FileMetadata, dict[str, FieldType]]:
    """``tags`` and ``fields`` as given on the wire (None: none) as a file's metadata, and each
    field's type; INVALID_METADATA naming the tag or field otherwise.  ``declared``: the dataset's
    recorded types (a string value of a ``date`` field must read as one; the catalog re-checks
    every type when it stores them)."""
    values, types = _fields(fields, declared)
    return FileMetadata(tags=_tags(tags), fields=values), types


def _tags(raw: object) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InvalidMetadata("tags: must be a list of strings")
    if len(raw) > MAX_TAGS:
        raise InvalidMetadata(f"tags: at most {MAX_TAGS} tags")
    out: list[str] = []
    for i, tag in enumerate(raw):
        if not isinstance(tag, str):
            raise InvalidMetadata(f"tags[{i}]: must be a string")
        text = tag.strip()
        if not text or len(text) > MAX_TAG_CHARS or _CONTROL.search(text):
            raise InvalidMetadata(f"tags[{i}]: a tag is 1-{MAX_TAG_CHARS} printable characters")
        out.append(text)
    return tuple(dict.fromkeys(out))


def _fields(
    raw: object, declared: Mapping[str, FieldType]
) -> tuple[dict[str, FieldValue], dict[str, FieldType]]:
    if raw is None:
        return {}, {}
    if not isinstance(raw, Mapping):
        raise InvalidMetadata("fields: must be an object of name: value")
    if len(raw) > MAX_FIELDS:
        raise InvalidMetadata(f"fields: at most {MAX_FIELDS} fields")
    values: dict[str, FieldValue] = {}
    types: dict[str, FieldType] = {}
    for name, value in raw.items():
        if not isinstance(name, str) or not FIELD_NAME.fullmatch(name):
            raise InvalidMetadata(f"fields: name {str(name)[:80]!r} must match {FIELD_NAME.pattern}")
        values[name], types[name] = _value(name, value, declared.get(name))
    return values, types


def _value(name: str, value: Any, declared: FieldType | None) -> tuple[FieldValue, FieldType]:
    where = f"fields.{name}"
    out: FieldValue
    if isinstance(value, bool):
        kind, out = FieldType.BOOLEAN, value
    elif isinstance(value, (int, float)):
        if not math.isfinite(value) or abs(value) >= 2**63:
            raise InvalidMetadata(f"{where}: a number must be finite and below 2**63")
        kind, out = FieldType.NUMBER, value
    elif isinstance(value, str):
        if len(value) > MAX_VALUE_CHARS or _CONTROL.search(value):
            raise InvalidMetadata(f"{where}: a string is at most {MAX_VALUE_CHARS} printable characters")
        as_date = iso_datetime(value.strip()) if declared in (None, FieldType.DATE) else None
        if declared is FieldType.DATE and as_date is None:
            raise InvalidMetadata(f"{where}: {value[:64]!r} is not an ISO-8601 date, and the field is a date")
        kind = FieldType.DATE if as_date is not None else FieldType.STRING
        out = as_date if as_date is not None else value
    else:
        raise InvalidMetadata(f"{where}: must be a string, a number, a boolean or an ISO-8601 date")
    if declared is not None and declared is not kind:
        raise InvalidMetadata(
            f"{where}: is a {declared.value} in this dataset, not a {kind.value}",
            hint="send a value of the field's type, or use another field name",
        )
    return out, kind


async def ensure_field_indexes(store: VectorStore, types: Mapping[str, FieldType]) -> None:
    """A payload index for each field (made once; a field filtered without one reads every point)."""
    for name, kind in sorted(types.items()):
        await store.ensure_index(field_index(name, INDEX_KINDS[kind]))


async def store_metadata(
    ctx: KbContext, dataset: Dataset, entry: FileEntry, metadata: FileMetadata, types: Mapping[str, FieldType]
) -> FileEntry:
    """The catalog first (an ingest running meanwhile reads it when it finishes), then the fields'
    payload indexes (once per field name), then the points."""
    updated = await ctx.catalog.set_file_metadata(entry.id, metadata, types)
    await ensure_field_indexes(ctx.store, types)
    await sync_points(ctx, dataset, entry.id, metadata)
    return updated


async def sync_points(ctx: KbContext, dataset: Dataset, file_id: str, metadata: FileMetadata) -> int:
    """Set the file's chunks' ``meta.tags``/``meta.fields`` (vectors untouched); how many there were."""
    flt = PointFilter(collection_names=(dataset.collection_name,), file_id=file_id)
    return await ctx.store.set_meta(flt, metadata.payload())


@audit.audited("file.metadata", "file", "file_id")
async def update_metadata(
    ctx: KbContext,
    principal: Principal,
    dataset_id: str,
    file_id: str,
    *,
    tags: object = None,
    fields: object = None,
    replace_fields: bool = False,
) -> FileEntry:
    """PATCH a file's metadata: ``tags`` (given) replaces the list; ``fields`` (given) sets each
    named field, a null value removing it (``replace_fields``: the object replaces them all)."""
    dataset = await writable(principal, ctx.catalog, dataset_id)
    audit.note(tenant_id=dataset.tenant_id, dataset_id=dataset.id)
    entry = await file_of(ctx, dataset, file_id)
    current = entry.metadata
    if fields is not None and not isinstance(fields, Mapping):
        raise InvalidMetadata("fields: must be an object of name: value")
    removed = {k for k, v in (fields or {}).items() if v is None}
    given = {k: v for k, v in (fields or {}).items() if v is not None}
    base = {} if replace_fields else {k: v for k, v in current.fields.items() if k not in removed}
    declared = await ctx.catalog.field_types(dataset.id)
    merged_tags = current.tags if tags is None else tags
    metadata, types = check_metadata(
        list(merged_tags) if isinstance(merged_tags, tuple) else merged_tags, {**base, **given}, declared
    )
    audit.note(tags=len(metadata.tags), fields=sorted(metadata.fields)[:50])
    return await store_metadata(ctx, dataset, entry, metadata, types)


async def field_types(ctx: KbContext, principal: Principal, dataset_id: str) -> dict[str, FieldType]:
    """The type each field of a readable dataset's files holds, by name (what a filter's
    ``fields.<name>`` compares: the sandbox's filter builder offers them)."""
    dataset = await readable(principal, ctx.catalog, dataset_id)
    return await ctx.catalog.field_types(dataset.id)


async def upload_metadata(
    ctx: KbContext, dataset: Dataset, tags: str | None, fields: str | None
) -> tuple[FileMetadata, dict[str, FieldType]] | None:
    """An upload's form fields ``tags`` (a JSON list, or comma-separated) and ``fields`` (a JSON
    object) checked before anything is kept; None when neither is given."""
    if not (tags or "").strip() and not (fields or "").strip():
        return None
    declared = await ctx.catalog.field_types(dataset.id)
    return check_metadata(_form_tags(tags), _form_json(fields, "fields"), declared)


async def body_metadata(
    ctx: KbContext, dataset: Dataset, tags: object, fields: object
) -> tuple[FileMetadata, dict[str, FieldType]] | None:
    """A JSON body's ``tags`` (a list) and ``fields`` (an object) checked before anything is kept
    (``POST /api/v1/datasets/{id}/content``); None when neither is given."""
    if tags is None and fields is None:
        return None
    return check_metadata(tags, fields, await ctx.catalog.field_types(dataset.id))


async def attach_metadata(
    ctx: KbContext,
    dataset: Dataset,
    entries: list[FileEntry],
    given: tuple[FileMetadata, dict[str, FieldType]] | None,
) -> list[FileEntry]:
    """Store an upload's metadata on each of its new files (their job copies it into the chunks)."""
    if given is None:
        return entries
    metadata, types = given
    return [await store_metadata(ctx, dataset, entry, metadata, types) for entry in entries]


def _form_tags(text: str | None) -> object:
    raw = (text or "").strip()
    if not raw:
        return None
    if raw.startswith("["):
        return _form_json(raw, "tags")
    return [t for t in (part.strip() for part in raw.split(",")) if t]


def _form_json(text: str | None, name: str) -> object:
    raw = (text or "").strip()
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        raise InvalidMetadata(f"{name}: not JSON") from None
