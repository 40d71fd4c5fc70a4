"""The source port: what a folder, a website or an S3 prefix holds right now.

A sync compares a source's current items with its ledger (one record per
item: key, fingerprint, status) and propagates creations, changes and
deletions the same way whatever the source.  Readers only list and load;
they never touch the store or the ledger.

    scan()  -> every item present now, each with a fingerprint that changes
               when its content does (content hash, S3 ETag), or an
               ItemFailure for an item (or a whole prefix) that could not be read
    load(item) -> the item's content, a Blob (bytes to extract) or a
               Document (text already extracted, e.g. a crawled page)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ragd.types import Blob, Document


@dataclass(frozen=True, slots=True)
class ItemMetadata:
    """What a source says about an item, as raw as it came: the sync checks each value against the
    metadata rules (``ragd.kb.file_metadata``) and drops, with a DEBUG log, what breaks them."""

    tags: tuple[str, ...] = ()
    #: string fields (a folder's ``path``, S3 user metadata, a page's ``description``/``author``)
    strings: Mapping[str, str] = field(default_factory=dict)
    #: date fields as canonical UTC ISO-8601 strings (a page's ``published``)
    dates: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SourceItem:
    """One item present at a source now."""

    #: stable identity within the source: a relative POSIX path, a canonical URL, an S3 key
    key: str
    #: changes whenever the content changes: sha256 of the bytes/text, or an S3 ETag
    fingerprint: str
    #: shown to users and stored as the file's name (file name, page title or URL)
    name: str
    size: int = 0
    #: content already in hand (a crawled page's text), so load() need not fetch it again
    document: Document | None = None
    #: metadata known when the item was listed (a folder's path, a crawled page's meta tags)
    metadata: ItemMetadata | None = None


@dataclass(frozen=True, slots=True)
class ItemFailure:
    """An item the source has but could not read (HTTP 500 page, unreadable file)."""

    key: str
    code: str
    message: str
    #: keys that start with this are unknown in this scan, not gone (what the failed read would
    #: have listed: a folder's files, the pages a page links to): a sync keeps what it holds there
    hides: str | None = None
    #: the failure is of a listing only (a subfolder, keyed ``"reports/"``), not of an item
    listing: bool = False


class SourceReader(Protocol):
    """Errors: scan() raises :class:`ragd.errors.RagError` only when the whole source is unusable
    (missing folder, unreachable start URL, unknown bucket); per-item problems are ItemFailures."""

    def scan(self) -> AsyncIterator[SourceItem | ItemFailure]: ...

    async def load(self, item: SourceItem) -> Blob | Document:
        """The item's content; raises :class:`ragd.errors.RagError` (e.g. NotFound when it vanished)."""
        ...

    async def release(self, blob: Blob) -> None:
        """Done with a Blob that ``load`` returned (a downloaded temp file is deleted)."""
        ...

    async def item_metadata(self, item: SourceItem) -> ItemMetadata:
        """What the source says of ``item`` (asked after ``load``: an S3 object's user metadata
        came with its download); never raises: what cannot be read is left out, with a warning."""
        ...
