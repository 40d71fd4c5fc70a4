"""What kind of file a blob is: by extension, declared MIME type, then magic bytes.

The kind picks the extractor (see :mod:`ragd.extract.router`) and how it reads the
file.  Detection never trusts one signal blindly: a known extension wins, a declared
MIME type helps when the name says nothing, and the first bytes settle the rest
(PDF, images, Office/ODF/EPUB zips, OLE files, text).
"""

from __future__ import annotations

import enum
import io
import re
import zipfile
from dataclasses import dataclass
from pathlib import PurePath

from ragd.errors import EncryptedDocument, UnsupportedType


class FileKind(enum.Enum):
    TEXT = "plain text, Markdown or source code"
    CSV = "CSV"
    TSV = "TSV"
    HTML = "HTML"
    PDF = "PDF"
    DOCX = "DOCX"
    PPTX = "PPTX"
    XLSX = "XLSX"
    XLS = "XLS"
    ODT = "ODT"
    EPUB = "EPUB"
    EML = "EML e-mail"
    IPYNB = "Jupyter notebook"
    JATS = "JATS XML"
    XML = "XML"
    IMAGE = "image (OCR)"


@dataclass(frozen=True, slots=True)
class FileType:
    kind: FileKind
    mime: str


_DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
_PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
_XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

_BY_MIME: dict[str, FileKind] = {
    "text/plain": FileKind.TEXT,
    "text/markdown": FileKind.TEXT,
    "text/x-markdown": FileKind.TEXT,
    "text/csv": FileKind.CSV,
    "text/tab-separated-values": FileKind.TSV,
    "text/html": FileKind.HTML,
    "application/xhtml+xml": FileKind.HTML,
    "application/pdf": FileKind.PDF,
    _DOCX: FileKind.DOCX,
    _PPTX: FileKind.PPTX,
    _XLSX: FileKind.XLSX,
    "application/vnd.ms-excel": FileKind.XLS,
    "application/vnd.oasis.opendocument.text": FileKind.ODT,
    "application/epub+zip": FileKind.EPUB,
    "message/rfc822": FileKind.EML,
    "application/x-ipynb+json": FileKind.IPYNB,
    "application/x-jats+xml": FileKind.JATS,
    "application/xml": FileKind.XML,
    "text/xml": FileKind.XML,
    "image/png": FileKind.IMAGE,
    "image/jpeg": FileKind.IMAGE,
    "image/tiff": FileKind.IMAGE,
    "image/gif": FileKind.IMAGE,
    "image/bmp": FileKind.IMAGE,
    "image/webp": FileKind.IMAGE,
}

