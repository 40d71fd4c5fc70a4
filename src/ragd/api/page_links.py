"""Where a chunk's page image is: the ``page_image`` link of hits, chunks and chat sources.

    /api/v1/datasets/{dataset_id}/files/{file_id}/pages/{n}?chunk={chunk_id}

``n`` is 1-based (a chunk's ``meta.page`` is 0-based).  A chunk gets a link when it has a page and
belongs to a dataset's file whose pages can be drawn: a PDF, or an Office file (by its name) when
an Office-to-PDF converter is configured (``RAGD_EXTRACT__OFFICE_CONVERTER``).  The link is
relative; the chat proxy's ``url_citation`` makes it absolute (``RAGD_PAGES__PUBLIC_URL``, else
the request's own address).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote

from ragd.extract.mime import FileKind, file_type_for_name
from ragd.extract.office_pdf import OFFICE_KINDS, converter
from ragd.settings import ExtractSettings
from ragd.types import Citation


@dataclass(frozen=True, slots=True)
class PageLinks:
    """Builds ``page_image`` links; ``office``: Office files can be drawn (a converter exists)."""

    office: bool = False

    @classmethod
    def of(cls, extract: ExtractSettings) -> PageLinks:
        return cls(office=converter(extract) is not None)

    def link(
        self,
        dataset_id: str | None,
        file_id: str | None,
        name: str | None,
        page: int | None,
        chunk_id: str | None,
    ) -> str | None:
        """The page image of a chunk (``page`` 0-based), or None when it has none to show."""
        if dataset_id is None or not file_id or page is None or page < 0 or not self._drawable(name or ""):
            return None
        path = (
            f"/api/v1/datasets/{quote(dataset_id, safe='')}/files/{quote(file_id, safe='')}/pages/{page + 1}"
        )
        return f"{path}?chunk={quote(chunk_id, safe='')}" if chunk_id else path

    def _drawable(self, name: str) -> bool:
        found = file_type_for_name(name)
        if found is None:
            return False
        return found.kind is FileKind.PDF or (self.office and found.kind in OFFICE_KINDS)


@dataclass(frozen=True, slots=True)
class CitationPages:
    """The page images of a chat answer's sources: all from one collection, the dataset's
    ``dataset_id`` (None: a raw collection, no page images); ``base``: ragd's public address."""

    links: PageLinks
    dataset_id: str | None = None
    base: str = ""

    def images(self, citations: Sequence[Citation]) -> dict[int, str]:
        """Each source's page image link (relative), by source number, where it has one."""
        found = {
            c.number: self.links.link(self.dataset_id, c.file_id, c.name, c.page, c.chunk_id)
            for c in citations
        }
        return {number: link for number, link in found.items() if link is not None}

    def urls(self, citations: Sequence[Citation]) -> dict[int, str]:
        """The same links made absolute with ``base``."""
        return {number: f"{self.base.rstrip('/')}{link}" for number, link in self.images(citations).items()}
