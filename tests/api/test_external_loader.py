"""``PUT /process``: a stock Open WebUI's external document loader, replayed byte for byte.

The request is built and the answer parsed as Open WebUI 0.12.4 does it
(``open_webui/retrieval/loaders/external_document.py``, ``ExternalDocumentLoader.load``), against
a live ragd on loopback with the real extractor in its worker processes.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import requests

from ragd.api.app import create_app
from ragd.settings import EmbeddingSettings, ExtractSettings, ServerSettings, Settings
from tests.api.conftest import KEY
from tests.conftest import shared_path
from tests.support.live_server import LiveServer
from tests.test_container_files import unknown_ragd_names

LIMIT = 256 * 1024
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
NOTES = (
    b"# Harbour notes\n\n"
    b"The kestrel protocol requires two signatures from the harbour council.\n\n"
    b"## Schedule\n\nFerries leave at 07:15 on weekdays.\n"
)


@dataclass(frozen=True)
class Document:
    """What ``langchain_core.documents.Document`` keeps of the loader's answer."""

    page_content: Any
    metadata: Any


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[LiveServer]:
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("loader"),
        embedding=EmbeddingSettings(cache_dir=model_cache),
        extract=ExtractSettings(max_file_bytes=LIMIT),
        # a JSON request over 1 KiB is refused, a .json *file* up to LIMIT is not
        server=ServerSettings(api_key=KEY, max_json_bytes=1024),  # type: ignore[arg-type]
    )
    with LiveServer(create_app(settings)) as server:
        server.wait_ready()
        yield server


def stored(tmp_path: Path, name: str, data: bytes) -> Path:
    """The file as Open WebUI keeps an upload: ``{UPLOAD_DIR}/{uuid}_{name}`` (routers/files.py:363)."""
    path = tmp_path / f"{uuid.uuid4()}_{name}"
    path.write_bytes(data)
    return path


def open_webui_put(
    url: str, api_key: str | None, file_path: Path, mime_type: str | None
) -> requests.Response:
    """The request of external_document.py:38-64 (``load``), minus its optional user/custom headers."""
    with open(file_path, "rb") as f:
        data = f.read()
    headers = {}
    if mime_type is not None:
        headers["Content-Type"] = mime_type
    if api_key is not None:
        headers["Authorization"] = f"Bearer {api_key}"
    headers["X-Filename"] = quote(os.path.basename(file_path))
    if url.endswith("/"):
        url = url[:-1]
    return requests.put(f"{url}/process", data=data, headers=headers, timeout=120)


def open_webui_parse(response: requests.Response) -> list[Document]:
    """The parsing of external_document.py:69-95, then what its callers need of each document:
    ``page_content`` a str (loaders/main.py:359-362 runs ``ftfy.fix_text`` on it) and ``metadata``
    a dict (routers/retrieval.py:1701 iterates ``filter_metadata(doc.metadata)``)."""
    assert response.ok, f"Error loading document: {response.status_code} {response.text}"
    response_data = response.json()
    assert response_data, "Error loading document: No content returned"
    if isinstance(response_data, dict):
        documents = [Document(response_data.get("page_content"), response_data.get("metadata"))]
    elif isinstance(response_data, list):
        documents = [Document(d.get("page_content"), d.get("metadata")) for d in response_data]
    else:
        raise AssertionError("Error loading document: Unable to parse content")
    for document in documents:
        assert isinstance(document.page_content, str)
        assert isinstance(document.metadata, dict)
    return documents


def error_code(response: requests.Response | httpx.Response) -> str:
    return str(response.json()["detail"]["code"])


@pytest.mark.parametrize(
    ("name", "mime_type", "phrase"),
    [
        ("markitdown_test.pdf", "application/pdf", "Large language models (LLMs) are becoming a crucial"),
        ("markitdown_test.docx", DOCX, "AutoGen: Enabling Next-Gen LLM Applications via Multi-Agent"),
    ],
)
def test_open_webui_loads_a_real_pdf_and_docx(
    live: LiveServer, tmp_path: Path, name: str, mime_type: str, phrase: str
) -> None:
    path = tmp_path / f"{uuid.uuid4()}_{name}"
    shutil.copyfile(shared_path("documents", name), path)
    [document] = open_webui_parse(open_webui_put(live.url + "/", KEY, path, mime_type))
    assert phrase in document.page_content
    meta = document.metadata
    assert meta["filename"] == path.name
    assert meta["source"] == path.name
    assert meta["content_type"] == mime_type
    assert meta["extractor"] == "kreuzberg"
    if name.endswith(".pdf"):
        assert meta["page_count"] >= 1


