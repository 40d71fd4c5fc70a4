"""Markdown structure the chunkers respect: headings, pipe tables, code fences.

One pass over the lines finds ATX headings (``## Title``), setext headings (a
one-line paragraph underlined with ``===`` or ``---``) and pipe tables (runs
of lines starting with ``|``; the first line is the header row when the
second is a ``|---|`` separator, as the extractor renders CSV/XLSX sheets and
DOCX tables).  Nothing inside a fenced code block counts.  All positions are
character offsets into the text.

Changing what is recognised here changes chunk boundaries: bump every
strategy's ``ALGORITHM_VERSION`` with it.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field

_FENCE = re.compile(r" {0,3}(`{3,}(?=[^`]*$)|~{3,})")
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_TABLE_LINE = re.compile(r" {0,3}\|")
_TABLE_SEPARATOR = re.compile(r" {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_NOT_PARAGRAPH = re.compile(r" {4}| {0,3}(?:[*+-]|\d{1,9}[.)])(?:[ \t]|$)| {0,3}>")
MAX_SETEXT_TITLE = 200


@dataclass(frozen=True, slots=True)
class Heading:
    start: int
    level: int
    title: str


@dataclass(frozen=True, slots=True)
class Table:
    """A pipe table, ``[start, end)`` (``end`` is after the last row's newline).

    ``header`` is the header row (stripped) when the table has a separator
    line; ``body_start`` is where the first data row begins; ``row_starts``
    lists where every data row begins (for a table without header, every line).
    """

    start: int
    end: int
    header: str | None
    body_start: int
    row_starts: tuple[int, ...]

    def in_body(self, offset: int) -> bool:
        return self.body_start <= offset < self.end


@dataclass(frozen=True, slots=True)
class Section:
    """Text from one heading to the next (or the preamble before the first heading).

    ``path`` is the breadcrumb including this section's own heading;
    ``titled`` says the section starts with a heading line of its own.
    """

    start: int
    end: int
    path: tuple[str, ...]
    titled: bool

    @property
    def parents(self) -> tuple[str, ...]:
        """The breadcrumb above this section's own heading."""
        return self.path[:-1] if self.titled else self.path


@dataclass(frozen=True, slots=True)
class Layout:
    headings: tuple[Heading, ...]
    tables: tuple[Table, ...]
    _table_starts: list[int] = field(default_factory=list, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._table_starts.extend(t.start for t in self.tables)

    def table_at(self, offset: int) -> Table | None:
        """The table whose lines hold ``offset``, if any."""
        i = bisect_right(self._table_starts, offset) - 1
        if i >= 0 and offset < self.tables[i].end:
            return self.tables[i]
        return None

    def header_row_at(self, offset: int) -> str | None:
        """The header row of the table whose body holds ``offset`` (None outside a table body)."""
        table = self.table_at(offset)
        return table.header if table is not None and table.in_body(offset) else None

    def tables_within(self, start: int, end: int) -> list[Table]:
        """Tables lying wholly inside ``[start, end)``, in order."""
        first = bisect_right(self._table_starts, start - 1)
        last = bisect_right(self._table_starts, end)
        return [t for t in self.tables[first:last] if t.start >= start and t.end <= end]

    def sections(self, length: int) -> list[Section]:
        """The document cut at every heading; breadcrumbs follow heading levels."""
        out: list[Section] = []
        first = self.headings[0].start if self.headings else length
        if first > 0:
            out.append(Section(0, first, (), titled=False))
        stack: list[tuple[int, str]] = []
        for i, heading in enumerate(self.headings):
            end = self.headings[i + 1].start if i + 1 < len(self.headings) else length
            while stack and stack[-1][0] >= heading.level:
                stack.pop()
            stack.append((heading.level, heading.title))
            path = tuple(title for _, title in stack if title)
            out.append(Section(heading.start, end, path, titled=bool(heading.title)))
        return out


@dataclass(frozen=True, slots=True)
class _Line:
    start: int
    end: int
    text: str


def _lines(text: str) -> Iterator[_Line]:
    pos, length = 0, len(text)
    while pos < length:
        newline = text.find("\n", pos)
        end = length if newline < 0 else newline + 1
        yield _Line(pos, end, text[pos:end].rstrip("\n").rstrip("\r"))
        pos = end


def _table(lines: list[_Line]) -> Table:
    if len(lines) >= 2 and _TABLE_SEPARATOR.match(lines[1].text):
        rows = lines[2:]
        body_start = rows[0].start if rows else lines[-1].end
        header = lines[0].text.strip()
        return Table(lines[0].start, lines[-1].end, header, body_start, tuple(r.start for r in rows))
    return Table(lines[0].start, lines[-1].end, None, lines[0].start, tuple(r.start for r in lines))


def _atx(line: _Line) -> Heading | None:
    match = _ATX.match(line.text)
    if match is None:
        return None
    return Heading(line.start, len(match[1]), (match[2] or "").strip())


class _Parser:
    """Line-by-line state: open fence, table lines so far, the paragraph run above."""

    def __init__(self) -> None:
        self.headings: list[Heading] = []
        self.tables: list[Table] = []
        self.fence: str | None = None
        self.table_lines: list[_Line] = []
        self.paragraph: list[_Line] = []

    def feed(self, line: _Line) -> None:
        if self.fence is not None:
            if line.text.strip().startswith(self.fence) and not line.text.strip().strip(self.fence[0]):
                self.fence = None
            return
        if _TABLE_LINE.match(line.text):
            self.table_lines.append(line)
            self.paragraph = []
            return
        self.flush()
        fence = _FENCE.match(line.text)
        heading = None if fence else _atx(line) or self._setext(line)
        if fence:
            self.fence = fence[1]
        elif heading:
            self.headings.append(heading)
        if fence or heading or not line.text.strip() or _NOT_PARAGRAPH.match(line.text):
            self.paragraph = []
        else:
            self.paragraph.append(line)

    def _setext(self, line: _Line) -> Heading | None:
        if len(self.paragraph) != 1 or not _SETEXT.match(line.text):
            return None
        title = self.paragraph[0].text.strip()
        if len(title) > MAX_SETEXT_TITLE:
            return None
        level = 1 if line.text.strip().startswith("=") else 2
        return Heading(self.paragraph[0].start, level, title)

    def flush(self) -> None:
        if self.table_lines:
            self.tables.append(_table(self.table_lines))
            self.table_lines = []


def parse_layout(text: str) -> Layout:
    """Headings and tables of a Markdown (or plain) text."""
    parser = _Parser()
    for line in _lines(text):
        parser.feed(line)
    parser.flush()
    return Layout(tuple(parser.headings), tuple(parser.tables))
