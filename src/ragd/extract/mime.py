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
    DOC = "DOC (Word 97-2003)"
    PPT = "PPT (PowerPoint 97-2003)"
    RTF = "RTF"
    ODT = "ODT"
    ODS = "ODS"
    ODP = "ODP"
    EPUB = "EPUB"
    EML = "EML e-mail"
    MSG = "MSG (Outlook e-mail)"
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
_ODT = "application/vnd.oasis.opendocument.text"
_ODS = "application/vnd.oasis.opendocument.spreadsheet"
_ODP = "application/vnd.oasis.opendocument.presentation"
_RTF = "application/rtf"

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
    "application/msword": FileKind.DOC,
    "application/vnd.ms-powerpoint": FileKind.PPT,
    _RTF: FileKind.RTF,
    "text/rtf": FileKind.RTF,
    _ODT: FileKind.ODT,
    _ODS: FileKind.ODS,
    _ODP: FileKind.ODP,
    "application/epub+zip": FileKind.EPUB,
    "message/rfc822": FileKind.EML,
    "application/vnd.ms-outlook": FileKind.MSG,
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
_CODE_NAMES = frozenset({"dockerfile", "makefile"})
_TEXT_NAMES = {*_CODE_NAMES, "readme", "license", "changelog", "notice", "authors", "copying"}

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
    ".doc": FileType(FileKind.DOC, "application/msword"),
    ".ppt": FileType(FileKind.PPT, "application/vnd.ms-powerpoint"),
    ".rtf": FileType(FileKind.RTF, _RTF),
    ".odt": FileType(FileKind.ODT, _ODT),
    ".ods": FileType(FileKind.ODS, _ODS),
    ".odp": FileType(FileKind.ODP, _ODP),
    ".msg": FileType(FileKind.MSG, "application/vnd.ms-outlook"),
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
_OLE = (FileKind.XLS, FileKind.DOC, FileKind.PPT, FileKind.MSG)
_ODF = (FileKind.ODT, FileKind.ODS, FileKind.ODP, FileKind.EPUB)
#: Kinds that are zip packages (their unpacked size is checked before they are read).
ZIP_KINDS = frozenset({*_OOXML, *_ODF})
_BINARY = frozenset({FileKind.PDF, FileKind.IMAGE, FileKind.RTF, *_OOXML, *_OLE, *_ODF})
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")
# The directory entry (UTF-16 stream name) that says what an OLE2 compound file holds.
_OLE_STREAMS = (
    ("Workbook".encode("utf-16-le"), FileKind.XLS),
    ("Book".encode("utf-16-le") + b"\x00\x00", FileKind.XLS),
    ("WordDocument".encode("utf-16-le"), FileKind.DOC),
    ("PowerPoint Document".encode("utf-16-le"), FileKind.PPT),
    ("__substg1.0_".encode("utf-16-le"), FileKind.MSG),
)
_RTF_MAGIC = b"{\\rtf"
_HEAD = 8192
_JATS_HINT = re.compile(rb"<!DOCTYPE\s+article[^>]*JATS|<article\b[^>]*\bdtd-version=", re.IGNORECASE)
_HTML_HINT = re.compile(rb"\s*(?:<!--.*?-->\s*)*<(?:!DOCTYPE\s+html|html|head|body)\b", re.IGNORECASE | re.S)
_ZIP_MEMBERS = (
    ("word/document.xml", FileKind.DOCX),
    ("ppt/presentation.xml", FileKind.PPTX),
    ("xl/workbook.xml", FileKind.XLSX),
)
_MAGIC: tuple[tuple[bytes, FileType], ...] = (
    (b"%PDF-", FileType(FileKind.PDF, "application/pdf")),
    (_RTF_MAGIC, FileType(FileKind.RTF, _RTF)),
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
    FileKind.DOC: "application/msword",
    FileKind.PPT: "application/vnd.ms-powerpoint",
    FileKind.MSG: "application/vnd.ms-outlook",
    FileKind.ODT: _ODT,
    FileKind.ODS: _ODS,
    FileKind.ODP: _ODP,
    FileKind.EPUB: "application/epub+zip",
}
_ODF_MIMETYPES = {_CANONICAL[kind].encode(): kind for kind in _ODF}
# Text files whose name says "prose": bytes that prove a document format (an HTML page saved as .txt)
# are read as that format.  Source code and data keep their name's type whatever they hold.
_PROSE_NAMES = frozenset({".txt", ".text", ""})
# Where extracted text is *meant* to hold markup (source code, data, Markdown, tables, notebooks),
# the markup check (ragd.extract.markup_check) does not apply: see markup_expected.
_READ_AS_PROSE = frozenset({".txt", ".text", ".rst", ".adoc", ".asciidoc", ".org", ".log"})