@pytest.mark.parametrize("mime_type", ["text/markdown", None, "application/octet-stream"])
def test_open_webui_loads_markdown_whatever_type_it_declares(
    live: LiveServer, tmp_path: Path, mime_type: str | None
) -> None:
    """A browser may upload Markdown as text/markdown, as octet-stream, or with no type at all."""
    path = stored(tmp_path, "Ünïcode harbour notes.md", NOTES)
    [document] = open_webui_parse(open_webui_put(live.url, KEY, path, mime_type))
    assert "The kestrel protocol requires two signatures from the harbour council." in document.page_content
    assert document.metadata["filename"].endswith("_Ünïcode harbour notes.md"), "X-Filename is URL-quoted"
    assert document.metadata["content_type"] == "text/markdown"
    assert document.metadata["extractor"] == "text"


def test_a_json_file_is_a_file_not_a_json_request(live: LiveServer, tmp_path: Path) -> None:
    """Over the server's 1 KiB JSON-request limit, under the file limit: extracted, not refused."""
    data = ('{"harbour": "' + "kestrel protocol " * 200 + '"}').encode()
    assert 1024 < len(data) < LIMIT
    [document] = open_webui_parse(
        open_webui_put(live.url, KEY, stored(tmp_path, "a.json", data), "application/json")
    )
    assert "kestrel protocol" in document.page_content


