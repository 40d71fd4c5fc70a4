"""A .docx package's own text, text boxes and drawing shapes included: the exact words of a
diagram drawn in Word, which text readers leave out or scatter.

``word/document.xml`` is read as a stream of parser events (no tree is built, so a package of a
million shapes costs its text, not its XML): every paragraph (``w:p``), in the body or inside a
shape's text box (``w:txbxContent``), becomes one line of its runs' text (``w:t``; a tab or a
line break inside a box is a space).  A text box Word wrote twice (the DrawingML shape and its
VML fallback in ``mc:AlternateContent``) is read once: ``mc:Fallback`` is skipped.  A text box's
lines come before the line of the paragraph it is anchored in.
"""

from __future__ import annotations

import io
import zipfile
from xml.etree import ElementTree

from ragd.errors import ExtractionError

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_PARAGRAPH = f"{_W}p"
_TEXT = f"{_W}t"
_SPACES = frozenset({f"{_W}tab", f"{_W}br", f"{_W}cr"})
_FALLBACK = f"{_MC}Fallback"
_BLOCK = 1 << 16


def docx_lines(data: bytes, source: str) -> list[str]:
    """Every non-blank paragraph of the package's main document, as one line each."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package, package.open("word/document.xml") as part:
            target = _Lines()
            parser = ElementTree.XMLParser(target=target)
            while block := part.read(_BLOCK):
                parser.feed(block)
            parser.close()
    except (zipfile.BadZipFile, KeyError, ElementTree.ParseError, OSError, ValueError) as exc:
        raise ExtractionError(
            f"could not read the text of {source!r} as a Word package: {exc}",
            hint="the file may be corrupt: open it in Word and save it again",
        ) from exc
    return target.lines


class _Lines:
    """A parser target: collects paragraph lines as their elements close."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._open: list[list[str]] = []  # the text of each open paragraph, innermost last
        self._fallback = 0
        self._in_text = False

    def start(self, tag: str, _attrib: dict[str, str]) -> None:
        if tag == _FALLBACK:
            self._fallback += 1
        elif self._fallback:
            return
        elif tag == _PARAGRAPH:
            self._open.append([])
        elif tag == _TEXT:
            self._in_text = True
        elif tag in _SPACES and self._open:
            self._open[-1].append(" ")

    def end(self, tag: str) -> None:
        if tag == _FALLBACK:
            self._fallback -= 1
        elif self._fallback:
            return
        elif tag == _TEXT:
            self._in_text = False
        elif tag == _PARAGRAPH and self._open and (line := " ".join("".join(self._open.pop()).split())):
            self.lines.append(line)

    def data(self, text: str) -> None:
        if self._in_text and not self._fallback and self._open:
            self._open[-1].append(text)

    def close(self) -> None:
        return None
