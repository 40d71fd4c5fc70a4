"""Generic XML: element text without element names; malformed files and entity bombs fail with a code."""

from __future__ import annotations

import pytest

from ragd.errors import ExtractionError
from ragd.extract.router import RoutingExtractor
from ragd.types import Blob

BOMB = (
    b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
    + b"".join(f'<!ENTITY {n} "{f"&{p};" * 10}">'.encode() for p, n in zip("abcdefg", "bcdefgh", strict=True))
    + b"]><l>&h;</l>"
)


def test_element_text_without_element_names(extractor: RoutingExtractor) -> None:
    xml = b'<?xml version="1.0"?><order id="7"><line sku="A"><qty>3</qty><note>Fragile: saffron</note></line></order>'
    document = extractor.extract(Blob(name="order.xml", data=xml))
    assert document.extractor == "xml"
    assert document.text.splitlines() == ["3", "Fragile: saffron"]


def test_jats_keeps_its_structured_reader(extractor: RoutingExtractor) -> None:
    jats = b'<article dtd-version="1.2"><front><article-meta><title-group><article-title>T</article-title>'
    jats += b"</title-group></article-meta></front><body><sec><title>Results</title><p>Bound.</p></sec></body></article>"
    assert extractor.extract(Blob(name="paper.xml", data=jats)).extractor == "kreuzberg"


@pytest.mark.parametrize(
    ("data", "why"), [(b"<a><b>unclosed</a>", "mismatched tag"), (BOMB, "amplification")]
)
def test_malformed_xml_and_entity_bombs_fail_with_a_code(
    extractor: RoutingExtractor, data: bytes, why: str
) -> None:
    with pytest.raises(ExtractionError, match=why) as caught:
        extractor.extract(Blob(name="bad.xml", data=data))
    assert caught.value.code == "EXTRACTION_FAILED"
