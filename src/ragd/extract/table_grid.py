"""Ruled tables from a page's lines: pure geometry, no PDF library.

A table drawn with rules (Word, LibreOffice and most report writers draw a bordered table as
horizontal and vertical line segments) is found from those segments alone
(:func:`find_grids`):

1. Rules closer than :data:`SNAP` points on the same axis are one line; pieces of one line with
   gaps up to :data:`JOIN` points are joined (cell borders are often drawn cell by cell).
2. Rules that cross or touch (within :data:`JOIN`) belong to one table: connected components.
3. A component's column edges are its vertical rules' positions plus the horizontal rules' ends
   (a table drawn without outer verticals still has its outer columns); its row edges likewise.
   Edges closer than :data:`THIN` points are one edge (double borders).
4. Every cell of that grid is joined to its neighbour when no rule separates them over at least
   half of their shared side: a merged cell becomes one :class:`Block` spanning rows or columns.

A grid needs at least two rows and two columns.  A grid lying inside another (a table in a
table's cell) is left to the outer one.  :mod:`ragd.extract.table_check` then checks a grid
against the characters drawn in it.

Coordinates are PDF points with ``y`` upwards; rows are numbered from the top.  Bounded: more
than :data:`MAX_RULES` merged rules on an axis of a page, or a grid of more than
:data:`MAX_CELLS` cells, yields no grid (a drawing, not a table).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

#: rules this close (points) on the same axis are one line
SNAP = 2.0
#: gaps up to this (points) within a line, or between a rule's end and a crossing rule, are closed
JOIN = 3.0
#: grid edges this close (points) are one edge
THIN = 3.0
#: more merged rules than this on one axis of a page: no table is looked for
MAX_RULES = 400
#: a grid of more cells than this is not read as a table
MAX_CELLS = 5_000

Box = tuple[float, float, float, float]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Rule:
    """An axis-aligned line: ``at`` is its y (horizontal) or x (vertical), from ``low`` to ``high``."""

    horizontal: bool
    at: float
    low: float
    high: float


@dataclass(frozen=True, slots=True)
class Block:
    """A cell, merged or not: grid rows ``[row, row_end)`` and columns ``[col, col_end)``."""

    row: int
    col: int
    row_end: int
    col_end: int
    #: ``(x0, y0, x1, y1)`` in points, ``y0`` the bottom
    box: Box


@dataclass(frozen=True, slots=True)
class Grid:
    """A ruled table: column edges left to right, row edges top to bottom, and its cells (blocks,
    by row then column of their top-left cell)."""

    xs: tuple[float, ...]
    ys: tuple[float, ...]
    blocks: tuple[Block, ...]

    @property
    def box(self) -> Box:
        return (self.xs[0], self.ys[-1], self.xs[-1], self.ys[0])

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.ys) - 1, len(self.xs) - 1

    def cells(self, texts: Sequence[str]) -> list[list[str]]:
        """Rows of cell texts from each block's text (in ``blocks`` order); a merged block's text
        sits in its top-left cell, the cells it covers besides are empty."""
        rows, cols = self.shape
        table = [[""] * cols for _ in range(rows)]
        for block, text in zip(self.blocks, texts, strict=True):
            table[block.row][block.col] = text
        return table


def holds(box: Box, x: float, y: float, margin: float = 0.0) -> bool:
    return box[0] - margin <= x <= box[2] + margin and box[1] - margin <= y <= box[3] + margin


def locator(grid: Grid) -> Callable[[float, float], int | None]:
    """A function giving the index of the block of ``grid`` that holds a point (None: outside)."""
    rows, cols = grid.shape
    owner = [0] * (rows * cols)
    for k, block in enumerate(grid.blocks):
        for r in range(block.row, block.row_end):
            for c in range(block.col, block.col_end):
                owner[r * cols + c] = k
    downwards = [-y for y in grid.ys]

    def block_at(x: float, y: float) -> int | None:
        col = bisect_right(grid.xs, x) - 1
        row = bisect_right(downwards, -y) - 1
        return owner[row * cols + col] if 0 <= row < rows and 0 <= col < cols else None

    return block_at


def find_grids(rules: Iterable[Rule]) -> list[Grid]:
    """The ruled tables among ``rules`` (see the module docstring), top of the page first."""
    rules = list(rules)
    across = _merge([r for r in rules if r.horizontal])
    down = _merge([r for r in rules if not r.horizontal])
    if not across or not down or len(across) > MAX_RULES or len(down) > MAX_RULES:
        return []
    grids = [
        grid
        for rows, cols in _components(across, down)
        if (grid := _grid([across[i] for i in rows], [down[j] for j in cols])) is not None
    ]
    outer = [g for g in grids if not any(o is not g and _inside(g.box, o.box) for o in grids)]
    return sorted(outer, key=lambda g: (-g.ys[0], g.xs[0]))


def _merge(rules: list[Rule]) -> list[Rule]:
    """Rules of one axis with near positions made one line, and touching pieces joined."""
    out: list[Rule] = []
    for line in clusters(sorted(rules, key=lambda r: r.at), lambda r: r.at, SNAP):
        at = sum(r.at for r in line) / len(line)
        pieces = sorted(line, key=lambda r: r.low)
        low, high = pieces[0].low, pieces[0].high
        for piece in pieces[1:]:
            if piece.low <= high + JOIN:
                high = max(high, piece.high)
            else:
                out.append(Rule(piece.horizontal, at, low, high))
                low, high = piece.low, piece.high
        out.append(Rule(pieces[0].horizontal, at, low, high))
    return out


def clusters(items: Sequence[T], key: Callable[[T], float], tolerance: float) -> list[list[T]]:
    """``items`` (sorted by ``key``) cut where two neighbours differ by more than ``tolerance``."""
    groups: list[list[T]] = []
    for item in items:
        if groups and key(item) - key(groups[-1][-1]) <= tolerance:
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


class _Sets:
    """Union-find over ``0..size-1``."""

    def __init__(self, size: int) -> None:
        self.parent = list(range(size))

    def find(self, i: int) -> int:
        parent = self.parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def join(self, a: int, b: int) -> None:
        self.parent[self.find(a)] = self.find(b)


def _components(across: list[Rule], down: list[Rule]) -> list[tuple[list[int], list[int]]]:
    """Groups of crossing rules: (indices into ``across``, indices into ``down``)."""
    sets = _Sets(len(across) + len(down))
    by_x = sorted(range(len(down)), key=lambda j: down[j].at)
    xs = [down[j].at for j in by_x]
    for i, h in enumerate(across):
        for j in by_x[bisect_right(xs, h.low - JOIN - 1e-9) : bisect_right(xs, h.high + JOIN)]:
            v = down[j]
            if v.low - JOIN <= h.at <= v.high + JOIN:
                sets.join(i, len(across) + j)
    groups: dict[int, tuple[list[int], list[int]]] = {}
    for i in range(len(across)):
        groups.setdefault(sets.find(i), ([], []))[0].append(i)
    for j in range(len(down)):
        groups.setdefault(sets.find(len(across) + j), ([], []))[1].append(j)
    return [group for group in groups.values() if group[0] and group[1]]


def _edges(positions: Iterable[float]) -> list[float]:
    """Distinct edge positions, ascending: positions within :data:`THIN` of each other are one."""
    return [sum(c) / len(c) for c in clusters(sorted(positions), lambda p: p, THIN)]


def _grid(across: list[Rule], down: list[Rule]) -> Grid | None:
    xs = _edges([v.at for v in down] + [min(h.low for h in across), max(h.high for h in across)])
    ys = _edges([h.at for h in across] + [min(v.low for v in down), max(v.high for v in down)])[::-1]
    rows, cols = len(ys) - 1, len(xs) - 1
    if rows < 2 or cols < 2 or rows * cols > MAX_CELLS:
        return None
    verticals = _by_edge(down, xs)
    horizontals = _by_edge(across, ys)
    sets = _Sets(rows * cols)
    for r in range(rows):
        for c in range(cols):
            if c + 1 < cols and not _covered(verticals.get(c + 1, []), ys[r + 1], ys[r]):
                sets.join(r * cols + c, r * cols + c + 1)
            if r + 1 < rows and not _covered(horizontals.get(r + 1, []), xs[c], xs[c + 1]):
                sets.join(r * cols + c, (r + 1) * cols + c)
    members: dict[int, list[tuple[int, int]]] = {}
    for r in range(rows):
        for c in range(cols):
            members.setdefault(sets.find(r * cols + c), []).append((r, c))
    blocks = [block for cells in members.values() for block in _blocks(cells, xs, ys)]
    blocks.sort(key=lambda b: (b.row, b.col))
    return Grid(tuple(xs), tuple(ys), tuple(blocks))


def _by_edge(rules: list[Rule], edges: list[float]) -> dict[int, list[tuple[float, float]]]:
    """The extent of every rule lying on one of ``edges``, by the edge's index."""
    out: dict[int, list[tuple[float, float]]] = {}
    for rule in rules:
        index = min(range(len(edges)), key=lambda k: abs(edges[k] - rule.at))
        if abs(edges[index] - rule.at) <= THIN:
            out.setdefault(index, []).append((rule.low, rule.high))
    return out


