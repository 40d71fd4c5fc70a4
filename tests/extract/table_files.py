"""Files holding tables, for the table tests: a PDF drawing ruled tables (written by hand, as a
word processor draws them: a stroked rectangle per cell, the text inside), and one long table of
people in DOCX, XLSX, HTML and PDF, with a row to ask about in its middle."""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

from tests.extract.builders import (
    _OOXML,
    _content_types,
    _pdf_string,
    _relationships,
    _stream,
    _zip,
    build_docx,
    build_xlsx,
    write_pdf,
)

#: a cell covered by the merged cell to its left
LEFT = None
#: a cell covered by the merged cell above it
UP = "^"

FONT_SIZE = 8
ROW_HEIGHT = 12.0
PAGE_WIDTH, PAGE_HEIGHT = 612, 792

Cell = str | None


@dataclass
class Table:
    """A table to draw: its top-left corner, column widths, and rows (:data:`LEFT`/:data:`UP`
    mark cells a merged cell covers; ``\\n`` in a cell draws a second line).  Without ``ruled``
    columns, only the outer frame and the lines between rows are drawn."""

    x: float
    top: float
    widths: list[float]
    rows: list[list[Cell]]
    row_height: float = ROW_HEIGHT
    ruled_columns: bool = True
    #: text ``(x, y, text)`` drawn (outside the table) after the first row's cells and before the rest
    aside: tuple[float, float, str] | None = None


@dataclass
class Page:
    """Text lines ``(x, y, text)`` and tables, drawn in this order (text first)."""

    lines: list[tuple[float, float, str]] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    after: list[tuple[float, float, str]] = field(default_factory=list)


def table_pdf(pages: list[Page]) -> bytes:
    """A PDF of ``pages`` (US Letter, Helvetica)."""
    count = len(pages)
    font = 3 + 2 * count
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(count))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {count} >>".encode(),
    ]
    for index, page in enumerate(pages):
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {PAGE_WIDTH} {PAGE_HEIGHT}] /Contents {4 + 2 * index} 0 R"
            f" /Resources << /Font << /F1 {font} 0 R >> >> >>".encode()
        )
        objects.append(_stream(_content(page)))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    return write_pdf(objects)


def _content(page: Page) -> bytes:
    ops = [_text(x, y, text, 10) for x, y, text in page.lines]
    for table in page.tables:
        ops.extend(_table(table))
    ops.extend(_text(x, y, text, 10) for x, y, text in page.after)
    return b"\n".join(ops)


def _text(x: float, y: float, text: str, size: int = FONT_SIZE) -> bytes:
    return b"BT /F1 %d Tf %.2f %.2f Td (" % (size, x, y) + _pdf_string(text) + b") Tj ET"


def _table(table: Table) -> list[bytes]:
    """Text cell by cell, row by row (as word processors write it), then the rules (a stroked
    rectangle per cell)."""
    edges = [table.x]
    for width in table.widths:
        edges.append(edges[-1] + width)
    rows, cols = len(table.rows), len(table.widths)
    text: list[bytes] = []
    rules: list[bytes] = []
    for r in range(rows):
        for c in range(cols):
            value = table.rows[r][c]
            if value is LEFT or value == UP:
                continue
            right = c + 1
            while right < cols and table.rows[r][right] is LEFT:
                right += 1
            bottom = r + 1
            while bottom < rows and table.rows[bottom][c] == UP:
                bottom += 1
            top = table.top - r * table.row_height
            low = table.top - bottom * table.row_height
            for j, line in enumerate(value.split("\n")):
                text.append(_text(edges[c] + 3, top - 9 - j * (FONT_SIZE + 1), line))
            if table.ruled_columns:
                rules.append(
                    b"%.2f %.2f %.2f %.2f re S" % (edges[c], low, edges[right] - edges[c], top - low)
                )
        if r == 0 and table.aside is not None:
            text.append(_text(*table.aside))
    if not table.ruled_columns:
        bottom_y = table.top - rows * table.row_height
        for r in range(rows + 1):
            y = table.top - r * table.row_height
            rules.append(b"%.2f %.2f m %.2f %.2f l S" % (edges[0], y, edges[-1], y))
        for x in (edges[0], edges[-1]):
            rules.append(b"%.2f %.2f m %.2f %.2f l S" % (x, table.top, x, bottom_y))
    return [*text, b"0.5 w", *rules]


# --- one long table of people, in every format -----------------------------------------------

HEADER = ["Employee", "Department", "Office", "Badge", "Start year"]
#: the row asked about: deep in the table (past its second chunk in every format)
ASKED_ROW = 27
ASKED = ["Marguerite Okonkwo", "Cartography", "Reykjavik", "K-7731", "2014"]
QUESTION = "In which office does Marguerite Okonkwo of the cartography department work?"
ANSWER = "Reykjavik"

