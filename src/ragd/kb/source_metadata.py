"""What a source says about the files it brings in: their ``source_label`` and metadata
(docs/knowledge-bases.md, "Metadata from sources").

    folder  tags: the file's folders under the source's path; string field ``path``: its
            path relative to it
    s3      string fields: the object's user metadata (``x-amz-meta-<name>``); tags: its object
            tags as ``key=value``
    web     tags: ``<meta name="keywords">``; string fields ``description``, ``author``; date
            field ``published`` (``article:published_time``, ``<meta name="date">``, ``Last-Modified``)

Each value is checked against the metadata rules (:mod:`ragd.kb.file_metadata`) on its own; one
that breaks them (a name, a length, a field another type in this dataset, too many) is dropped
with a DEBUG log: a source never fails a file for its metadata.  Each time a sync reads an item
(new, or its content changed) the source's values are written again over the file's: a field
the source gives replaces the same-named one, tags it gives are added, and what the user set
under other names (``PATCH``) is kept.  ragd does not record which key came from where, so a
tag or field the source stops giving stays until the user removes it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from urllib.parse import urlsplit

from ragd.errors import InvalidMetadata
from ragd.kb.context import KbContext
from ragd.kb.file_metadata import MAX_FIELDS, MAX_TAGS, check_metadata, store_metadata
from ragd.kb_types import Dataset, FieldType, FieldValue, FileEntry, SourceKind, SourceSpec
from ragd.sources.base import ItemMetadata

log = logging.getLogger(__name__)


def source_label(spec: SourceSpec) -> str:
    """The source's own description: ``folder:/srv/docs``, ``s3://bucket/prefix``, or the start URL
    (any ``user:password@`` removed)."""
    if spec.kind is SourceKind.FOLDER:
        return f"folder:{spec.config.get('path', '')}"
    if spec.kind is SourceKind.S3:
        return f"s3://{spec.config.get('bucket', '')}/{spec.config.get('prefix', '')}"
    parts = urlsplit(str(spec.config.get("url", "")))
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


async def apply_source_metadata(
    ctx: KbContext, dataset: Dataset, entry: FileEntry, given: ItemMetadata
) -> FileEntry:
    """Merge what the source gives into ``entry``'s metadata (``entry`` is in the catalog) and
    store it when it changed; never raises for the metadata itself."""
    declared = await ctx.catalog.field_types(dataset.id)
    where = f"{entry.item_key or entry.name!r}"
    tags = [t for t in given.tags if _tag_fits(where, t)]
    fields: dict[str, FieldValue] = {}
    for kind, values in ((FieldType.STRING, given.strings), (FieldType.DATE, given.dates)):
        for name, raw in values.items():
            checked = _checked(where, name, raw, {name: declared.get(name, kind)})
            if checked is not None:
                fields[name] = checked
    current = entry.metadata
    merged_tags = list(dict.fromkeys([*current.tags, *tags]))
    if len(merged_tags) > MAX_TAGS:
        log.debug(
            "source metadata of %s: %d tags dropped (over %d)", where, len(merged_tags) - MAX_TAGS, MAX_TAGS
        )
        merged_tags = merged_tags[:MAX_TAGS]
    merged_fields: dict[str, FieldValue] = dict(current.fields)
    for name, value in fields.items():
        if name in merged_fields or len(merged_fields) < MAX_FIELDS:
            merged_fields[name] = value
        else:
            log.debug("source metadata of %s: field %r dropped (over %d fields)", where, name, MAX_FIELDS)
    if tuple(merged_tags) == current.tags and merged_fields == dict(current.fields):
        return entry
    forced = {
        name: declared.get(name, FieldType.DATE if name in given.dates else FieldType.STRING)
        for name in fields
    }
    try:
        metadata, types = check_metadata(merged_tags, merged_fields, {**declared, **forced})
        return await store_metadata(ctx, dataset, entry, metadata, types)
    except InvalidMetadata as exc:  # a field another file recorded with another type meanwhile
        log.debug("source metadata of %s dropped: %s", where, exc)
        return entry


def _checked(where: str, name: str, value: str, declared: Mapping[str, FieldType]) -> FieldValue | None:
    try:
        metadata, _ = check_metadata(None, {name: value}, declared)
    except InvalidMetadata as exc:
        log.debug("source metadata of %s: field %r dropped: %s", where, name, exc)
        return None
    return metadata.fields[name]


def _tag_fits(where: str, tag: str) -> bool:
    try:
        check_metadata([tag], None, {})
    except InvalidMetadata as exc:
        log.debug("source metadata of %s: tag dropped: %s", where, exc)
        return False
    return True
