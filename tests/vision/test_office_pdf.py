"""Office files become PDF through LibreOffice (a private profile, killed past its time) or a
Gotenberg service; without a converter the error says how to get one."""

from __future__ import annotations

import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from ragd.errors import ConverterUnavailable, ExtractionError, UnsupportedType
from ragd.extract.office_pdf import converter, to_pdf
from ragd.extract.pdf_pages import page_count
from ragd.settings import ExtractSettings
from tests.extract.builders import build_docx, build_pdf
from tests.support.scripted_http import Reply, ScriptedServer

DOCX = build_docx([("h1", "Intake"), ("p", "Every application is logged on the day it arrives.")])


def needs_libreoffice() -> None:
    if shutil.which("soffice") is None:
        pytest.skip("needs LibreOffice (apt-get install libreoffice-writer): soffice is not on PATH")


@pytest.mark.slow  # ~1 s; the fast tier converts through the diagram test (tests/vision/test_routing.py)
def test_libreoffice_converts_a_docx_to_pdf_pages() -> None:
    needs_libreoffice()
    pdf = to_pdf(DOCX, "intake.docx", ExtractSettings(office_converter="libreoffice"))
    assert pdf.startswith(b"%PDF-")
    assert page_count(pdf) == 1


def test_a_pdf_passes_through_and_text_has_no_pages() -> None:
    pdf = build_pdf(["one page"])
    assert to_pdf(pdf, "a.pdf", ExtractSettings()) is pdf
    with pytest.raises(UnsupportedType, match="no pages to convert"):
        to_pdf(b"just text", "a.txt", ExtractSettings())


def test_no_converter_says_how_to_get_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(ConverterUnavailable, match="OFFICE_CONVERTER is off"):
        to_pdf(DOCX, "a.docx", ExtractSettings(office_converter="off"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no soffice
    settings = ExtractSettings()
    assert converter(settings) is None
    with pytest.raises(ConverterUnavailable) as caught:
        to_pdf(DOCX, "a.docx", settings)
    assert "GOTENBERG_URL" in (caught.value.hint or "")
    assert "LibreOffice" in (caught.value.hint or "")
    assert caught.value.code == "CONVERTER_UNAVAILABLE"


def test_a_libreoffice_that_hangs_is_killed_with_its_children(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    fake = tmp_path / "soffice"  # starts a child and hangs, as soffice does with soffice.bin
    fake.write_text(f"#!/bin/sh\nsleep 60 &\necho $$ $! > {pids}\nwait\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(ExtractionError, match=r"did not convert 'a\.docx' to PDF within 0\.5 s"):
        to_pdf(DOCX, "a.docx", ExtractSettings(office_converter="libreoffice"), timeout_s=0.5)
    # SIGKILL reaches the group at once; a loaded machine may take a moment to run the exits
    deadline = time.monotonic() + 10
    alive = [int(pid) for pid in pids.read_text().split()]
    while alive and time.monotonic() < deadline:
        time.sleep(0.02)
        alive = [pid for pid in alive if _alive(pid)]
    assert alive == []


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, killed and not yet reaped by init, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_gotenberg_gets_the_file_as_its_files_part(scripted_server: ScriptedServer) -> None:
    pdf = build_pdf(["converted"])
    scripted_server.expect(
        "POST", "/forms/libreoffice/convert", Reply(200, pdf, {"Content-Type": "application/pdf"})
    )
    settings = ExtractSettings(office_converter="gotenberg", gotenberg_url=scripted_server.url + "/")
    assert to_pdf(DOCX, "intake.docx", settings) == pdf
    [request] = scripted_server.requests
    assert (request.header("content-type") or "").startswith("multipart/form-data")
    assert b'name="files"; filename="document.docx"' in request.body
    assert DOCX in request.body


def test_gotenberg_failures_have_codes(scripted_server: ScriptedServer) -> None:
    route = ("POST", "/forms/libreoffice/convert")
    scripted_server.expect(*route, Reply.error(503), Reply.error(400))
    settings = ExtractSettings(office_converter="gotenberg", gotenberg_url=scripted_server.url)
    with pytest.raises(ConverterUnavailable, match="HTTP 503"):
        to_pdf(DOCX, "a.docx", settings)
    with pytest.raises(ExtractionError, match="HTTP 400"):
        to_pdf(DOCX, "a.docx", settings)
    scripted_server.close()
    with pytest.raises(ConverterUnavailable, match="cannot be reached"):
        to_pdf(DOCX, "a.docx", settings)


def test_settings_refuse_a_gotenberg_url_that_is_not_http() -> None:
    with pytest.raises(ValueError, match="http:// or https://"):
        ExtractSettings(gotenberg_url="gotenberg:3000")
