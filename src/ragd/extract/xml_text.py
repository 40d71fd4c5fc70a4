"""Generic XML: the text of its elements, one run per line, without element names.

kreuzberg 4.10.4 reads generic XML as every element's *name* on a line of its own
followed by its text (``catalog / spice / name / Saffron threads``): the names are
markup, and they drown short values.  This reader streams the document with the
standard library's expat-based ``iterparse`` (elements are cleared as they close,
so memory stays flat; expat refuses entity-expansion bombs and resolves no
external entities) and keeps every run of text, white space collapsed, one line
each.  JATS articles keep kreuzberg's structured reader.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from xml.etree import ElementTree

from ragd.errors import ExtractionError
from ragd.extract.documents import make_document
from ragd.types import Blob, Document


class XmlTextExtractor:
    """Implements :class:`ragd.extract.base.Extractor` for generic XML."""

    name = "xml"

    def extract(self, blob: Blob) -> Document:
        try:
            lines = list(_runs(blob.read()))
        except ElementTree.ParseError as exc:
            raise ExtractionError(
                f"{blob.name!r} is not well-formed XML: {exc}",
                hint="check the file; an HTML page should have an .html extension",
            ) from exc
        return make_document(
            "\n".join(lines), extractor=self.name, source=blob.name, mime_type="application/xml"
        )


def _runs(data: bytes) -> Iterator[str]:
    """Each element's text and the text between its children, as each element closes.

    Leaves come out in document order; an element with mixed content gives its own text
    after its children's (a data file has little of that).  A closed element's children are
    cleared, so a large file never holds more than its open path.
    """
    for _, element in ElementTree.iterparse(io.BytesIO(data), events=("end",)):
        for run in (element.text, *(child.tail for child in element)):
            if text := " ".join((run or "").split()):
                yield text
        for child in element:
            child.clear()
