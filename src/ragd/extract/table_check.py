"""Whether a grid of rules reads as a table, from the characters drawn in it: pure geometry.

Rules frame more than tables: a chart's axes and gridlines, a form's boxes, a figure's outline,
and tables that rule only some of their rows or columns (a cell then holds the values of several).
:func:`plausible` turns those away, so that their page keeps the lines PDFium reads; the reasons
are in its docstring, the thresholds below.  Coordinates are PDF points with ``y`` upwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from ragd.extract.table_grid import SNAP, Block, Grid, clusters, locator

#: a grid whose cells hold text in fewer than this share of its blocks is a drawing, not a table
MIN_FILLED = 0.3
#: a cell's first line this wide (share of the cell) is wrapped prose, not stacked values
PROSE = 0.6
#: a gap between two characters of a cell's line wider than this many character heights is a column
GAP = 1.5


@dataclass(frozen=True, slots=True)
class Glyph:
    """A drawn character: its box in points (``y0`` the bottom)."""

    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def centre(self) -> tuple[float, float]:
        return ((self.x0 + self.x1) / 2, (self.y0 + self.y1) / 2)


@dataclass(frozen=True, slots=True)
class Line:
    """A line of characters in a cell: the middle of its height, its left and right ends, and the
    widest gap between two neighbouring characters, all in points."""

    y: float
    left: float
    right: float
    gap: float


def plausible(grid: Grid, glyphs: Sequence[Glyph]) -> bool:
    """Whether ``grid`` with these characters (the page's, or those inside it) reads as a table.

    Not when fewer than :data:`MIN_FILLED` of its blocks, or fewer than two of its columns, hold
    text (a chart's or a form's frame); nor when rows or columns are drawn without rules between
    them, so that one cell would hold the values of several: a line of a cell with a gap wider
    than :data:`GAP` times the characters' height (columns), or two cells of a body row stacking
    lines on the same baselines while one of them is not wrapped prose (rows).  Such a grid is
    better left as the lines PDFium reads."""
    inside: list[list[Glyph]] = [[] for _ in grid.blocks]
    block_at = locator(grid)
    for glyph in glyphs:
        owner = block_at(*glyph.centre)
        if owner is not None:
            inside[owner].append(glyph)
    filled = [block for block, found in zip(grid.blocks, inside, strict=True) if found]
    if len(filled) < MIN_FILLED * len(grid.blocks) or len({block.col for block in filled}) < 2:
        return False
    rows: dict[int, list[tuple[Block, list[Line]]]] = {}
    for block, found in zip(grid.blocks, inside, strict=True):
        lines = text_lines(found)
        height = _median([g.y1 - g.y0 for g in found]) if found else 0.0
        if any(line.gap > GAP * height for line in lines):
            return False
        if len(lines) >= 2 and block.row > 0:
            rows.setdefault(block.row, []).append((block, lines))
    return not any(_stacked(cells) for cells in rows.values())


def text_lines(glyphs: Sequence[Glyph]) -> list[Line]:
    """The lines of ``glyphs``, top first; glyphs whose middles lie within half a glyph's
    height of each other share a line.  Flat glyphs (``_ - . ,``: under a third of the usual
    height, drawn off the middle of the line) are left out."""
    if not glyphs:
        return []
    height = _median([g.y1 - g.y0 for g in glyphs])
    ordered = sorted((g for g in glyphs if g.y1 - g.y0 >= height / 3), key=lambda g: -g.centre[1])
    out: list[Line] = []
    for line in clusters(ordered, lambda g: -g.centre[1], max(height / 2, 0.5)):
        across = sorted(line, key=lambda g: g.x0)
        gap = max((b.x0 - a.x1 for a, b in pairwise(across)), default=0.0)
        y = sum(g.centre[1] for g in line) / len(line)
        out.append(Line(y, across[0].x0, max(g.x1 for g in line), gap))
    return out


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def _stacked(cells: list[tuple[Block, list[Line]]]) -> bool:
    """Whether two multi-line cells of a row share two baselines, one of them not wrapped prose."""
    for i, (block, lines) in enumerate(cells):
        for other, other_lines in cells[i + 1 :]:
            shared = sum(1 for line in lines if any(abs(line.y - o.y) <= SNAP for o in other_lines))
            if shared >= 2 and not (_prose(block, lines) and _prose(other, other_lines)):
                return True
    return False


def _prose(block: Block, lines: list[Line]) -> bool:
    x0, _, x1, _ = block.box
    return lines[0].right - lines[0].left >= PROSE * (x1 - x0)
