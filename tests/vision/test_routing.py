"""The ``auto`` router with a vision endpoint, on real files made for it (tests/support/vision_docs):
which engine reads what, what reaches the model, failing open and closed, and nothing changed
without an endpoint."""

from __future__ import annotations

import hashlib
import itertools
import shutil

import pytest

from ragd.errors import VisionOutputTooLong, VisionUnavailable
from ragd.extract.office_pdf import to_pdf
from ragd.extract.pdf_pages import render_pages
from ragd.extract.router import RoutingExtractor, build_extractor
from ragd.settings import ExtractSettings, VisionSettings
from ragd.types import Blob, Document
from ragd.vision.kit import VisionKit, build_vision
from tests.extract.builders import build_pdf
from tests.support.vision_docs import chart_pdf, diagram_docx, picture_pptx, plain_docx, raster_docx
from tests.support.vision_endpoint import VisionCall, VisionEndpoint
from tests.vision.conftest import MakeKit

DPI = 60  # small pages: the rules read hashes, not words


def needs_libreoffice() -> None:
    if shutil.which("soffice") is None:
        pytest.skip("needs LibreOffice (apt-get install libreoffice-writer): soffice is not on PATH")


def router(kit: VisionKit) -> RoutingExtractor:
    return build_extractor(kit.extract, vision=kit)


def read(extractor: RoutingExtractor, name: str, data: bytes) -> Document:
    return extractor.extract(Blob(name=name, data=data))


def graph(call: VisionCall) -> str | None:
    """The topology profile's answer: a graph of the labels the model was given."""
    if call.profile != "diagram-topology":
        return None
    labels = call.texts[1].split("\n\n", 1)[1].splitlines()
    edges = "\n".join(
        f'  n{i}["{a}"] --> n{i + 1}["{b}"]' for i, (a, b) in enumerate(itertools.pairwise(labels))
    )
    return f"Here is the graph:\n```mermaid\nflowchart TD\n{edges}\n```"


def test_a_diagram_docx_reads_its_labels_verbatim_and_the_graph_the_model_draws(
    vision_endpoint: VisionEndpoint, make_kit: MakeKit
) -> None:
    needs_libreoffice()
    diagram = diagram_docx()
    vision_endpoint.rule(graph)
    kit = make_kit(dpi=DPI)
    document = read(router(kit), "fulfilment.docx", diagram.data)
    assert document.extractor == "hybrid-diagram"
    assert document.meta["vision_profile"] == "diagram-topology"
    route = document.meta["extraction_route"]
    assert route["signal"] in ("textbox", "drawing")
    assert route["body_words"] < 5
    native, _, section = document.text.partition("\n\n## Diagram (Mermaid)\n\n")
    assert native.splitlines() == [diagram.title, *diagram.labels]  # every label, exactly
    assert section.startswith("```mermaid\nflowchart TD\n")
    assert section.endswith("```")
    assert 'n1["Receive order"] --> n2["Check stock"]' in section
    assert "Here is the graph" not in document.text  # only the fenced graph is kept
    [call] = vision_endpoint.calls
    assert call.profile == "diagram-topology"
    for label in diagram.labels:
        assert label in call.texts[1]
    pdf = to_pdf(diagram.data, "fulfilment.docx", kit.extract)
    [page] = render_pages(pdf, dpi=DPI, max_pages=1)
    assert call.image.sha256 == hashlib.sha256(page.png()).hexdigest()  # the rendered page itself


@pytest.mark.slow  # LibreOffice renders the page (~1 s)
def test_a_raster_figure_docx_goes_to_vision_llm(vision_endpoint: VisionEndpoint, make_kit: MakeKit) -> None:
    needs_libreoffice()
    figure = raster_docx()
    document = read(router(make_kit(dpi=DPI)), "repairs.docx", figure.data)
    assert document.extractor == "vision-llm"
    assert document.meta["vision_profile"] == "general"
    assert document.meta["extraction_route"]["signal"] == "raster"
    assert [call.profile for call in vision_endpoint.calls] == ["general"]
    assert document.text.startswith("Picture ")


def test_a_plain_docx_stays_with_the_text_reader(vision_endpoint: VisionEndpoint, make_kit: MakeKit) -> None:
    plain = plain_docx()
    document = read(router(make_kit()), "notes.docx", plain.data)
    assert document.extractor == "kreuzberg"
    assert document.meta["extraction_route"]["signal"] == "default"
    assert "vision_profile" not in document.meta
    assert plain.paragraphs[1] in document.text
    assert vision_endpoint.calls == []


def test_a_pdf_s_chart_is_described_next_to_its_page_s_exact_text(
    vision_endpoint: VisionEndpoint, make_kit: MakeKit
) -> None:
    chart = chart_pdf()
    vision_endpoint.answer(chart.chart.sha256, "A bar chart: NORTH 42, SOUTH 17, EAST 29, WEST 35.")
    document = read(router(make_kit()), "sales.pdf", chart.data)
    [call] = vision_endpoint.calls  # the chart, not the logo under the area floor
    assert (call.profile, call.image.sha256) == ("figure", chart.chart.sha256)
    assert document.extractor == "kreuzberg"
    assert document.meta["extraction_route"] == {"signal": "default"}
    for line in chart.text_lines:
        assert line in document.text
    [region] = document.regions
    assert (region.extractor, region.profile) == ("vision-llm", "figure")
    assert document.text[region.start : region.end].endswith("NORTH 42, SOUTH 17, EAST 29, WEST 35.")
    [span] = document.pages
    assert (span.page, span.start, span.end) == (0, 0, len(document.text))