def _covered(pieces: list[tuple[float, float]], low: float, high: float) -> bool:
    """Whether ``pieces`` cover at least half of ``[low, high]`` (either order)."""
    low, high = min(low, high), max(low, high)
    covered = sum(max(0.0, min(high, b) - max(low, a)) for a, b in pieces)
    return covered >= (high - low) / 2


def _blocks(cells: list[tuple[int, int]], xs: list[float], ys: list[float]) -> list[Block]:
    """One block for a rectangular set of grid cells, else one block per cell (a ragged merge)."""
    top, left = min(r for r, _ in cells), min(c for _, c in cells)
    bottom, right = max(r for r, _ in cells) + 1, max(c for _, c in cells) + 1
    if len(cells) == (bottom - top) * (right - left):
        return [Block(top, left, bottom, right, (xs[left], ys[bottom], xs[right], ys[top]))]
    return [Block(r, c, r + 1, c + 1, (xs[c], ys[r + 1], xs[c + 1], ys[r])) for r, c in cells]


def _inside(inner: Box, outer: Box) -> bool:
    return (
        inner != outer
        and inner[0] >= outer[0] - JOIN
        and inner[1] >= outer[1] - JOIN
        and inner[2] <= outer[2] + JOIN
        and inner[3] <= outer[3] + JOIN
    )
