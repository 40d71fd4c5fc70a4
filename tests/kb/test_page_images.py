"""The page image route over a live ragd: GET /api/v1/datasets/{id}/files/{file}/pages/{n}.

One server (SQLite catalog, embedded Qdrant, the real model), one tenant with a dataset holding a
two-page text PDF made with PDFium (Letter, then landscape A5, so an image's aspect says which page
it is), a Markdown file (no pages), a .docx (no converter on this server: RAGD_EXTRACT__OFFICE_
CONVERTER=off) and a PDF whose page declares 30,000 x 30,000 points.  What is asserted is what a
client gets: the PNG's size, the marked passage's pixels (highlight colour inside the chunk's
boxes, none on the unmarked page), the headers (ETag, Cache-Control, X-Page-Count, X-Ragd-Cache),
and the error codes.
"""

from __future__ import annotations

import io
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from ragd.api.app import create_app
from ragd.settings import (
    ExtractSettings,
    PagesSettings,
)
from tests.api.test_chat_proxy import CHAT, completion
from tests.extract.builders import build_docx
from tests.kb.conftest import SERVICE_KEY, Api, chat_kb_settings, kb_settings, new_tenant
from tests.support.live_server import LiveServer
from tests.support.page_pdfs import text_pdf
from tests.support.scripted_http import ScriptedServer

LETTER, A5_LANDSCAPE = (612.0, 792.0), (595.0, 420.0)
PAGES = [
    (
        LETTER,
        [
            "The lighthouse keeper winds the clockwork lens every four hours",
            "and writes each winding in the lamp book beside the weather.",
        ],
    ),
    (
        A5_LANDSCAPE,
        [
            "Supplies arrive by boat once a fortnight when the swell",
            "allows a landing at the jetty below the keepers' cottages.",
        ],
    ),
]
MAX_PIXELS = 4_000_000
HIGHLIGHT_MIN = 200  # highlighted pixels of one marked line at 110 dpi: thousands


def highlighted(image: Image.Image, box: tuple[float, float, float, float] | None = None) -> int:
    """Pixels of the highlight's colour (yellow to orange: red high, blue low), in ``box`` or all."""
    rgb = image.convert("RGB")
    if box is not None:
        w, h = rgb.size
        rgb = rgb.crop((int(box[0] * w), int(box[1] * h), int(box[2] * w) + 1, int(box[3] * h) + 1))
    return sum(1 for r, _, b in rgb.get_flattened_data() if r > 200 and b < 190 and r - b > 60)


@pytest.fixture(scope="module")
def upstream() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path, upstream: ScriptedServer
) -> Iterator[LiveServer]:
    data_dir = tmp_path_factory.mktemp("pages") / "data"
    settings = chat_kb_settings(data_dir, model_cache, upstream.url).model_copy(
        update={
            "extract": ExtractSettings(max_file_bytes=400_000, office_converter="off"),
            "pages": PagesSettings(max_pixels=MAX_PIXELS, cache_mb=64, public_url="https://rag.example.org"),
        }
    )
    with LiveServer(create_app(settings)) as live:
        live.wait_ready()
        yield live


@pytest.fixture(scope="module")
def corpus(server: LiveServer) -> Iterator[dict[str, Any]]:
    service = Api(server.url, SERVICE_KEY)
    tenant_id, keys = new_tenant(service, "lights", "viewer")
    _, other_keys = new_tenant(service, "elsewhere", "viewer")
    try:
        yield _ingested(service, tenant_id) | {"viewer": keys["viewer"], "other": other_keys["viewer"]}
    finally:
        for api in (service, keys["viewer"], other_keys["viewer"]):
            api.close()


def _ingested(service: Api, tenant_id: str) -> dict[str, Any]:
    chunking = {"strategy": "recursive", "size": 100, "overlap": 0}
    ds = service.ok(
        "POST", "/api/v1/datasets", 201, json={"name": "lights", "tenant_id": tenant_id, "chunking": chunking}
    )
    huge, _ = text_pdf([((30_000.0, 30_000.0), ["A page declaring thirty thousand points a side."])])
    files = [
        ("files", ("handbook.pdf", text_pdf(PAGES)[0], "application/pdf")),
        ("files", ("notes.md", b"# Notes\n\nNo pages here, only text about lighthouses.\n", "text/markdown")),
        (
            "files",
            (
                "memo.docx",
                build_docx([("p", "A memo about the lighthouse's lamp oil.")]),
                "application/octet-stream",
            ),
        ),
        ("files", ("huge.pdf", huge, "application/pdf")),
    ]
    sent = service.ok("POST", f"/api/v1/datasets/{ds['id']}/files", 202, files=files)
    assert service.wait_job(sent["job"]["id"])["status"] == "succeeded"
    listed = service.ok("GET", f"/api/v1/datasets/{ds['id']}/files")["files"]
    ids = {f["name"]: f["id"] for f in listed}
    chunks = {
        name: service.ok("GET", f"/api/v1/datasets/{ds['id']}/files/{file_id}/chunks")["chunks"]
        for name, file_id in ids.items()
    }
    return {"ds": ds, "ids": ids, "chunks": chunks}