def test_a_deck_s_pictures_are_described_on_their_slides(
    vision_endpoint: VisionEndpoint, make_kit: MakeKit
) -> None:
    deck = picture_pptx()
    document = read(router(make_kit()), "regions.pptx", deck.data)
    seen = [call.image.sha256 for call in vision_endpoint.calls]
    assert seen == [deck.chart.sha256, deck.grouped.sha256, deck.placeholder.sha256]  # not the icon
    assert {call.profile for call in vision_endpoint.calls} == {"figure"}
    assert document.extractor == "kreuzberg"
    for region, picture, slide in zip(
        document.regions, (deck.chart, deck.grouped, deck.placeholder), range(3), strict=True
    ):
        assert document.page_at(region.start) == slide
        assert picture.sha256[:12] in document.text[region.start : region.end]
    assert deck.title in document.text


def test_pictures_fail_open_the_text_stays(vision_endpoint: VisionEndpoint, make_kit: MakeKit) -> None:
    vision_endpoint.fail(500, times=None)
    chart = chart_pdf()
    document = read(router(make_kit()), "sales.pdf", chart.data)
    assert document.regions == ()
    assert chart.text_lines[0] in document.text
    [warning] = document.meta["extraction_warnings"]
    assert "1 picture(s) not described" in warning
    assert "HTTP 500" in warning


def test_a_file_routed_to_a_vision_engine_fails_closed_when_the_endpoint_is_down(
    vision_endpoint: VisionEndpoint, make_kit: MakeKit
) -> None:
    vision_endpoint.fail(503, times=None, retry_after="0")
    kit = make_kit(extract=ExtractSettings(engine="vision-llm"), dpi=DPI, retries=1)
    with pytest.raises(VisionUnavailable, match="HTTP 503") as caught:
        read(router(kit), "tides.pdf", build_pdf(["Tides turn twice a day."]))
    assert (caught.value.code, caught.value.http_status, caught.value.permanent) == (
        "VISION_UNAVAILABLE",
        422,
        False,
    )
    assert len(vision_endpoint.calls) == 2  # the call and its one retry


def test_fail_open_reads_it_with_its_text_reader_and_a_warning(
    vision_endpoint: VisionEndpoint, make_kit: MakeKit
) -> None:
    vision_endpoint.fail(500, times=None)
    kit = make_kit(extract=ExtractSettings(engine="vision-llm"), dpi=DPI, fail_open=True)
    document = read(router(kit), "tides.pdf", build_pdf(["Tides turn twice a day."]))
    assert document.extractor == "kreuzberg"
    assert document.text == "Tides turn twice a day."
    [warning] = document.meta["extraction_warnings"]
    assert warning.startswith("read by kreuzberg without the vision model (VISION_UNAVAILABLE)")


def test_a_diagram_without_a_converter_fails_open_too(
    vision_endpoint: VisionEndpoint, make_kit: MakeKit
) -> None:
    kit = make_kit(extract=ExtractSettings(office_converter="off"), fail_open=True)
    diagram = diagram_docx()
    document = read(router(kit), "fulfilment.docx", diagram.data)
    assert (document.extractor, document.meta["extraction_route"]["signal"]) == ("kreuzberg", "drawing")
    assert "CONVERTER_UNAVAILABLE" in document.meta["extraction_warnings"][0]
    assert diagram.labels[-1] in document.text
    assert vision_endpoint.calls == []


def test_an_answer_over_the_token_cap_fails_the_file(
    vision_endpoint: VisionEndpoint, make_kit: MakeKit
) -> None:
    vision_endpoint.cut(times=None)
    kit = make_kit(extract=ExtractSettings(engine="vision-llm"), dpi=DPI, fail_open=True)
    with pytest.raises(VisionOutputTooLong):  # fail-open is for an endpoint that is down, not this
        read(router(kit), "tides.pdf", build_pdf(["Tides."]))


def test_a_pinned_engine_reads_every_paged_file_and_only_those(
    vision_endpoint: VisionEndpoint, make_kit: MakeKit
) -> None:
    extractor = router(make_kit(extract=ExtractSettings(engine="vision-llm"), dpi=DPI))
    assert read(extractor, "tides.pdf", build_pdf(["Tides."])).extractor == "vision-llm"
    text = read(extractor, "notes.md", b"# Notes\n\nPlain words.")
    assert text.extractor == "text"
    assert "extraction_route" not in text.meta  # nothing was routed
    assert len(vision_endpoint.calls) == 1


def test_auto_stamps_the_default_route_on_other_files(
    vision_endpoint: VisionEndpoint, make_kit: MakeKit
) -> None:
    document = read(router(make_kit()), "notes.md", b"# Notes\n\nPlain words.")
    assert (document.extractor, document.meta["extraction_route"]) == ("text", {"signal": "default"})
    assert vision_endpoint.calls == []


def test_without_an_endpoint_nothing_changes() -> None:
    assert build_vision(ExtractSettings(), VisionSettings()) is None
    assert build_vision(ExtractSettings(), None) is None
    plain = build_extractor(ExtractSettings())
    document = read(plain, "notes.docx", plain_docx().data)
    assert document.extractor == "kreuzberg"
    assert "extraction_route" not in document.meta
    chart = read(plain, "sales.pdf", chart_pdf().data)
    assert (chart.regions, chart.meta.get("extraction_warnings")) == ((), None)
    assert plain.engine("vision-llm") is None