_PROSE = (".txt", ".text", ".md", ".markdown", ".mdown", ".rst", ".adoc", ".asciidoc", ".org", ".tex", ".log")
_DATA = (".json", ".jsonl", ".ndjson", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".env")
_COMPILED = (".java", ".kt", ".kts", ".scala", ".go", ".rs", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".cs")
_SCRIPTS = (".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".rb", ".php", ".pl", ".pm", ".lua")
_MORE_CODE = (".swift", ".m", ".r", ".jl", ".hs", ".ml", ".ex", ".exs", ".erl", ".clj", ".dart", ".sql")
_BUILD = (".sh", ".bash", ".zsh", ".fish", ".ps1", ".bat", ".tf", ".gradle", ".cmake", ".mk")
_WEB = (".vue", ".svelte", ".css", ".scss", ".less", ".graphql", ".proto", ".diff", ".patch", ".srt")
_TEXT_SUFFIXES = _PROSE + _DATA + _COMPILED + _SCRIPTS + _MORE_CODE + _BUILD + _WEB
_TEXT_NAMES = {"dockerfile", "makefile", "readme", "license", "changelog", "notice", "authors", "copying"}

_BY_SUFFIX: dict[str, FileType] = {
    **{s: FileType(FileKind.TEXT, "text/plain") for s in _TEXT_SUFFIXES},
    ".md": FileType(FileKind.TEXT, "text/markdown"),
    ".markdown": FileType(FileKind.TEXT, "text/markdown"),
    ".csv": FileType(FileKind.CSV, "text/csv"),
    ".tsv": FileType(FileKind.TSV, "text/tab-separated-values"),
    ".tab": FileType(FileKind.TSV, "text/tab-separated-values"),
    ".html": FileType(FileKind.HTML, "text/html"),
    ".htm": FileType(FileKind.HTML, "text/html"),
    ".xhtml": FileType(FileKind.HTML, "application/xhtml+xml"),
    ".pdf": FileType(FileKind.PDF, "application/pdf"),
    ".docx": FileType(FileKind.DOCX, _DOCX),
    ".pptx": FileType(FileKind.PPTX, _PPTX),
    ".xlsx": FileType(FileKind.XLSX, _XLSX),
    ".xls": FileType(FileKind.XLS, "application/vnd.ms-excel"),
    ".odt": FileType(FileKind.ODT, "application/vnd.oasis.opendocument.text"),
    ".epub": FileType(FileKind.EPUB, "application/epub+zip"),
    ".eml": FileType(FileKind.EML, "message/rfc822"),
    ".ipynb": FileType(FileKind.IPYNB, "application/x-ipynb+json"),
    ".nxml": FileType(FileKind.JATS, "application/x-jats+xml"),
    ".xml": FileType(FileKind.XML, "application/xml"),
    ".png": FileType(FileKind.IMAGE, "image/png"),
    ".jpg": FileType(FileKind.IMAGE, "image/jpeg"),
    ".jpeg": FileType(FileKind.IMAGE, "image/jpeg"),
    ".tif": FileType(FileKind.IMAGE, "image/tiff"),
    ".tiff": FileType(FileKind.IMAGE, "image/tiff"),
    ".gif": FileType(FileKind.IMAGE, "image/gif"),
    ".bmp": FileType(FileKind.IMAGE, "image/bmp"),
    ".webp": FileType(FileKind.IMAGE, "image/webp"),
}

_OOXML = (FileKind.DOCX, FileKind.PPTX, FileKind.XLSX)
_BINARY = frozenset({FileKind.PDF, FileKind.IMAGE, *_OOXML, FileKind.XLS, FileKind.ODT, FileKind.EPUB})
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")
_XLS_WORKBOOK = "Workbook".encode("utf-16-le")
_HEAD = 8192
_JATS_HINT = re.compile(rb"<!DOCTYPE\s+article[^>]*JATS|<article\b[^>]*\bdtd-version=", re.IGNORECASE)
_HTML_HINT = re.compile(rb"\s*(?:<!--.*?-->\s*)*<(?:!DOCTYPE\s+html|html|head|body)\b", re.IGNORECASE | re.S)
_ZIP_MEMBERS = (
    ("word/document.xml", FileKind.DOCX),
    ("ppt/presentation.xml", FileKind.PPTX),
    ("xl/workbook.xml", FileKind.XLSX),
)
_ODF_MIMETYPES = {
    b"application/vnd.oasis.opendocument.text": FileKind.ODT,
    b"application/epub+zip": FileKind.EPUB,
}
_MAGIC: tuple[tuple[bytes, FileType], ...] = (
    (b"%PDF-", FileType(FileKind.PDF, "application/pdf")),
    (b"\x89PNG\r\n\x1a\n", FileType(FileKind.IMAGE, "image/png")),
    (b"\xff\xd8\xff", FileType(FileKind.IMAGE, "image/jpeg")),
    (b"II*\x00", FileType(FileKind.IMAGE, "image/tiff")),
    (b"MM\x00*", FileType(FileKind.IMAGE, "image/tiff")),
    (b"GIF8", FileType(FileKind.IMAGE, "image/gif")),
)
_CANONICAL: dict[FileKind, str] = {
    FileKind.DOCX: _DOCX,
    FileKind.PPTX: _PPTX,
    FileKind.XLSX: _XLSX,
    FileKind.XLS: "application/vnd.ms-excel",
    FileKind.ODT: "application/vnd.oasis.opendocument.text",
    FileKind.EPUB: "application/epub+zip",
}


def supported_kinds() -> str:
    """Human-readable list of what ragd reads, for error messages."""
    return ", ".join(kind.value for kind in FileKind)


def file_type_for_mime(mime: str | None) -> FileType | None:
    """The type a (declared) MIME type names, or None when ragd doesn't know it."""
    if not mime:
        return None
    base = mime.split(";", 1)[0].strip().lower()
    kind = _BY_MIME.get(base)
    if kind is None and (base.startswith("text/") or base == "application/json"):
        kind = FileKind.TEXT
    return FileType(kind, base) if kind else None


def file_type_for_name(name: str) -> FileType | None:
    """The type a file name's extension names (or a well-known extension-less name)."""
    path = PurePath(name)
    found = _BY_SUFFIX.get(path.suffix.lower())
    if found is None and not path.suffix and path.name.lower() in _TEXT_NAMES:
        found = FileType(FileKind.TEXT, "text/plain")
    return found


def detect(name: str, declared_mime: str | None, data: bytes) -> FileType:
    """Decide a file's type from its name, declared MIME type and bytes.

    Order: a known extension (unless the bytes prove another binary format), then
    what the magic bytes prove, then the declared MIME type, then "it is text".
    Raises :class:`UnsupportedType` for files ragd cannot read and
    :class:`EncryptedDocument` for password-protected Office files.
    """
    by_name = file_type_for_name(name)
    if data.startswith(_OLE_MAGIC):
        return _ole_type(name, by_name, declared_mime, data)
    sniffed = sniff(data)
    if by_name and by_name.kind is FileKind.XML and _JATS_HINT.search(data[:_HEAD]):
        return FileType(FileKind.JATS, "application/x-jats+xml")
    if by_name and not (sniffed and sniffed.kind in _BINARY and sniffed.kind is not by_name.kind):
        return by_name
    if sniffed and sniffed.kind is not FileKind.TEXT:
        return sniffed
    found = file_type_for_mime(declared_mime) or sniffed
    if found is None:
        raise _unsupported(name, declared_mime)
    return found


def sniff(data: bytes) -> FileType | None:
    """The type the bytes prove, or None when they prove nothing."""
    head = data[:_HEAD]
    for prefix, found in _MAGIC:
        if head.startswith(prefix):
            return found
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return FileType(FileKind.IMAGE, "image/webp")
    if head.startswith(b"PK\x03\x04"):
        return _sniff_zip(data)
    if _HTML_HINT.match(head[:2048]):
        return FileType(FileKind.HTML, "text/html")
    if _JATS_HINT.search(head):
        return FileType(FileKind.JATS, "application/x-jats+xml")
    if head and b"\x00" not in head and _looks_like_text(head):
        return FileType(FileKind.TEXT, "text/plain")
    return None


def _ole_type(name: str, by_name: FileType | None, declared_mime: str | None, data: bytes) -> FileType:
    """An OLE2 compound file: legacy Excel, or an encrypted OOXML package."""
    if _ENCRYPTED_PACKAGE in data:
        raise EncryptedDocument(
            f"{name!r} is a password-protected Office document",
            hint="remove the password (save an unprotected copy) and ingest it again",
        )
    if by_name and by_name.kind is FileKind.XLS:
        return by_name
    if _XLS_WORKBOOK in data:
        return FileType(FileKind.XLS, _CANONICAL[FileKind.XLS])
    raise _unsupported(name, declared_mime)


def _unsupported(name: str, declared_mime: str | None) -> UnsupportedType:
    return UnsupportedType(
        f"{name!r} is not a file type ragd can read (declared type: {declared_mime or 'none'})",
        hint=f"supported: {supported_kinds()}",
    )


def _sniff_zip(data: bytes) -> FileType | None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            for member, kind in _ZIP_MEMBERS:
                if member in names:
                    return FileType(kind, _CANONICAL[kind])
            if "mimetype" in names:
                kind_or_none = _ODF_MIMETYPES.get(archive.read("mimetype")[:100].strip())
                return FileType(kind_or_none, _CANONICAL[kind_or_none]) if kind_or_none else None
    except (zipfile.BadZipFile, KeyError, OSError):
        return None
    return None


def _looks_like_text(head: bytes) -> bool:
    control = sum(1 for b in head if b < 9 or 13 < b < 32 or b == 127)
    return control <= len(head) // 100
