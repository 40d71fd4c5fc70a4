"""Pictures' descriptions put next to their page's text: spans, boxes and regions stay true."""

from __future__ import annotations

from ragd.extract.paged_text import join_pages
from ragd.types import Document, PageSpan, Region, TextBox
from ragd.vision.splice import Section, insert_sections


def figure(page: int | None, text: str) -> Section:
    return Section(page, text, "vision-llm", "figure")


def pages_of(document: Document) -> list[tuple[int, str]]:
    return [(span.page, document.text[span.start : span.end]) for span in document.pages]


def test_a_section_follows_its_page_s_text_and_its_page_grows() -> None:
    text, spans = join_pages(["Page zero.", "Page one."])
    boxes = (TextBox(1, text.index("one"), text.index("one") + 3, 0.1, 0.1, 0.2, 0.2),)
    document = Document(text, "kreuzberg", pages=spans, boxes=boxes)
    done = insert_sections(document, [figure(0, "A chart."), figure(1, "A map.")])
    assert done.text == "Page zero.\n\nA chart.\n\nPage one.\n\nA map."
    assert pages_of(done) == [(0, "Page zero.\n\nA chart.\n\n"), (1, "Page one.\n\nA map.")]
    [box] = done.boxes
    assert done.text[box.start : box.end] == "one"
    assert [(r.extractor, r.profile, done.text[r.start : r.end]) for r in done.regions] == [
        ("vision-llm", "figure", "A chart."),
        ("vision-llm", "figure", "A map."),
    ]


def test_a_page_without_text_gets_a_span_of_its_own_between_its_neighbours() -> None:
    text, spans = join_pages(["Page zero.", "", "Page two."])  # page 1 holds only a picture
    done = insert_sections(
        Document(text, "kreuzberg", pages=spans),
        [figure(1, "Picture one."), figure(1, "Picture two."), figure(3, "A last picture.")],
    )
    assert pages_of(done) == [
        (0, "Page zero.\n\n"),
        (1, "Picture one.\n\nPicture two.\n\n"),
        (2, "Page two."),
        (3, "A last picture."),
    ]
    assert done.page_at(done.text.index("Picture two")) == 1


def test_earlier_regions_move_and_an_unpaged_document_gets_them_at_the_end() -> None:
    document = Document("Intro.\n\nBody.", "kreuzberg", regions=(Region(8, 13, "other", None),))
    done = insert_sections(document, [figure(None, "  A figure.  "), figure(4, "")])
    assert done.text == "Intro.\n\nBody.\n\nA figure."
    assert [done.text[r.start : r.end] for r in done.regions] == ["Body.", "A figure."]
    assert done.pages == ()
    assert insert_sections(document, []) is document


def test_spans_stay_ordered_and_cover_the_text() -> None:
    text, spans = join_pages(["a", "b", "c"])
    done = insert_sections(Document(text, "kreuzberg", pages=spans), [figure(2, "C."), figure(0, "A.")])
    assert [span.page for span in done.pages] == [0, 1, 2]
    assert done.pages[0].start == 0
    assert done.pages[-1].end == len(done.text)
    assert all(a.end == b.start for a, b in zip(done.pages, done.pages[1:], strict=False))
    assert done.pages == (PageSpan(0, 0, 7), PageSpan(1, 7, 10), PageSpan(2, 10, 15))
