"""The ``auto`` router's signals on real .docx files, and its decisions as a table.

The files are written by tests/support/vision_docs.py (a LibreOffice-drawn flowchart of text
boxes and connectors, a raster figure, prose) or here from their XML for one feature at a time.
"""

from __future__ import annotations

import io
import zipfile

import pytest

from ragd.errors import ExtractionError, PayloadTooLarge
from ragd.vision.detect import BodyImage, DocxSignals, Route, RouterThresholds, docx_signals, route_docx
from tests.support.vision_docs import DIAGRAM_LABELS, diagram_docx, docx_package, plain_docx, raster_docx

ROUTE = {"diagram_engine": "hybrid-diagram", "default_engine": "kreuzberg"}
W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _route(signals: DocxSignals, **thresholds: object) -> Route:
    return route_docx(signals, RouterThresholds(**thresholds), **ROUTE)  # type: ignore[arg-type]


def _run(text: str) -> str:
    return f'<w:r><w:t xml:space="preserve">{text}</w:t></w:r>'


# --- real files -----------------------------------------------------------------------------
def test_a_flowchart_of_text_boxes_and_connectors_is_a_drawing() -> None:
    doc = diagram_docx()
    signals = docx_signals(doc.data)
    # every shape once: Word's VML fallback of each (mc:Fallback) is not counted again
    assert (signals.textboxes, signals.connectors, signals.shapes) == (12, 11, 23)
    assert signals.drawing_words == doc.drawing_words == 24
    assert signals.body_words == len(doc.title.split())
    route = _route(signals)
    assert route == Route(
        "hybrid-diagram", "drawing", {"shapes": 23, "textboxes": 12, "body_words": 2, "ratio": 8.0}
    )


def test_many_text_boxes_are_the_seeds_textbox_signal_with_the_contracts_keys() -> None:
    labels = tuple(f"Step {i}" for i in range(24))
    signals = docx_signals(diagram_docx(labels, title="Flow").data)
    route = _route(signals)
    assert route.engine == "hybrid-diagram"
    assert route.signal == "textbox"
    assert route.signals == {"textboxes": 24, "body_words": 1, "ratio": 24.0}  # 48 words / (1 + 1)


def test_a_large_body_picture_is_a_raster_figure_for_the_vision_engine() -> None:
    doc = raster_docx()
    signals = docx_signals(doc.data)
    assert (signals.image_count, signals.textboxes) == (1, 0)
    assert signals.images[0].rel_id == "rIdImg1"
    assert (signals.images[0].cx, signals.images[0].cy) == doc.extent_emu
    assert signals.largest_image_share == pytest.approx(doc.page_share)
    assert signals.body_words == sum(len(p.split()) for p in doc.paragraphs)
    route = _route(signals)
    assert route == Route(
        "vision-llm",
        "raster",
        {"images": 1, "image_share": round(doc.page_share, 3), "body_words": signals.body_words},
    )


def test_a_small_picture_is_no_figure() -> None:
    doc = raster_docx(width_in=1.0)  # a 1 x 0.6 in picture: ~1 % of the page
    route = _route(docx_signals(doc.data))
    assert route.signal == "default"
    assert route.engine == "kreuzberg"
    assert 0 < route.signals["image_share"] < 0.05


def test_prose_goes_to_the_default_engine_with_what_was_measured() -> None:
    doc = plain_docx()
    route = _route(docx_signals(doc.data))
    words = sum(len(p.split()) for p in doc.paragraphs)
    assert route == Route(
        "kreuzberg",
        "default",
        {"textboxes": 0, "shapes": 0, "body_words": words, "ratio": 0.0, "images": 0, "image_share": 0.0},
    )


# --- the decision table ---------------------------------------------------------------------
def _signals(**counts: object) -> DocxSignals:
    return DocxSignals(**counts)  # type: ignore[arg-type]


def _image(share: float) -> BodyImage:
    return BodyImage("rId1", 1, 1, share)


