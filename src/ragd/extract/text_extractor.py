"""Plain text, Markdown and source code, read as they are.

The only changes made to the file's text: the encoding is decoded (see
:mod:`ragd.extract.text_decoding`), double-encoded UTF-8 is repaired, and line
endings become ``\\n``.  Markdown stays Markdown, code stays code.
"""

from __future__ import annotations

import logging

from ragd.errors import ExtractionError
from ragd.extract.documents import make_document, normalise_newlines
from ragd.extract.mime import file_type_for_mime, file_type_for_name
from ragd.extract.text_decoding import decode_text
from ragd.types import Blob, Document

logger = logging.getLogger(__name__)

_BINARY_CONTROL_SHARE = 0.05


class TextExtractor:
    """Reads text files as text; refuses a "text" file whose bytes are binary."""

    name = "text"

    def extract(self, blob: Blob) -> Document:
        decoded = decode_text(blob.read())
        text = normalise_newlines(decoded.text)
        if _looks_binary(text):
            raise ExtractionError(
                f"{blob.name!r} is named like a text file but holds binary data",
                hint="check the file; rename it to its real type if ragd can read that type",
            )
        found = file_type_for_mime(blob.mime_type) or file_type_for_name(blob.name)
        logger.debug("decoded %r as %s", blob.name, decoded.encoding)
        return make_document(
            text,
            extractor=self.name,
            source=blob.name,
            mime_type=found.mime if found else "text/plain",
            meta={"encoding": decoded.encoding if decoded.encoding != "utf-8" else None},
        )


def _looks_binary(text: str) -> bool:
    sample = text[:65536]
    if not sample:
        return False
    control = sum(1 for ch in sample if ch < " " and ch not in "\t\n\f\v")
    return "\x00" in sample or control > len(sample) * _BINARY_CONTROL_SHARE
