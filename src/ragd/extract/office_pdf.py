"""Office files as PDF, for everything that needs their pages as pictures (the vision engines,
page images of citations): LibreOffice on this machine, or a Gotenberg service by URL.

``RAGD_EXTRACT__OFFICE_CONVERTER`` picks the converter: ``libreoffice`` (``soffice`` on PATH),
``gotenberg`` (``RAGD_EXTRACT__GOTENBERG_URL``), ``off``, or ``auto`` (LibreOffice when installed,
else Gotenberg when a URL is set, else none).

* LibreOffice runs as ``soffice --headless --convert-to pdf`` in a private temporary folder with a
  private profile (``-env:UserInstallation``), so conversions in parallel never share a profile or
  its lock; in a process group of its own, killed whole when it outlives the time limit.
* Gotenberg gets ``POST {url}/forms/libreoffice/convert`` with the file as the multipart ``files``
  part, as the ingestion service's deployment sends it.

:func:`to_pdf` is the one entry: a PDF comes back as it is; an Office file as its PDF; no converter
is :class:`ConverterUnavailable` (saying how to get one), a conversion that fails or times out is
:class:`ExtractionError`, a PDF larger than ``4 x RAGD_EXTRACT__MAX_FILE_BYTES`` is
:class:`PayloadTooLarge`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import httpx

from ragd.errors import ConverterUnavailable, ExtractionError, PayloadTooLarge, UnsupportedType
from ragd.extract.mime import FileKind, FileType, detect
from ragd.settings import ExtractSettings

logger = logging.getLogger(__name__)

#: the kinds a converter turns into PDF pages
OFFICE_KINDS = frozenset(
    {
        FileKind.DOCX,
        FileKind.DOC,
        FileKind.ODT,
        FileKind.RTF,
        FileKind.PPTX,
        FileKind.PPT,
        FileKind.ODP,
        FileKind.XLSX,
        FileKind.XLS,
        FileKind.ODS,
    }
)
_SUFFIX = {
    FileKind.DOCX: ".docx",
    FileKind.DOC: ".doc",
    FileKind.ODT: ".odt",
    FileKind.RTF: ".rtf",
    FileKind.PPTX: ".pptx",
    FileKind.PPT: ".ppt",
    FileKind.ODP: ".odp",
    FileKind.XLSX: ".xlsx",
    FileKind.XLS: ".xls",
    FileKind.ODS: ".ods",
}
_PDF_GROWTH = 4  # an Office file's PDF may be this many times the largest file ragd takes
_CHUNK = 1 << 20


def converter(settings: ExtractSettings) -> str | None:
    """The converter :func:`to_pdf` would use: ``libreoffice``, ``gotenberg``, or None."""
    choice = settings.office_converter
    if choice == "off":
        return None
    if choice in ("auto", "libreoffice") and _soffice() is not None:
        return "libreoffice"
    if choice in ("auto", "gotenberg") and settings.gotenberg_url:
        return "gotenberg"
    return None


def to_pdf(data: bytes, name: str, settings: ExtractSettings, *, timeout_s: float | None = None) -> bytes:
    """``data`` (a file called ``name``) as PDF bytes; ``timeout_s`` defaults to
    ``RAGD_EXTRACT__TIMEOUT_S``."""
    file_type = detect(name, None, data)
    if file_type.kind is FileKind.PDF:
        return data
    if file_type.kind not in OFFICE_KINDS:
        raise UnsupportedType(
            f"{name!r} is {file_type.kind.value}, which has no pages to convert",
            hint="pages are made of PDF and Office files (DOCX, DOC, ODT, RTF, PPTX, PPT, ODP, XLSX, XLS "
            "and ODS)",
        )
    seconds = settings.timeout_s if timeout_s is None else timeout_s
    limit = settings.max_file_bytes * _PDF_GROWTH
    which = converter(settings)
    if which == "libreoffice":
        return _libreoffice(data, file_type, name, seconds, limit)
    if which == "gotenberg":
        return _gotenberg(data, file_type, name, settings.gotenberg_url, seconds, limit)
    raise _no_converter(name, settings)


def _soffice() -> str | None:
    return shutil.which("soffice") or shutil.which("libreoffice")


def _no_converter(name: str, settings: ExtractSettings) -> ConverterUnavailable:
    why = {
        "off": "RAGD_EXTRACT__OFFICE_CONVERTER is off",
        "libreoffice": "LibreOffice is not installed (no soffice on PATH)",
        "gotenberg": "RAGD_EXTRACT__GOTENBERG_URL is not set",
    }.get(
        settings.office_converter, "LibreOffice is not installed and RAGD_EXTRACT__GOTENBERG_URL is not set"
    )
    return ConverterUnavailable(
        f"{name!r} must be converted to PDF pages and there is no converter: {why}",
        hint="install LibreOffice (apt-get install libreoffice-core libreoffice-writer libreoffice-calc "
        "libreoffice-impress) or set RAGD_EXTRACT__GOTENBERG_URL to a Gotenberg service",
    )


def _libreoffice(data: bytes, file_type: FileType, name: str, seconds: float, limit: int) -> bytes:
    program = _soffice()
    if program is None:
        raise ConverterUnavailable(f"LibreOffice disappeared while converting {name!r}")
    with tempfile.TemporaryDirectory(prefix="ragd-office-") as tmp:
        folder = Path(tmp)
        source = folder / f"document{_SUFFIX[file_type.kind]}"
        source.write_bytes(data)
        command = [
            program,
            "--headless",
            "--norestore",
            "--nologo",
            "--nolockcheck",
            "--nodefault",
            "--nofirststartwizard",
            f"-env:UserInstallation={(folder / 'profile').as_uri()}",
            "--convert-to",
            "pdf",
            "--outdir",
            str(folder / "out"),
            str(source),
        ]
        env = {**os.environ, "HOME": str(folder)}
        log = folder / "soffice.log"  # a file, not a pipe: nothing to drain from a killed group
        with log.open("wb") as err:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
                env=env,
            )
            try:
                process.wait(timeout=seconds)
            except subprocess.TimeoutExpired:
                raise ExtractionError(
                    f"LibreOffice did not convert {name!r} to PDF within {seconds:g} s",
                    hint="raise RAGD_EXTRACT__TIMEOUT_S, or split the file",
                ) from None
            finally:
                _kill_group(process)
        pdf = folder / "out" / "document.pdf"
        if not pdf.is_file():
            said = " ".join(log.read_text("utf-8", "replace").split())[-300:]
            raise ExtractionError(
                f"LibreOffice could not convert {name!r} to PDF (exit status {process.returncode}): {said}",
                hint="the file may be corrupt: open it in its application and save it again",
            )
        if pdf.stat().st_size > limit:
            raise _too_large(name, limit)
        return pdf.read_bytes()


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill what is left of LibreOffice's process group (soffice starts soffice.bin)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    if process.poll() is None:
        process.kill()
    process.wait()


def _gotenberg(data: bytes, file_type: FileType, name: str, url: str, seconds: float, limit: int) -> bytes:
    endpoint = f"{url}/forms/libreoffice/convert"
    files = {"files": (f"document{_SUFFIX[file_type.kind]}", data, file_type.mime)}
    try:
        with httpx.stream("POST", endpoint, files=files, timeout=seconds) as response:
            if response.status_code >= 500:
                raise ConverterUnavailable(
                    f"the Gotenberg service answered HTTP {response.status_code} converting {name!r}",
                    hint="check the Gotenberg service's logs",
                )
            if response.status_code != 200:
                raise ExtractionError(
                    f"Gotenberg could not convert {name!r} to PDF (HTTP {response.status_code})",
                    hint="the file may be corrupt: open it in its application and save it again",
                )
            return _read_capped(response, name, limit)
    except httpx.TimeoutException as exc:
        raise ExtractionError(
            f"Gotenberg did not convert {name!r} to PDF within {seconds:g} s",
            hint="raise RAGD_EXTRACT__TIMEOUT_S, or split the file",
        ) from exc
    except httpx.HTTPError as exc:
        raise ConverterUnavailable(
            f"the Gotenberg service at {url} cannot be reached ({type(exc).__name__}) to convert {name!r}",
            hint="check RAGD_EXTRACT__GOTENBERG_URL and that the service is up",
        ) from exc


def _read_capped(response: httpx.Response, name: str, limit: int) -> bytes:
    body = bytearray()
    for chunk in response.iter_bytes(_CHUNK):
        body += chunk
        if len(body) > limit:
            raise _too_large(name, limit)
    return bytes(body)


def _too_large(name: str, limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"the PDF of {name!r} is over {limit:,} bytes",
        hint="split the file, or raise RAGD_EXTRACT__MAX_FILE_BYTES",
    )
