"""HTML and EPUB chapters nested at any depth are extracted (kreuzberg alone drops text ~63 elements deep)."""

from __future__ import annotations

import io
import zipfile

import pytest

from ragd.extract.html_depth import MAX_DEPTH, limit_depth, limit_epub_depth
from ragd.extract.router import RoutingExtractor
from ragd.types import Blob
from tests.conftest import shared_path
from tests.extract.builders import build_epub


def _nested(depth: int, tag: str = "div", inner: str = "<p>deep saffron text</p>") -> bytes:
    return (
        f"<html><body>{f'<{tag}>' * depth}{inner}{f'</{tag}>' * depth}<p>shallow text</p></body></html>"
    ).encode()


@pytest.mark.parametrize("depth", [61, 62, 100, 2_000, 50_000])
@pytest.mark.parametrize("tag", ["div", "span", "section", "x-widget"])
def test_text_at_any_depth_is_extracted(extractor: RoutingExtractor, depth: int, tag: str) -> None:
    text = extractor.extract(Blob(name="deep.html", data=_nested(depth, tag))).text
    assert "deep saffron text" in text
    assert "shallow text" in text


def test_deep_blocks_stay_on_lines_of_their_own(extractor: RoutingExtractor) -> None:
    inner = "<h2>Deep title</h2><p>first block</p><div>second block</div><ul><li>one</li><li>two</li></ul>"
    text = extractor.extract(Blob(name="deep.html", data=_nested(500, inner=inner))).text
    lines = [line.strip("-* ") for line in text.splitlines() if line.strip()]
    assert lines[:5] == ["Deep title", "first block", "second block", "one", "two"]


def test_nested_tables_deeper_than_the_reader_goes(extractor: RoutingExtractor) -> None:
    html = _nested(80, "table", "<tr><td>cell in the deepest table</td></tr>").replace(
        b"<table>", b"<table><tr><td>"
    )
    assert "cell in the deepest table" in extractor.extract(Blob(name="t.html", data=html)).text


def test_a_document_within_the_limit_is_unchanged_byte_for_byte() -> None:
    html = _nested(MAX_DEPTH - 3)
    assert limit_depth(html) is html
    legacy = "<html><body><ul><li>caf\xe9<li>cr\xe8me</ul><p>one<p>two</body></html>".encode("cp1252")
    assert limit_depth(legacy) is legacy  # omitted end tags are not mistaken for depth


@pytest.mark.shared
def test_the_shared_html_pages_are_not_rewritten() -> None:
    for path in shared_path("documents").glob("*.htm*"):
        data = path.read_bytes()
        assert limit_depth(data) is data, path.name


def test_rewriting_keeps_every_byte_of_text_scripts_and_encoding() -> None:
    script = b"<script>if (a < b) { document.write('<div><div><div>'); }</script>"
    text = "Grüße – 東京 café".encode()
    html = _nested(100, inner="<p>TEXT</p>").replace(b"<body>", b"<body>" + script).replace(b"TEXT", text)
    flat = limit_depth(html, max_depth=10)
    assert script in flat  # opaque: the <div>s inside it are not tags
    assert text in flat  # UTF-8 bytes pass through untouched
    assert flat.count(b"<div>") == 8 + 3  # html, body and 8 divs make the limit; 3 in the script
    assert flat.count(b"</div>") == 8


@pytest.mark.parametrize("depth", [61, 300, 20_000])
def test_epub_chapters_at_any_depth_are_extracted(extractor: RoutingExtractor, depth: int) -> None:
    deep = f"{'<div>' * depth}<h2>Deep title</h2><p>deep saffron text</p>{'</div>' * depth}"
    book = build_epub([deep + "<p>shallow text</p>", "<p>second chapter text</p>"])
    text = extractor.extract(Blob(name="deep.epub", data=book)).text
    for words in ("Deep title", "deep saffron text", "shallow text", "second chapter text"):
        assert words in text


def test_an_epub_within_the_limit_is_passed_on_byte_for_byte() -> None:
    book = build_epub(["<div><p>plain chapter</p></div>"])
    assert limit_epub_depth(book) is book
    deep = build_epub([f"{'<div>' * 100}<p>x</p>{'</div>' * 100}"])
    rewritten = limit_epub_depth(deep)
    with zipfile.ZipFile(io.BytesIO(rewritten)) as package:
        first = package.infolist()[0]
        assert (first.filename, first.compress_type) == ("mimetype", zipfile.ZIP_STORED)
        chapter = package.read("OEBPS/chapter0.xhtml")
    assert b"<br/>" in chapter  # still XML
    assert b"<br>" not in chapter
    assert limit_epub_depth(b"not a zip") == b"not a zip"