def sized(image: Image.Image, page: tuple[float, float], dpi: int) -> bool:
    """The image is the page drawn at ``dpi`` (PDFium rounds a side up or down)."""
    want = (page[0] * dpi / 72, page[1] * dpi / 72)
    return abs(image.width - want[0]) <= 1 and abs(image.height - want[1]) <= 1


def code(response: Any) -> str:
    """The error code of a knowledge-base API error answer."""
    return str(response.json()["detail"]["code"])


def page_path(corpus: dict[str, Any], name: str, n: int) -> str:
    return f"/api/v1/datasets/{corpus['ds']['id']}/files/{corpus['ids'][name]}/pages/{n}"


def png(response: Any) -> Image.Image:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/png"
    return Image.open(io.BytesIO(response.content))


def test_chunks_of_a_pdf_link_their_page_and_others_do_not(corpus: dict[str, Any]) -> None:
    pdf_chunks = corpus["chunks"]["handbook.pdf"]
    assert {c["page"] for c in pdf_chunks} == {0, 1}
    for chunk in pdf_chunks:
        assert (
            chunk["page_image"]
            == f"{page_path(corpus, 'handbook.pdf', chunk['page'] + 1)}?chunk={chunk['id']}"
        )
    assert all(c["page_image"] is None for c in corpus["chunks"]["notes.md"])
    assert all(c["page_image"] is None for c in corpus["chunks"]["memo.docx"])  # no converter here
    hits = corpus["viewer"].search("clockwork lens", corpus["ds"]["id"])
    assert hits[0]["name"] == "handbook.pdf"
    assert hits[0]["page_image"] == next(c["page_image"] for c in pdf_chunks if "clockwork" in c["content"])


def test_a_page_is_a_png_of_its_own_shape_and_the_chunk_is_marked_on_it(corpus: dict[str, Any]) -> None:
    viewer = corpus["viewer"]
    chunk = next(c for c in corpus["chunks"]["handbook.pdf"] if "clockwork" in c["content"])
    marked = viewer.get(chunk["page_image"])
    image = png(marked)
    assert sized(image, LETTER, 110)  # the default DPI
    assert marked.headers["x-page-count"] == "2"
    assert marked.headers["cache-control"].startswith("private")
    boxes = viewer.ok(
        "POST",
        f"/api/v1/datasets/{corpus['ds']['id']}/search",
        json={"query": "clockwork lens", "k": 1, "explain": True},
    )["results"][0]["meta"]["boxes"]
    assert boxes
    assert all(b[0] == 0 for b in boxes)
    inside = sum(highlighted(image, tuple(b[1:])) for b in boxes)
    assert inside >= HIGHLIGHT_MIN
    assert highlighted(image) <= inside * 2  # the highlight is where the passage is, not elsewhere
    plain = png(viewer.get(page_path(corpus, "handbook.pdf", 1)))
    assert highlighted(plain) == 0  # without ?chunk= nothing is marked
    landscape = png(viewer.get(page_path(corpus, "handbook.pdf", 2)))
    assert sized(landscape, A5_LANDSCAPE, 110)


