"""Reading parts of an Office Open XML package (DOCX, PPTX) without trusting what it declares.

The inspection modules (:mod:`ragd.vision.detect`, :mod:`ragd.vision.figures`) read a package's
XML as a stream of events (expat, no tree) and its small parts (relationships, the presentation)
with a byte cap, so a part that declares less than it holds, or a document with a million shapes,
costs bounded memory.  A document type declaration is refused outright: OOXML never has one, and
it is where entity-expansion bombs live.

Every failure to read the package is :class:`PackageUnreadable`; callers turn it into the typed
error of their format (:func:`unreadable`: ``EXTRACTION_FAILED``, as the text extractor reports
a corrupt file).
"""

from __future__ import annotations

import io
import posixpath
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from xml.parsers import expat

from ragd.errors import ExtractionError

#: relationship attributes (transitional and strict namespaces)
R_NS = (
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    "http://purl.oclc.org/ooxml/officeDocument/relationships",
)
_PACKAGE_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
#: the largest small part (relationships, presentation.xml, a slide) read whole
MAX_SMALL_PART = 16 * 1024 * 1024
_CHUNK = 1024 * 1024
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, zlib.error, RuntimeError)
_ZIP_ERRORS_ALL = (*_ZIP_ERRORS, NotImplementedError, KeyError, ValueError)

StartHandler = Callable[[str, dict[str, str]], None]
EndHandler = Callable[[str], None]
TextHandler = Callable[[str], None]


class PackageUnreadable(Exception):
    """The package (or one of its parts) is not a readable zip of well-formed XML."""


class StopReading(Exception):
    """Raised by a handler to end a stream early (a cap was reached); not an error."""


def unreadable(name: str, kind: str, reason: object) -> ExtractionError:
    """The typed error for a corrupt package (the text extractor's code and hint)."""
    return ExtractionError(
        f"could not read {name!r} as {kind}: {str(reason)[:200]}",
        hint="the file may be corrupt or truncated: open it in its application and save it again",
    )


@contextmanager
def open_package(data: bytes) -> Iterator[zipfile.ZipFile]:
    """The zip, or :class:`PackageUnreadable`."""
    try:
        package = zipfile.ZipFile(io.BytesIO(data))
    except _ZIP_ERRORS_ALL as exc:
        raise PackageUnreadable(f"not a zip package ({exc})") from exc
    with package:
        yield package


def read_part(package: zipfile.ZipFile, part: str, limit: int = MAX_SMALL_PART) -> bytes:
    """A part's bytes, at most ``limit`` of them (a longer part is :class:`PackageUnreadable`)."""
    try:
        with package.open(part) as stream:
            body = stream.read(limit + 1)
    except _ZIP_ERRORS_ALL as exc:
        raise PackageUnreadable(f"{part}: {exc}") from exc
    if len(body) > limit:
        raise PackageUnreadable(f"{part} is larger than {limit:,} bytes")
    return body


def stream_part(
    package: zipfile.ZipFile,
    part: str,
    parser: expat.XMLParserType,
    *,
    max_bytes: int,
) -> bool:
    """Feed ``part`` to ``parser`` in chunks; False when ``max_bytes`` or a :class:`StopReading`
    from a handler ended it early, True when the whole part was read."""
    fed = 0
    try:
        with package.open(part) as stream:
            while chunk := stream.read(_CHUNK):
                if fed + len(chunk) > max_bytes:
                    parser.Parse(chunk[: max_bytes - fed], False)
                    return False
                fed += len(chunk)
                parser.Parse(chunk, False)
            parser.Parse(b"", True)
    except StopReading:
        return False
    except expat.ExpatError as exc:
        raise PackageUnreadable(f"{part}: {exc}") from exc
    except _ZIP_ERRORS_ALL as exc:
        raise PackageUnreadable(f"{part}: {exc}") from exc
    return True


def make_parser(start: StartHandler, end: EndHandler, text: TextHandler | None = None) -> Any:
    """A namespace-aware expat parser (names are ``"{uri}local"``) that refuses a DTD."""
    parser = expat.ParserCreate(namespace_separator="}")
    parser.buffer_text = True
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)

    def refuse_dtd(*_: object) -> None:
        raise PackageUnreadable("the XML declares a document type (OOXML never does)")

    parser.StartDoctypeDeclHandler = refuse_dtd
    parser.EntityDeclHandler = refuse_dtd
    parser.StartElementHandler = lambda name, attrs: start(
        _clark(name), {_clark(k): v for k, v in attrs.items()}
    )
    parser.EndElementHandler = lambda name: end(_clark(name))
    if text is not None:
        parser.CharacterDataHandler = text
    return parser


def _clark(name: str) -> str:
    """expat's ``uri}local`` as ElementTree's ``{uri}local``."""
    return "{" + name if "}" in name else name


def parse_small(
    package: zipfile.ZipFile, part: str, start: StartHandler, end: EndHandler | None = None
) -> None:
    """Read a small part whole (:data:`MAX_SMALL_PART`), calling ``start`` (and ``end``) for each
    element."""
    parser = make_parser(start, end or (lambda _name: None))
    try:
        parser.Parse(read_part(package, part), True)
    except expat.ExpatError as exc:
        raise PackageUnreadable(f"{part}: {exc}") from exc


def relationships(package: zipfile.ZipFile, part: str) -> dict[str, str]:
    """``part``'s relationship id -> target part path (internal targets only; none when it has no
    relationships part)."""
    return {rel_id: target for rel_id, _, target in _relationships(package, part)}


def relationship_types(package: zipfile.ZipFile, part: str) -> dict[str, str]:
    """``part``'s relationship type (its last path segment, ``slideLayout``) -> the first target."""
    found: dict[str, str] = {}
    for _, kind, target in _relationships(package, part):
        found.setdefault(kind.rsplit("/", 1)[-1], target)
    return found


def _relationships(package: zipfile.ZipFile, part: str) -> list[tuple[str, str, str]]:
    """(id, type, target part path) of ``part``'s internal relationships (``""``: the package's)."""
    folder, name = posixpath.split(part)
    rels = posixpath.join(folder, "_rels", f"{name}.rels")
    if rels not in package.NameToInfo:
        return []
    found: list[tuple[str, str, str]] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        if tag != f"{{{_PACKAGE_RELS}}}Relationship" or attrs.get("TargetMode") == "External":
            return
        target = attrs.get("Target", "")
        path = target.lstrip("/") if target.startswith("/") else posixpath.join(folder, target)
        found.append((attrs.get("Id", ""), attrs.get("Type", ""), posixpath.normpath(path)))

    parse_small(package, rels, start)
    return found


def main_part(package: zipfile.ZipFile, fallback: str) -> str:
    """The package's main document part (the ``officeDocument`` relationship), else ``fallback``."""
    target = relationship_types(package, "").get("officeDocument")
    return target if target and target in package.NameToInfo else fallback


def r_attr(attrs: dict[str, str], local: str) -> str:
    """A relationship attribute (``r:embed``, ``r:id``) in either namespace, ``""`` when absent."""
    for ns in R_NS:
        value = attrs.get(f"{{{ns}}}{local}")
        if value:
            return value
    return ""
