"""Pure text repairs for three measured faults of kreuzberg 4.10.4's readers.

* HTML to Markdown starts with a broken metadata header: ``---``, ``key: value``
  lines, and the closing ``---`` turned into a setext heading (``## title: …``).
  :func:`strip_html_front_matter` removes that block; the title is kept in
  ``Document.meta`` instead.
* The JATS reader drops every entity and character reference (``Kr&#x000fc;ppel``
  comes out as ``Kr ppel``).  :func:`inline_char_refs` replaces numeric references
  with their characters before kreuzberg parses the XML, except ``<``, ``&`` and
  quotes, which XML needs escaped (in text or attributes): those stay lost.
* The Word 97-2003 (DOC) reader writes a whole table on one line: each cell
  followed by a tab, each row by one more (``a\tb\t\tc\td\t\t``), and its
  Markdown mode escapes the tabs as ``&#9;`` on one run-on paragraph.  ragd reads
  DOC as plain text and :func:`word_table_rows` turns such a line back into a
  Markdown table, one row per line.

And one repair of its Markdown tables: cells are padded with spaces (and separator rows with
dashes) to line the columns up, so a wide table of short numbers is mostly blanks and dashes,
which take the model's window: the Wikipedia page's revenue table spent 254-token chunks on a few
rows each, and the row a question asks for landed in a chunk without the header that names its
columns.  :func:`compact_tables` takes the padding out (``| a | b |``, ``| --- | --- |``).
"""

from __future__ import annotations

import re

_FRONT_MATTER = re.compile(r"\A---\n(?:[\w.:-]+:[^\n]*\n|\n)*## [\w.:-]+:[^\n]*(?:\n+|\Z)")
_CHAR_REF = re.compile(r"&#(?:[xX]([0-9a-fA-F]{1,6})|([0-9]{1,7}));")
_KEEP_ESCAPED = frozenset("<&\"'")
_MAX_COLUMNS = 64


def strip_html_front_matter(markdown: str) -> str:
    """``markdown`` without kreuzberg's leading metadata block (unchanged when there is none)."""
    return _FRONT_MATTER.sub("", markdown, count=1)


def inline_char_refs(xml: str) -> str:
    """Numeric character references replaced by their characters (XML specials and controls kept)."""

    def replace(match: re.Match[str]) -> str:
        hex_digits, decimal = match.groups()
        code = int(hex_digits, 16) if hex_digits else int(decimal)
        if code > 0x10FFFF or (code < 0x20 and code not in (0x9, 0xA, 0xD)) or 0xD800 <= code <= 0xDFFF:
            return match.group()
        char = chr(code)
        return match.group() if char in _KEEP_ESCAPED else char

    return _CHAR_REF.sub(replace, xml)


_TABLE_ROW = re.compile(r"^[ \t]*\|.*\|[ \t]*$")
_SEPARATOR_CELL = re.compile(r"^(:?)-{3,}(:?)$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def compact_tables(text: str) -> str:
    """``text`` with its Markdown table rows unpadded: one space around each cell, ``---`` rules."""
    if "|" not in text:
        return text
    return "\n".join(_compact_row(line) if _TABLE_ROW.match(line) else line for line in text.split("\n"))


def _compact_row(line: str) -> str:
    cells = [" ".join(cell.split()) for cell in _CELL_SPLIT.split(line.strip())[1:-1]]
    cells = [
        f"{rule.group(1)}---{rule.group(2)}" if (rule := _SEPARATOR_CELL.match(cell)) else cell
        for cell in cells
    ]
    return "| " + " | ".join(cells) + " |" if cells else line


def word_table_rows(text: str) -> str:
    """``text`` with every line that holds a Word table (see the module docstring) as Markdown rows."""
    return "\n".join(_table_or_line(line) if "\t\t" in line else line for line in text.split("\n"))


def _table_or_line(line: str) -> str:
    """A Markdown table when the line's tab-separated cells group into 2+ rows of 2+ equal cells."""
    cells = [cell.strip() for cell in line.rstrip("\t").split("\t")]
    for padding in (1, 2):  # the row mark after the last row, and maybe an empty last cell
        padded = cells + [""] * padding
        for width in range(2, min(_MAX_COLUMNS, len(padded) // 2 - 1) + 1):
            rows = [padded[i : i + width + 1] for i in range(0, len(padded), width + 1)]
            if len(padded) % (width + 1) == 0 and all(row[-1] == "" for row in rows):
                return _markdown([row[:-1] for row in rows])
    return line


def _markdown(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    lines.insert(1, "| " + " | ".join(["---"] * len(rows[0])) + " |")
    return "\n".join(lines)