@pytest.mark.parametrize(
    ("signals", "thresholds", "expected"),
    [
        (_signals(textboxes=20, shapes=20, drawing_words=40, body_words=9), {}, "textbox"),
        (_signals(textboxes=19, shapes=19, drawing_words=40, body_words=9), {}, "default"),
        (_signals(textboxes=19, shapes=19, drawing_words=40, body_words=9), {"min_textboxes": 19}, "textbox"),
        # ratio 40 / (20 + 1) = 1.9 < 2
        (_signals(textboxes=30, shapes=30, drawing_words=40, body_words=20), {}, "default"),
        (
            _signals(textboxes=30, shapes=30, drawing_words=40, body_words=20),
            {"min_drawing_ratio": 1.9},
            "textbox",
        ),
        # few text boxes, many connectors: the drawing signal
        (_signals(textboxes=8, shapes=20, connectors=12, drawing_words=16, body_words=3), {}, "drawing"),
        # shapes without words are no diagram of labels
        (_signals(textboxes=0, shapes=50, drawing_words=0, body_words=0), {}, "default"),
        (_signals(textboxes=0, shapes=0), {"min_textboxes": 0, "min_drawing_ratio": 0}, "default"),
        (_signals(image_count=1, images=(_image(0.05),)), {}, "raster"),
        (_signals(image_count=1, images=(_image(0.049),)), {}, "default"),
        (_signals(image_count=1, images=(_image(0.3),)), {"min_image_area": 0.5}, "default"),
        # the words-per-image guard: a long report with one large photo
        (
            _signals(image_count=1, images=(_image(0.3),), body_words=5000),
            {"max_words_per_image": 1500},
            "default",
        ),
        (
            _signals(image_count=2, images=(_image(0.3), _image(0.2)), body_words=2000),
            {"max_words_per_image": 1500},
            "raster",
        ),
        (_signals(image_count=1, images=(_image(0.3),), body_words=5000), {}, "raster"),
        # a diagram wins over its picture
        (
            _signals(textboxes=25, shapes=25, drawing_words=60, image_count=1, images=(_image(0.9),)),
            {},
            "textbox",
        ),
    ],
)
def test_route_table(signals: DocxSignals, thresholds: dict[str, object], expected: str) -> None:
    route = _route(signals, **thresholds)
    assert route.signal == expected
    engine = {"textbox": "hybrid-diagram", "drawing": "hybrid-diagram", "raster": "vision-llm"}
    assert route.engine == engine.get(expected, "kreuzberg")


def test_the_guard_shows_its_measure_and_a_capped_count_says_so() -> None:
    signals = _signals(image_count=1, images=(_image(0.3),), body_words=300, capped=True)
    route = _route(signals, max_words_per_image=1500)
    assert route.signals == {
        "images": 1,
        "image_share": 0.3,
        "body_words": 300,
        "words_per_image": 300.0,
        "capped": 1,
    }


# --- reading the XML ------------------------------------------------------------------------
def test_words_split_across_runs_count_once_and_breaks_separate_them() -> None:
    body = f"<w:p>{_run('Hel')}{_run('lo wor')}{_run('ld')}</w:p>"  # "Hello world"
    body += f"<w:p>{_run('one')}<w:r><w:tab/></w:r>{_run('two')}<w:r><w:br/></w:r>{_run('three')}</w:p>"
    body += f"<w:p>{_run('four')}</w:p><w:p>{_run('five')}</w:p>"  # a paragraph ends a word
    assert docx_signals(docx_package(body)).body_words == 7


def test_legacy_vml_text_boxes_lines_and_pictures_count() -> None:
    shapes = (
        '<w:r><w:pict><v:shape style="width:100pt;height:40pt"><v:textbox><w:txbxContent>'
        f"<w:p>{_run('Approve request')}</w:p></w:txbxContent></v:textbox></v:shape></w:pict></w:r>"
        '<w:r><w:pict><v:line from="0,0" to="10pt,10pt"/></w:pict></w:r>'
        '<w:r><w:pict><v:shape o:connectortype="straight" style="width:1pt;height:30pt"/></w:pict></w:r>'
        '<w:r><w:pict><v:rect style="width:1in;height:1pt" o:hr="t"/></w:pict></w:r>'  # a rule: no shape
        '<w:r><w:pict><v:group><v:shape style="width:6in;height:4in"><v:imagedata r:id="rId7"/></v:shape>'
        "</v:group></w:pict></w:r>"
    )
    signals = docx_signals(docx_package(f"<w:p>{shapes}</w:p>"))
    assert (signals.textboxes, signals.shapes, signals.connectors, signals.groups) == (1, 3, 2, 1)
    assert (signals.drawing_words, signals.body_words) == (2, 0)
    assert signals.image_count == 1
    image = signals.images[0]
    assert (image.rel_id, image.cx, image.cy) == ("rId7", 6 * 914_400, 4 * 914_400)
    assert image.page_share == pytest.approx(24 / (6.5 * 9))