_DEPARTMENTS = ["Finance", "Legal", "Payroll", "Facilities", "Procurement", "Audit"]
_OFFICES = ["Leeds", "Lyon", "Porto", "Graz", "Turin", "Ghent", "Aarhus"]


def people(count: int = 60) -> list[list[str]]:
    """The table's rows, header first: plain filler rows and :data:`ASKED` at :data:`ASKED_ROW`."""
    rows = [
        [f"Person {i:02d}", _DEPARTMENTS[i % 6], _OFFICES[i % 7], f"B-{1000 + i}", str(2000 + i % 20)]
        for i in range(count)
    ]
    rows[ASKED_ROW] = list(ASKED)
    return [HEADER, *rows]


INTRO = "The staff directory lists every employee with the office they work in."


def people_docx() -> bytes:
    return build_docx([("h1", "Staff directory"), ("p", INTRO), ("table", people())])


def people_xlsx() -> bytes:
    return build_xlsx({"Staff directory": people()})  # type: ignore[dict-item]


def people_html() -> bytes:
    head, *body = people()
    cells = "".join(f"<th>{escape(c)}</th>" for c in head)
    rows = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in body)
    return (
        "<!DOCTYPE html><html><head><title>Staff directory</title></head><body><h1>Staff directory</h1>"
        f"<p>{escape(INTRO)}</p><table><thead><tr>{cells}</tr></thead><tbody>{rows}</tbody></table>"
        "</body></html>"
    ).encode()


def people_pdf() -> bytes:
    """The table over two pages (the header drawn on the first only, as when it is not set to
    repeat), under a title."""
    rows = people()
    widths = [120.0, 90.0, 80.0, 60.0, 60.0]
    first = Page(
        lines=[(72, 740, "Staff directory"), (72, 722, INTRO)],
        tables=[Table(72, 700, widths, [list(r) for r in rows[:41]])],
    )
    second = Page(tables=[Table(72, 740, widths, [list(r) for r in rows[41:]])], after=[(300, 40, "2")])
    return table_pdf([first, second])


# --- cells that test the Markdown: pipes, line breaks, merged and empty cells ---------------

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _tc(*paragraphs: str, props: str = "") -> str:
    body = "".join(f'<w:p><w:r><w:t xml:space="preserve">{escape(p)}</w:t></w:r></w:p>' for p in paragraphs)
    return f"<w:tc>{f'<w:tcPr>{props}</w:tcPr>' if props else ''}{body or '<w:p/>'}</w:tc>"


def awkward_docx() -> bytes:
    """A Word table with a pipe in a header, a two-paragraph cell, a line break, a cell merged
    across two columns, one merged down two rows, and empty cells; text before and after it."""
    rows = [
        [_tc("Name"), _tc("Pipe|col"), _tc("Notes")],
        [_tc("a"), _tc("x | y"), _tc("line one", "line two")],
        [_tc("merged across", props='<w:gridSpan w:val="2"/>'), _tc("z")],
        [_tc(""), _tc("tall", props='<w:vMerge w:val="restart"/>'), _tc("")],
        [_tc("b"), _tc(props="<w:vMerge/>"), _tc("c")],
    ]
    table = "".join("<w:tr>" + "".join(row) + "</w:tr>" for row in rows)
    body = (
        "<w:p><w:r><w:t>Before</w:t></w:r></w:p><w:tbl><w:tblGrid><w:gridCol/><w:gridCol/><w:gridCol/>"
        f"</w:tblGrid>{table}</w:tbl><w:p><w:r><w:t>After</w:t></w:r></w:p>"
    )
    return _zip(
        {
            "[Content_Types].xml": _content_types(
                {"/word/document.xml": f"{_OOXML}.wordprocessingml.document.main+xml"}
            ),
            "_rels/.rels": _relationships([("officeDocument", "word/document.xml")]),
            "word/document.xml": f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{_W}"><w:body>'
            f"{body}</w:body></w:document>",
        }
    )


def awkward_xlsx() -> bytes:
    return build_xlsx(
        {
            "Awkward": [
                ["Name", "Pipe|col", "Notes"],
                ["a", "x | y", "line one\nline two"],
                ["", "", "c"],
                ["b"],
            ]
        }
    )  # type: ignore[dict-item]


def awkward_html() -> bytes:
    return b"""<!DOCTYPE html><html><head><title>Awkward</title></head><body><p>Before</p>
<table><thead><tr><th>Name</th><th>Pipe|col</th><th>Notes</th></tr></thead>
<tbody><tr><td>a</td><td>x | y</td><td>line one<br>line two</td></tr>
<tr><td colspan="2">merged across</td><td>z</td></tr>
<tr><td rowspan="2">tall</td><td></td><td>c</td></tr>
<tr><td>q</td><td><p>p1</p><p>p2</p></td></tr></tbody></table>
<p>After</p>
<table><tr><td>first row</td><td>is the header</td></tr><tr><td>v1</td><td>v2</td></tr></table>
</body></html>"""
