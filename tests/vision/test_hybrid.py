"""The hybrid-diagram engine's own paths: a raster figure's picture described beside the package's
text, other files through vision-llm, and a .docx's text read once with its text boxes."""

from __future__ import annotations

from ragd.types import Blob
from ragd.vision.docx_text import docx_lines
from ragd.vision.hybrid import HybridDiagramExtractor
from tests.extract.builders import build_pdf
from tests.support.vision_docs import diagram_docx, raster_docx
from tests.support.vision_endpoint import VisionEndpoint
from tests.vision.conftest import MakeKit


def test_a_raster_figure_s_picture_is_described_beside_the_package_s_text(
    vision_endpoint: VisionEndpoint, make_kit: MakeKit
) -> None:
    figure = raster_docx()
    vision_endpoint.answer(
        figure.picture.sha256, "A repair process: INTAKE, TRIAGE, REPAIR, TESTING, RETURN."
    )
    engine = HybridDiagramExtractor(make_kit()).with_profile("figure")
    document = engine.extract(Blob(name="repairs.docx", data=figure.data))
    [call] = vision_endpoint.calls
    assert (call.profile, call.image.sha256) == ("figure", figure.picture.sha256)  # the picture itself
    assert (document.extractor, document.meta["vision_profile"]) == ("hybrid-diagram", "figure")
    for paragraph in figure.paragraphs:
        assert paragraph in document.text
    assert document.text.endswith(
        "**Figure 1**\n\nA repair process: INTAKE, TRIAGE, REPAIR, TESTING, RETURN."
    )


def test_a_file_that_is_not_a_docx_is_read_by_vision_llm(
    vision_endpoint: VisionEndpoint, make_kit: MakeKit
) -> None:
    document = HybridDiagramExtractor(make_kit(dpi=40)).extract(
        Blob(name="tides.pdf", data=build_pdf(["Tides."]))
    )
    assert (document.extractor, document.meta["vision_profile"]) == ("vision-llm", "diagram")
    assert [call.profile for call in vision_endpoint.calls] == ["diagram"]
    general = HybridDiagramExtractor(make_kit(dpi=40)).with_profile("general")
    assert (
        general.extract(Blob(name="tides.pdf", data=build_pdf(["Tides."]))).meta["vision_profile"]
        == "general"
    )


def test_a_docx_s_text_boxes_are_read_once_in_order() -> None:
    diagram = diagram_docx()
    assert docx_lines(diagram.data, "fulfilment.docx") == [diagram.title, *diagram.labels]
    figure = raster_docx()
    assert docx_lines(figure.data, "repairs.docx")[: len(figure.paragraphs)] == list(figure.paragraphs)