def test_a_page_drawn_once_is_served_from_the_cache(corpus: dict[str, Any]) -> None:
    viewer = corpus["viewer"]
    path = f"{page_path(corpus, 'handbook.pdf', 2)}?dpi=90"
    first = viewer.get(path)
    second = viewer.get(path)
    assert first.headers["x-ragd-cache"] == "miss"
    assert second.headers["x-ragd-cache"] == "hit"
    assert second.content == first.content
    assert second.headers["etag"] == first.headers["etag"]
    again = viewer.get(path, headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304
    assert not again.content


def test_dpi_is_bounded_and_a_huge_page_stays_within_the_pixel_cap(corpus: dict[str, Any]) -> None:
    viewer = corpus["viewer"]
    sharp = png(viewer.get(f"{page_path(corpus, 'handbook.pdf', 1)}?dpi=200"))
    assert sized(sharp, LETTER, 200)
    too_sharp = viewer.get(f"{page_path(corpus, 'handbook.pdf', 1)}?dpi=400")
    assert too_sharp.status_code == 400
    assert code(too_sharp) == "INVALID_REQUEST"
    huge = png(viewer.get(page_path(corpus, "huge.pdf", 1)))  # 30,000 pt: 45,833 px a side at 110 dpi
    assert huge.width * huge.height <= MAX_PIXELS
    assert abs(huge.width - huge.height) <= 1


def test_missing_pages_files_chunks_and_other_tenants_are_not_found(corpus: dict[str, Any]) -> None:
    viewer, other = corpus["viewer"], corpus["other"]
    page = page_path(corpus, "handbook.pdf", 1)
    other_chunk = corpus["chunks"]["notes.md"][0]["id"]
    for path in (
        page_path(corpus, "handbook.pdf", 3),
        page_path(corpus, "handbook.pdf", 0),
        page.replace(corpus["ids"]["handbook.pdf"], corpus["ids"]["notes.md"] + "x"),
        f"{page}?chunk={other_chunk}",  # a chunk of another file
    ):
        answer = viewer.get(path)
        assert answer.status_code == 404, (path, answer.text)
        assert code(answer) == "NOT_FOUND"
    # another tenant's key meets exactly what an unknown dataset gives
    theirs = other.get(page)
    unknown = other.get(page.replace(corpus["ds"]["id"], "00000000-0000-4000-8000-000000000000"))
    assert theirs.status_code == unknown.status_code == 404
    assert code(theirs) == code(unknown) == "NOT_FOUND"
    assert code(viewer.get(f"{page}?chunk=not-a-uuid")) == "INVALID_REQUEST"


def test_files_without_pages_say_why(corpus: dict[str, Any]) -> None:
    viewer = corpus["viewer"]
    text = viewer.get(page_path(corpus, "notes.md", 1))
    assert text.status_code == 422
    assert code(text) == "NOT_PAGED"
    assert "PDF and Office" in text.json()["detail"]["hint"]
    office = viewer.get(page_path(corpus, "memo.docx", 1))
    assert office.status_code == 422
    assert code(office) == "CONVERTER_UNAVAILABLE"
    assert "LibreOffice" in office.json()["detail"]["hint"]


def test_chat_sources_link_their_page_and_url_citations_open_it(
    corpus: dict[str, Any], upstream: ScriptedServer
) -> None:
    upstream.expect("POST", CHAT, completion("The keeper winds it every four hours [1]."))
    body = {
        "model": f"rag/{corpus['ds']['collection_name']}",
        "messages": [{"role": "user", "content": "How often is the clockwork lens wound?"}],
        "rag_top_k": 2,
        "rag_min_score": 0,
        "rag_enable_tools": False,
    }
    answer = corpus["viewer"].ok("POST", CHAT, json=body)
    upstream.verify()
    first = answer["rag_sources"][0]
    assert first["source"] == "handbook.pdf"
    assert first["page_image"] == next(
        c["page_image"] for c in corpus["chunks"]["handbook.pdf"] if c["id"] == first["point_id"]
    )
    links = [a["url_citation"]["url"] for a in answer["choices"][0]["message"]["annotations"]]
    assert links == [f"https://rag.example.org{first['page_image']}"]
    assert png(corpus["viewer"].get(first["page_image"])).width > 0


@pytest.mark.slow
def test_with_office_pages_a_docx_chunk_opens_its_page_marked(tmp_path: Path, model_cache: Path) -> None:
    """A server that gives Office files pages (RAGD_EXTRACT__OFFICE_PAGES, LibreOffice): a .docx's
    chunks carry their page and a page_image, which draws the converted page with the passage."""
    if shutil.which("soffice") is None:
        pytest.skip("needs LibreOffice (apt-get install libreoffice-writer): soffice is not on PATH")
    settings = kb_settings(tmp_path / "data", model_cache, None).model_copy(
        update={"extract": ExtractSettings(max_file_bytes=400_000, office_pages=True)}
    )
    with LiveServer(create_app(settings)) as live:
        live.wait_ready()
        service = Api(live.url, SERVICE_KEY)
        try:
            tenant_id, _ = new_tenant(service, "office")
            chunking = {"strategy": "recursive", "size": 400, "overlap": 0}
            ds = service.ok(
                "POST",
                "/api/v1/datasets",
                201,
                json={"name": "memos", "tenant_id": tenant_id, "chunking": chunking},
            )
            paragraphs = [
                ("p", f"Memo line {n}: the harbour lantern needs oil number {n}.") for n in range(90)
            ]
            parts = [
                (
                    "files",
                    ("memo.docx", build_docx([("h1", "Memo"), *paragraphs]), "application/octet-stream"),
                )
            ]
            sent = service.ok("POST", f"/api/v1/datasets/{ds['id']}/files", 202, files=parts)
            assert service.wait_job(sent["job"]["id"])["status"] == "succeeded"
            file_id = service.ok("GET", f"/api/v1/datasets/{ds['id']}/files")["files"][0]["id"]
            chunks = service.ok("GET", f"/api/v1/datasets/{ds['id']}/files/{file_id}/chunks")["chunks"]
            assert len({c["page"] for c in chunks}) >= 2
            last = chunks[-1]
            assert last["page_image"].endswith(f"/pages/{last['page'] + 1}?chunk={last['id']}")
            image = png(service.get(last["page_image"]))
            assert highlighted(image) >= HIGHLIGHT_MIN
        finally:
            service.close()
