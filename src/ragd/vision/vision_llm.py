"""The ``vision-llm`` engine: every page as a picture, read by the multimodal model.

PDF pages are rendered at ``RAGD_VISION__DPI``, Office files go through their PDF, image files are
sent frame by frame (:mod:`ragd.vision.pages`); each page is one call with the engine's profile
(``RAGD_VISION__PROFILE``, or the one asked for: :meth:`VisionLlmExtractor.with_profile`), and its
answer is that page's section of the document (one page span each, 0-based).  A file of more than
``RAGD_VISION__MAX_PAGES`` pages is read to that page and says so in ``extraction_warnings``.
Every chunk records ``meta.extractor = "vision-llm"`` and ``meta.vision_profile``.
"""

from __future__ import annotations

import logging

from ragd.errors import EmptyDocument, UnsupportedType
from ragd.extract.documents import make_document
from ragd.extract.mime import file_type_for_mime, file_type_for_name
from ragd.extract.paged_text import join_pages
from ragd.types import Blob, Document
from ragd.vision.kit import VisionKit
from ragd.vision.pages import file_pages
from ragd.vision.profiles import Profile, profile

logger = logging.getLogger(__name__)

NAME = "vision-llm"


class VisionLlmExtractor:
    """Implements :class:`ragd.extract.base.Extractor` for PDF, Office and image files."""

    name = NAME

    def __init__(self, kit: VisionKit, profile_name: str | None = None) -> None:
        self._kit = kit
        self._profile: Profile = profile(profile_name or kit.settings.profile)

    @property
    def profile(self) -> str:
        return self._profile.name

    def with_profile(self, name: str) -> VisionLlmExtractor:
        """The same engine asking with profile ``name``."""
        return VisionLlmExtractor(self._kit, name)

    def extract(self, blob: Blob) -> Document:
        file_type = file_type_for_mime(blob.mime_type) or file_type_for_name(blob.name)
        if file_type is None:
            raise UnsupportedType(f"cannot tell what {blob.name!r} is", hint="give it an extension")
        deadline = self._kit.deadline(blob.name)
        pages = file_pages(self._kit, file_type.kind, blob.read(), blob.name, deadline)
        texts = [self._kit.client.ask(image, self._profile, deadline=deadline) for image in pages.images]
        warnings = []
        if pages.total > len(texts):
            warnings.append(
                f"read the first {len(texts)} of {pages.total} pages (RAGD_VISION__MAX_PAGES): "
                "the others are not indexed"
            )
            logger.warning("%r: %s", blob.name, warnings[-1])
        text, spans = join_pages(texts)
        if not text.strip():
            raise EmptyDocument(
                f"the vision model found nothing to say on the pages of {blob.name!r}",
                hint="the pages may be blank; try another profile (POST /api/v1/extract with profile)",
            )
        return make_document(
            text,
            extractor=NAME,
            source=blob.name,
            mime_type=file_type.mime,
            pages=spans,
            meta={
                "vision_profile": self._profile.name,
                "page_count": pages.total,
                "extraction_warnings": warnings,
            },
        )
