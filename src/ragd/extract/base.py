"""The extraction port: bytes of one file in, a :class:`Document` out."""

from __future__ import annotations

from typing import Protocol

from ragd.types import Blob, Document


class Extractor(Protocol):
    """Turns a file into text.  Synchronous and CPU-bound: callers run it off the event loop.

    Raises :class:`ragd.errors.UnsupportedType` for a type it cannot read and an
    :class:`ragd.errors.ExtractionError` subclass for a corrupt, encrypted, empty
    or scanned-without-OCR file.  Never returns an empty ``Document.text``.
    """

    name: str

    def extract(self, blob: Blob) -> Document: ...
