"""Speaker notes of a PPTX, read from the package itself.

kreuzberg 4.10.4 drops speaker notes from its Markdown output, and notes often
hold the words a presenter actually says.  This module reads them with the
standard library (zip + ElementTree; parts over a size cap are skipped) in
presentation order and appends each slide's notes to that slide's text.
Reading notes is best-effort: a package this module cannot follow yields no notes.
"""

from __future__ import annotations

import io
import logging
import posixpath
import zipfile
from collections.abc import Sequence
from xml.etree import ElementTree

logger = logging.getLogger(__name__)

_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_MAX_PART_BYTES = 16 * 1024 * 1024
NOTES_LABEL = "Speaker notes:"


def read_speaker_notes(data: bytes) -> list[str]:
    """The speaker notes of every slide in presentation order (``""`` for none)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            return [_notes_of(package, slide) for slide in _slide_parts(package)]
    except (zipfile.BadZipFile, KeyError, ElementTree.ParseError, ValueError) as exc:
        logger.debug("speaker notes unreadable: %s", exc)
        return []


def with_notes(slides: Sequence[str], notes: Sequence[str]) -> list[str]:
    """Each slide's text followed by its notes paragraph, when it has notes."""
    merged = []
    for index, body in enumerate(slides):
        note = notes[index] if index < len(notes) else ""
        parts = [part for part in (body.strip(), f"{NOTES_LABEL} {note}" if note else "") if part]
        merged.append("\n\n".join(parts))
    return merged


def _slide_parts(package: zipfile.ZipFile) -> list[str]:
    presentation = _xml(package, "ppt/presentation.xml")
    targets = _relationships(package, "ppt/presentation.xml")
    slide_ids = presentation.iter(f"{_P}sldId")
    return [targets[sid.attrib[f"{_R}id"]][0] for sid in slide_ids]


def _notes_of(package: zipfile.ZipFile, slide: str) -> str:
    related = _relationships(package, slide).values()
    notes = [target for target, kind in related if kind.endswith("/notesSlide")]
    if not notes:
        return ""
    paragraphs = []
    for shape in _xml(package, notes[0]).iter(f"{_P}sp"):
        placeholder = shape.find(f"{_P}nvSpPr/{_P}nvPr/{_P}ph")
        if placeholder is None or placeholder.get("type") != "body":
            continue
        for paragraph in shape.iter(f"{_A}p"):
            line = "".join(run.text or "" for run in paragraph.iter(f"{_A}t")).strip()
            if line:
                paragraphs.append(line)
    return "\n".join(paragraphs)


def _relationships(package: zipfile.ZipFile, part: str) -> dict[str, tuple[str, str]]:
    """Relationship id -> (target part path, relationship type) of ``part``."""
    folder, name = posixpath.split(part)
    try:
        root = _xml(package, posixpath.join(folder, "_rels", f"{name}.rels"))
    except KeyError:
        return {}
    out = {}
    for rel in root.iter(f"{_REL}Relationship"):
        target = posixpath.normpath(posixpath.join(folder, rel.get("Target", ""))).lstrip("/")
        out[rel.get("Id", "")] = (target, rel.get("Type", ""))
    return out


def _xml(package: zipfile.ZipFile, part: str) -> ElementTree.Element:
    if package.getinfo(part).file_size > _MAX_PART_BYTES:
        raise ValueError(f"{part} is larger than {_MAX_PART_BYTES} bytes")
    return ElementTree.fromstring(package.read(part))
