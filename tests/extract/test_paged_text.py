"""Page text cleaning and page spans (pure functions)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ragd.extract.paged_text import PAGE_SEPARATOR, clean_page_text, has_images, is_negligible, join_pages
from ragd.extract.pptx_notes import NOTES_LABEL, with_notes
from tests.extract.builders import blank_image, build_image_pdf, build_pdf


def test_pdfium_artefacts_are_cleaned() -> None:
    raw = "Con\x02sider this line   \r\n\r\n\r\n\r\nr\x01 bullet item\r\n\x06\t\x03\x0b\t\x0c\x0e\x0c\x0f\x07\r\nlast"
    assert clean_page_text(raw) == "Con-sider this line\n\nr bullet item\nlast"


def test_a_hyphen_marker_alone_is_kept_as_a_hyphen() -> None:
    assert clean_page_text("\x02 Security fundamentals") == "- Security fundamentals"


def test_spans_map_each_page_and_skip_empty_pages() -> None:
    text, spans = join_pages(["first page", "", "third page"])
    assert text == "first page" + PAGE_SEPARATOR + "third page"
    assert [(s.page, text[s.start : s.end].strip()) for s in spans] == [(0, "first page"), (2, "third page")]


@given(st.lists(st.text(st.characters(codec="utf-8"), max_size=30), max_size=12))
def test_spans_are_sorted_contiguous_and_cover_the_text(pages: list[str]) -> None:
    cleaned = [page.strip() for page in pages]
    text, spans = join_pages(cleaned)
    if not text:
        assert spans == ()
        return
    assert spans[0].start == 0
    assert spans[-1].end == len(text)
    for before, after in zip(spans, spans[1:], strict=False):
        assert before.end == after.start
        assert before.page < after.page
    for span in spans:
        assert text[span.start : span.end].removesuffix(PAGE_SEPARATOR) == cleaned[span.page]


def test_negligible_text_is_measured_per_page() -> None:
    assert is_negligible("", 1)
    assert is_negligible("1\n\n2\n\n3", 3)
    assert not is_negligible("Hello world", 1)
    assert is_negligible("Hello world", 5)


def test_scans_have_images_and_text_pdfs_do_not() -> None:
    assert has_images(build_image_pdf([blank_image()]))
    assert not has_images(build_pdf(["just text"]))


def test_notes_follow_their_slide() -> None:
    merged = with_notes(["## One\n\nbody", "## Two", ""], ["", "say this", "only notes"])
    assert merged == ["## One\n\nbody", f"## Two\n\n{NOTES_LABEL} say this", f"{NOTES_LABEL} only notes"]