def supported_kinds() -> str:
    """Human-readable list of what ragd reads, for error messages."""
    return ", ".join(kind.value for kind in FileKind)


def accepted_suffixes() -> list[str]:
    """Every file extension ragd reads (docs/formats.md has a row for each)."""
    return sorted(_BY_SUFFIX)


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

    Order: what the bytes prove when it is a document format other than the name's
    (``{\\rtf`` is RTF whatever the file is called; a PDF named ``.docx`` is a PDF;
    an HTML page saved as ``.txt`` is HTML), then a known extension, then the
    declared MIME type, then "it is text".  Raises :class:`UnsupportedType` for
    files ragd cannot read and :class:`EncryptedDocument` for password-protected
    Office files.
    """
    by_name = file_type_for_name(name)
    if data.startswith(_OLE_MAGIC):
        return _ole_type(name, by_name, declared_mime, data)
    sniffed = sniff(data)
    if by_name and by_name.kind is FileKind.XML and _JATS_HINT.search(data[:_HEAD]):
        return FileType(FileKind.JATS, "application/x-jats+xml")
    if sniffed and by_name and sniffed.kind is not by_name.kind and _content_wins(name, sniffed, by_name):
        return sniffed
    if by_name:
        return by_name
    if sniffed and sniffed.kind is not FileKind.TEXT:
        return sniffed
    found = file_type_for_mime(declared_mime) or sniffed
    if found is None:
        raise _unsupported(name, declared_mime)
    return found


def markup_expected(name: str, kind: FileKind) -> bool:
    """Whether ``kind``'s extracted text is *meant* to look like markup or code.

    True for source code, data files, Markdown, delimited tables and notebooks: they
    are indexed as the source text they are.  False for every document format and
    for prose text files (``.txt``, ``.rst``, ``.org`` …), whose text must read as text.
    """
    if kind in (FileKind.CSV, FileKind.TSV, FileKind.IPYNB):
        return True
    path = PurePath(name)
    if kind is not FileKind.TEXT:
        return False
    if not path.suffix:
        return path.name.lower() in _CODE_NAMES
    return path.suffix.lower() not in _READ_AS_PROSE


def _content_wins(name: str, sniffed: FileType, by_name: FileType) -> bool:
    """Whether the bytes' type overrides the extension's (see :func:`detect`)."""
    if sniffed.kind in _BINARY:
        return True
    prose = by_name.kind is FileKind.TEXT and PurePath(name).suffix.lower() in _PROSE_NAMES
    return prose and sniffed.kind in (FileKind.HTML, FileKind.JATS)


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
    """An OLE2 compound file: legacy Word, Excel, PowerPoint, an Outlook message, or encrypted OOXML.

    The stream names in the file's directory say which; an Outlook message or a Word file
    may embed others (an attached spreadsheet), so the name's kind wins when its stream is
    there, and otherwise the first match in ``_OLE_STREAMS``' order.
    """
    if _ENCRYPTED_PACKAGE in data:
        raise EncryptedDocument(
            f"{name!r} is a password-protected Office document",
            hint="remove the password (save an unprotected copy) and ingest it again",
        )
    present = [kind for stream, kind in _OLE_STREAMS if stream in data]
    if by_name and by_name.kind in present:
        return by_name
    ranked = sorted(present, key=(FileKind.MSG, FileKind.DOC, FileKind.PPT, FileKind.XLS).index)
    if ranked:
        return FileType(ranked[0], _CANONICAL[ranked[0]])
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