def test_a_file_over_the_limit_is_a_413(live: LiveServer, tmp_path: Path) -> None:
    big = stored(tmp_path, "big.md", b"# big\n" + b"harbour " * (LIMIT // 8 + 10))
    response = open_webui_put(live.url, KEY, big, "text/markdown")
    assert (response.status_code, error_code(response)) == (413, "FILE_TOO_LARGE")


@pytest.mark.parametrize("mime_type", ["text/markdown", "application/json"])
def test_a_chunked_file_is_counted_as_it_streams_in(live: LiveServer, mime_type: str) -> None:
    """No Content-Length: refused once past the file limit (a .json file too: not the JSON limit)."""
    pieces = (b"harbour " * 8192 for _ in range(LIMIT // 65536 + 2))
    headers = {"Authorization": f"Bearer {KEY}", "X-Filename": "big.md", "Content-Type": mime_type}
    response = requests.put(f"{live.url}/process", data=pieces, headers=headers, timeout=60)
    assert (response.status_code, error_code(response)) == (413, "FILE_TOO_LARGE")


@pytest.mark.parametrize(("auth", "status"), [("", "401"), (f"Authorization: Bearer {KEY}\r\n", "413")])
def test_a_huge_upload_is_answered_before_it_is_read(live: LiveServer, auth: str, status: str) -> None:
    """The head of a 200 MiB upload and 64 KiB of it: the answer comes while the rest is unsent."""
    head = (
        f"PUT /process HTTP/1.1\r\nHost: 127.0.0.1:{live.port}\r\n{auth}"
        f"Content-Type: application/pdf\r\nX-Filename: big.pdf\r\nContent-Length: {200 * 1024 * 1024}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", live.port), timeout=10) as sock:
        sock.sendall(head.encode() + b"%PDF-1.7\n" + b"\0" * 65_536)
        assert sock.recv(4096).decode("latin-1").startswith(f"HTTP/1.1 {status}")


@pytest.mark.parametrize(
    ("name", "data", "mime_type", "status", "code"),
    [
        (
            "tool.exe",
            b"MZ\x90\x00\x03" + bytes(range(256)) * 4,
            "application/x-msdownload",
            415,
            "UNSUPPORTED_TYPE",
        ),
        ("archive.zip", b"PK\x05\x06" + b"\x00" * 18, "application/zip", 415, "UNSUPPORTED_TYPE"),
        (
            "broken.pdf",
            b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage\n",
            "application/pdf",
            422,
            "EXTRACTION_FAILED",
        ),
        ("empty.md", b"", "text/markdown", 422, "EMPTY_DOCUMENT"),
    ],
)
def test_files_ragd_cannot_read_are_4xx_with_a_code(
    live: LiveServer, tmp_path: Path, name: str, data: bytes, mime_type: str, status: int, code: str
) -> None:
    response = open_webui_put(live.url, KEY, stored(tmp_path, name, data), mime_type)
    assert (response.status_code, error_code(response)) == (status, code), response.text


def test_the_key_is_required(live: LiveServer, tmp_path: Path) -> None:
    path = stored(tmp_path, "notes.md", NOTES)
    for key in (None, "wrong-key-0123456789abcdef0123456789"):
        response = open_webui_put(live.url, key, path, "text/markdown")
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"] == "Bearer"


def test_tenant_keys_that_may_write_may_extract(live: LiveServer, tmp_path: Path) -> None:
    service = {"Authorization": f"Bearer {KEY}"}
    tenant = httpx.post(f"{live.url}/api/v1/tenants", json={"name": "harbour"}, headers=service).json()
    keys = {}
    for role in ("editor", "reader"):
        made = httpx.post(
            f"{live.url}/api/v1/tenants/{tenant['id']}/keys", json={"role": role}, headers=service
        )
        assert made.status_code == 201, made.text
        keys[role] = made.json()["secret"]
    path = stored(tmp_path, "notes.md", NOTES)
    assert open_webui_parse(open_webui_put(live.url, keys["editor"], path, "text/markdown"))
    refused = open_webui_put(live.url, keys["reader"], path, "text/markdown")
    assert (refused.status_code, error_code(refused)) == (403, "FORBIDDEN")
    assert open_webui_put(live.url, "rgd_not-a-real-key", path, "text/markdown").status_code == 401


@pytest.mark.parametrize(
    "header",
    [
        "../../etc/passwd",
        quote("../../etc/passwd"),
        "..%5C..%5Cwindows%5Cwin.ini",
        quote("a\nFAKE LOG LINE\x1b[31m.md"),
    ],
)
def test_hostile_file_names_are_harmless(
    live: LiveServer, header: str, caplog: pytest.LogCaptureFixture
) -> None:
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "text/plain", "X-Filename": header}
    with caplog.at_level(logging.INFO, logger="ragd.api.routes.loader"):
        response = requests.put(f"{live.url}/process", data=NOTES, headers=headers, timeout=60)
    assert response.status_code == 200, response.text
    name = response.json()["metadata"]["filename"]
    assert not any(ord(c) < 32 for c in name)
    assert name in ("passwd", "win.ini", "a\\nFAKE LOG LINE\\x1b[31m.md")
    lines = [r.getMessage() for r in caplog.records if r.name == "ragd.api.routes.loader"]
    assert lines
    assert all("\n" not in line and "\x1b" not in line for line in lines)


def test_without_x_filename_the_name_comes_from_the_content_type(live: LiveServer) -> None:
    auth = {"Authorization": f"Bearer {KEY}"}
    named = requests.put(
        f"{live.url}/process", data=NOTES, headers={**auth, "Content-Type": "text/markdown"}, timeout=60
    )
    assert named.status_code == 200, named.text
    assert named.json()["metadata"]["filename"] == "document.md"
    nameless = requests.put(f"{live.url}/process", data=NOTES, headers=auth, timeout=60)
    assert (nameless.status_code, error_code(nameless)) == (400, "INVALID_REQUEST")


def test_a_form_upload_is_pointed_at_the_raw_body(live: LiveServer) -> None:
    response = httpx.put(
        f"{live.url}/process",
        files={"file": ("notes.md", NOTES)},
        headers={"Authorization": f"Bearer {KEY}", "X-Filename": "notes.md"},
    )
    assert (response.status_code, error_code(response)) == (415, "UNSUPPORTED_MEDIA_TYPE")


@pytest.mark.parametrize(
    ("headers", "body"),
    [
        ({"X-Filename": "%"}, b""),
        ({"X-Filename": "%2F%2E%2E"}, b"hello"),
        ({"X-Filename": "a.txt", "Content-Type": "text/plain; charset=utf-16"}, b"\xff\xfeh\x00i\x00"),
        ({"X-Filename": "scan.png", "Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n\x00\x00"),
        ({"X-Filename": "x.docx", "Content-Type": DOCX}, b"PK\x03\x04 not really a zip"),
        ({"X-Filename": "x" * 5000 + ".md"}, b"# long name\n\nkestrel"),
        ({"Content-Type": "no/such-type"}, b"kestrel"),
    ],
)
def test_odd_requests_are_never_a_5xx(live: LiveServer, headers: dict[str, str], body: bytes) -> None:
    response = requests.put(
        f"{live.url}/process", data=body, headers={"Authorization": f"Bearer {KEY}", **headers}, timeout=60
    )
    assert response.status_code < 500, response.text
    if response.ok:
        assert len(response.json()["metadata"]["filename"]) <= 255
    else:
        assert error_code(response)


def test_the_guide_names_only_real_settings() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "open-webui.md").read_text(encoding="utf-8")
    names = set(re.findall(r"\bRAGD_[A-Z0-9_]*[A-Z0-9]", guide))
    assert "RAGD_EXTRACT__MAX_FILE_BYTES" in names
    assert unknown_ragd_names(names) == []