def test_a_fallback_alone_counts_nothing() -> None:
    fallback = (
        '<w:r><mc:AlternateContent><mc:Choice Requires="wps"/><mc:Fallback><w:pict><v:shape><v:textbox>'
        f"<w:txbxContent><w:p>{_run('hidden words')}</w:p></w:txbxContent></v:textbox></v:shape>"
        "</w:pict></mc:Fallback></mc:AlternateContent></w:r>"
    )
    signals = docx_signals(docx_package(f"<w:p>{fallback}{_run('seen')}</w:p>"))
    assert (signals.textboxes, signals.shapes, signals.drawing_words, signals.body_words) == (0, 0, 0, 1)


def _picture(cx: int, cy: int) -> str:
    return (
        f'<w:r><w:drawing><wp:inline><wp:extent cx="{cx}" cy="{cy}"/><a:graphic><a:graphicData>'
        '<pic:pic><pic:blipFill><a:blip r:embed="rId1"/></pic:blipFill></pic:pic>'
        "</a:graphicData></a:graphic></wp:inline></w:drawing></w:r>"
    )


def test_a_pictures_share_is_of_its_own_sections_usable_page() -> None:
    landscape = (
        '<w:sectPr><w:pgSz w:w="16838" w:h="11906" w:orient="landscape"/>'
        '<w:pgMar w:top="-720" w:bottom="720" w:left="1000" w:right="838" w:gutter="0"/></w:sectPr>'
    )
    inch = 914_400
    # section 1 (A4 landscape, its w:sectPr in the paragraph holding the picture), then the
    # body's Letter page with 1-inch margins
    body = (
        f"<w:p><w:pPr>{landscape}</w:pPr>{_picture(5 * inch, 3 * inch)}</w:p>"
        f"<w:p>{_picture(5 * inch, 3 * inch)}</w:p>"
    )
    signals = docx_signals(docx_package(body))
    usable_a4 = (16838 - 1838) * (11906 - 1440) * 635 * 635
    shares = [image.page_share for image in signals.images]
    assert shares == [pytest.approx(15 * inch * inch / usable_a4), pytest.approx(15 / (6.5 * 9))]
    assert (signals.page_width_emu, signals.page_height_emu) == (int(6.5 * inch), 9 * inch)


def test_a_picture_larger_than_the_page_has_a_share_of_one() -> None:
    signals = docx_signals(docx_package(f"<w:p>{_picture(10**9, 10**9)}</w:p>"))
    assert signals.largest_image_share == 1.0


# --- hostile and broken packages ------------------------------------------------------------
def _zip(parts: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as package:
        for name, body in parts.items():
            package.writestr(name, body)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "data",
    [
        b"PK\x03\x04 not really a zip",
        _zip({"word/other.xml": b"<x/>"}),
        _zip({"word/document.xml": f'<w:document xmlns:w="{W_NS}"><w:body><w:p>'.encode()}),
        _zip({"word/document.xml": b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaa">]><d>&a;</d>'}),
    ],
    ids=["not a zip", "no document part", "truncated XML", "a DTD"],
)
def test_a_broken_package_is_the_text_extractors_corrupt_file_error(data: bytes) -> None:
    with pytest.raises(ExtractionError) as caught:
        docx_signals(data, name="broken.docx")
    assert caught.value.code == "EXTRACTION_FAILED"
    assert "broken.docx" in caught.value.message
    assert caught.value.hint


def test_the_unpacked_size_limit_is_the_routers() -> None:
    data = diagram_docx().data
    with pytest.raises(PayloadTooLarge) as caught:
        docx_signals(data, name="d.docx", max_unpacked_bytes=1000)
    assert caught.value.code == "FILE_TOO_LARGE"
    assert docx_signals(data, max_unpacked_bytes=10**8).textboxes == len(DIAGRAM_LABELS)


def test_counting_stops_at_its_caps_and_says_so() -> None:
    labels = tuple(f"Box {i}" for i in range(100))
    data = diagram_docx(labels).data
    capped = docx_signals(data, max_shapes=40)
    assert capped.capped
    assert capped.shapes + capped.groups + capped.image_count == 40
    assert _route(capped).signals["capped"] == 1
    assert docx_signals(data, max_xml_bytes=20_000).capped
    assert not docx_signals(data).capped
