"""ragd serving with a vision endpoint: the engines run in the extraction workers (their settings
reach them), PUT /api/v1/ingest answers the router's ``extraction``, chunks carry the engine and
profile of what made them, a second ingest asks the model nothing, and POST /api/v1/extract takes
an engine and a profile."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PIL import Image
from pydantic import SecretStr

from ragd.api.app import create_app
from ragd.errors import InvalidRequest
from ragd.settings import EmbeddingSettings, ServerSettings, Settings, VisionSettings
from ragd.vision.probe import check_request
from tests.extract.builders import build_pdf
from tests.support.live_server import LiveServer
from tests.support.vision_docs import chart_pdf, pdf_bytes, pdf_image, pdf_stream
from tests.support.vision_endpoint import VisionEndpoint

KEY = "test-api-key-0123456789abcdef0123456789"
AUTH = {"Authorization": f"Bearer {KEY}"}
CHART_ANSWER = "A bar chart of parcels per region: NORTH 42, SOUTH 17, EAST 29, WEST 35."


@pytest.fixture(scope="module")
def model() -> Iterator[VisionEndpoint]:
    with VisionEndpoint() as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def live(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path, model: VisionEndpoint
) -> Iterator[LiveServer]:
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("ragd"),
        extract_concurrency=1,
        embedding=EmbeddingSettings(cache_dir=model_cache),
        server=ServerSettings(api_key=KEY, inspection_enabled=True),
        vision=VisionSettings(
            api_base_url=model.url, model="scripted-vl", api_key=SecretStr("sk-vl"), dpi=50
        ),
    )
    with LiveServer(create_app(settings)) as server:
        server.wait_ready()
        yield server


def picture_pdf(colour: tuple[int, int, int]) -> bytes:
    """A page of text and one large picture of one colour (a picture no other test sends)."""
    text = b"BT /F1 14 Tf 72 720 Td (Parcels per region: see the picture.) Tj ET"
    content = text + b" q 400 0 0 300 100 200 cm /P Do Q"
    return pdf_bytes(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> /XObject << /P 6 0 R >> >> >>",
            pdf_stream(content),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            pdf_image(Image.new("RGB", (400, 300), colour)),
        ]
    )


def ingest(live: LiveServer, file_id: str, name: str, data: bytes, **fields: str) -> httpx.Response:
    form = {"file_id": file_id, "filename": name, "collection_name": "kb", "user_id": "u", **fields}
    return httpx.put(
        f"{live.url}/api/v1/ingest", files={"file": (name, data)}, data=form, headers=AUTH, timeout=60
    )


def test_a_pdf_s_chart_becomes_a_figure_chunk_and_is_asked_once(
    live: LiveServer, model: VisionEndpoint
) -> None:
    chart = chart_pdf()
    model.answer(chart.chart.sha256, CHART_ANSWER)
    before = len(model.calls)
    r = ingest(live, "sales", "sales.pdf", chart.data)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["extraction"] == {"engine": "kreuzberg", "route": {"signal": "default"}}
    assert [call.image.sha256 for call in model.calls[before:]] == [chart.chart.sha256]
    assert model.requests[-1].header("authorization") == "Bearer sk-vl"  # the key reached the worker
    chunks = httpx.get(
        f"{live.url}/api/v1/documents/sales/chunks", params={"include_content": "full"}, headers=AUTH
    ).json()["chunks"]
    figure = [c for c in chunks if "NORTH 42" in c["content"]]
    assert figure, chunks
    assert figure[0]["meta"]["vision_profile"] == "figure"
    assert figure[0]["meta"]["extractor"] == "vision-llm"
    assert figure[0]["meta"]["page"] == 0
    assert all(c["meta"]["extraction_route"] == {"signal": "default"} for c in chunks)
    again = ingest(live, "sales", "sales.pdf", chart.data, force="true")  # re-index: the answer is cached
    assert again.status_code == 200, again.text
    assert len(model.calls) == before + 1
    metrics = httpx.get(f"{live.url}/metrics", headers=AUTH).text
    assert 'extraction_route_total{engine="kreuzberg",signal="default"} 2.0' in metrics


def test_the_probe_runs_a_vision_engine_with_a_profile(live: LiveServer, model: VisionEndpoint) -> None:
    before = len(model.calls)
    pdf = build_pdf(["Tides turn twice a day.", "Harbours close at dusk."])
    r = httpx.post(
        f"{live.url}/api/v1/extract",
        files={"file": ("tides.pdf", pdf)},
        data={"engine": "Vision-LLM", "profile": "diagram"},
        headers=AUTH,
        timeout=60,
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["status"], body["engine"], body["profile"]) == (True, "vision-llm", "diagram")
    assert [d["meta"]["page"] for d in body["documents"]] == [0, 1]
    assert body["documents"][0]["content"].startswith("```mermaid")
    assert [call.profile for call in model.calls[before:]] == ["diagram", "diagram"]


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"engine": "auto"}, "leave engine out"),
        ({"engine": "kreuzberg", "profile": "ocr"}, "only for the vision engines"),
        ({"profile": "ocr"}, "only for the vision engines"),
        ({"engine": "hybrid-diagram", "profile": "poster"}, "valid profiles: diagram, diagram-topology"),
    ],
)
def test_the_probe_refuses_what_cannot_run(live: LiveServer, fields: dict[str, str], says: str) -> None:
    r = httpx.post(
        f"{live.url}/api/v1/extract", files={"file": ("a.md", b"# A\n\nwords")}, data=fields, headers=AUTH
    )
    assert r.status_code == 400, r.text
    assert r.json()["detail"]["code"] == "INVALID_REQUEST"
    assert says in r.json()["detail"]["error"]


def test_a_vision_engine_without_an_endpoint_names_the_setting() -> None:
    with pytest.raises(InvalidRequest, match="needs a vision model") as caught:
        check_request("vision-llm", None, known={"kreuzberg", "text"}, vision=False)
    assert "RAGD_VISION__API_BASE_URL" in (caught.value.hint or "")
    with pytest.raises(InvalidRequest, match="unknown extraction engine 'banana'"):
        check_request("banana", None, known={"kreuzberg"}, vision=True)
    check_request(None, None, known=set(), vision=False)
    check_request("hybrid-diagram", "figure", known={"hybrid-diagram"}, vision=True)


def test_readiness_never_asks_the_vision_model(live: LiveServer, model: VisionEndpoint) -> None:
    before = len(model.calls)
    model.fail(503, times=None)
    try:
        assert httpx.get(f"{live.url}/health/ready").status_code == 200
    finally:
        model.heal()
    assert len(model.calls) == before


def test_an_endpoint_that_fails_is_a_422_for_a_vision_engine_and_a_warning_for_pictures(
    live: LiveServer, model: VisionEndpoint
) -> None:
    model.fail(500, times=None)
    try:
        r = httpx.post(
            f"{live.url}/api/v1/extract",
            files={"file": ("tides.pdf", build_pdf(["Tides."]))},
            data={"engine": "vision-llm"},
            headers=AUTH,
            timeout=60,
        )
        ingested = ingest(
            live, "sales-down", "sales.pdf", picture_pdf((90, 140, 200))
        )  # a picture not cached
    finally:
        model.heal()
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert (detail["code"], detail["reason"]) == ("EXTRACTION_FAILED", "VISION_UNAVAILABLE")
    assert "HTTP 500" in detail["error"]
    assert ingested.status_code == 200, ingested.text
    chunks = httpx.get(f"{live.url}/api/v1/documents/sales-down/chunks", headers=AUTH).json()["chunks"]
    assert all("picture(s) not described" in c["meta"]["extraction_warnings"][0] for c in chunks)
    assert not any(c["meta"].get("vision_profile") for c in chunks)
