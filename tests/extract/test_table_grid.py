"""Ruled tables from line segments and glyph boxes (ragd.extract.table_grid, table_check): pure geometry."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ragd.extract.table_check import Glyph, plausible, text_lines
from ragd.extract.table_grid import MAX_RULES, Grid, Rule, find_grids


def h(y: float, x0: float, x1: float) -> Rule:
    return Rule(True, y, x0, x1)


def v(x: float, y0: float, y1: float) -> Rule:
    return Rule(False, x, y0, y1)


def full_grid(xs: list[float], ys: list[float]) -> list[Rule]:
    """Every line of a grid with column edges ``xs`` and row edges ``ys`` (any order)."""
    return [h(y, min(xs), max(xs)) for y in ys] + [v(x, min(ys), max(ys)) for x in xs]


def word(x: float, y: float, letters: int = 4, size: float = 8.0) -> list[Glyph]:
    """Glyphs of a word starting at ``x`` on the baseline ``y``."""
    width = size * 0.55
    return [Glyph(x + i * width, y, x + (i + 1) * width - 0.4, y + size * 0.7) for i in range(letters)]


def test_a_full_grid_is_one_table_with_its_rows_and_columns() -> None:
    grids = find_grids(full_grid([72, 150, 260, 400], [700, 688, 676, 664]))
    assert len(grids) == 1
    grid = grids[0]
    assert grid.shape == (3, 3)
    assert grid.box == (72, 664, 400, 700)
    assert [(b.row, b.col) for b in grid.blocks] == [(r, c) for r in range(3) for c in range(3)]


def test_cell_by_cell_borders_with_small_gaps_and_double_rules_are_one_grid() -> None:
    """Word processors stroke each cell's own rectangle; ends do not quite meet; a double border
    is two rules a point apart."""
    rules: list[Rule] = []
    xs, ys = [72.0, 150.0, 260.0], [700.0, 688.0, 676.0]
    for r in range(2):
        for c in range(2):
            x0, x1, top, bottom = xs[c] + 0.4, xs[c + 1] - 0.4, ys[r] - 0.3, ys[r + 1] + 0.3
            rules += [h(top, x0, x1), h(bottom, x0, x1), v(x0, bottom, top), v(x1, bottom, top)]
    rules.append(h(701.2, 72, 260))  # the header's double top rule
    (grid,) = find_grids(rules)
    assert grid.shape == (2, 2)


def test_merged_cells_become_blocks_and_their_text_sits_in_the_first_cell() -> None:
    xs, ys = [0.0, 100.0, 200.0, 300.0], [300.0, 280.0, 260.0, 240.0]
    rules = [h(y, 0, 300) for y in (300, 240)] + [v(x, 240, 300) for x in (0, 300)]
    rules += [h(280, 0, 300), h(260, 0, 100), h(260, 200, 300)]  # column 1 merged over rows 1-2
    rules += [v(100, 240, 300), v(200, 240, 280)]  # row 0: columns 1-2 merged
    (grid,) = find_grids(rules)
    assert grid.xs == tuple(xs)
    assert grid.ys == tuple(ys)
    spans = {(b.row, b.col): (b.row_end, b.col_end) for b in grid.blocks}
    assert spans[(0, 1)] == (1, 3), "row 0: one cell over columns 1 and 2"
    assert spans[(1, 1)] == (3, 2), "column 1: one cell over rows 1 and 2"
    texts = [f"{b.row}.{b.col}" for b in grid.blocks]
    assert grid.cells(texts) == [["0.0", "0.1", ""], ["1.0", "1.1", "1.2"], ["2.0", "", "2.2"]]


def test_a_table_without_outer_verticals_still_has_its_outer_columns() -> None:
    rules = [h(y, 50, 350) for y in (500, 480, 460, 440)] + [v(150, 440, 500), v(250, 440, 500)]
    (grid,) = find_grids(rules)
    assert grid.shape == (3, 3)
    assert grid.xs == (50, 150, 250, 350)


def test_separate_tables_are_separate_grids_top_first_and_a_table_in_a_cell_is_left_to_its_outer_one() -> (
    None
):
    lower = full_grid([72, 200, 300], [300, 280, 260])
    upper = full_grid([72, 200, 300], [600, 580, 560])
    inner = full_grid([80, 120, 160], [595, 590, 585])  # inside the upper table's first cell
    grids = find_grids(lower + inner + upper)
    assert [g.box for g in grids] == [(72, 560, 300, 600), (72, 260, 300, 300)]


def test_lines_that_make_no_two_by_two_grid_are_no_table() -> None:
    assert find_grids([]) == []
    assert find_grids([h(100, 0, 300), h(80, 0, 300), h(60, 0, 300)]) == [], "rules under rows only"
    assert find_grids(full_grid([0, 300], [100, 80, 60])) == [], "one column: a framed list"
    assert find_grids(full_grid([0, 100, 200], [100, 80])) == [], "one row"
    assert find_grids([h(100, 0, 50), v(200, 0, 50)]) == [], "lines that do not cross"


def test_a_page_of_too_many_rules_yields_no_grid() -> None:
    count = MAX_RULES + 1
    rules = full_grid([float(x) for x in range(0, 5 * count, 5)], [0.0, 10.0, 20.0])
    assert find_grids(rules) == []


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(4, 80), min_size=2, max_size=8),
    st.lists(st.floats(4, 40), min_size=2, max_size=12),
    st.floats(0, 400),
    st.floats(100, 700),
)
def test_any_full_grid_is_found_with_its_shape(
    widths: list[float], heights: list[float], left: float, top: float
) -> None:
    xs = [left]
    for width in widths:
        xs.append(xs[-1] + width)
    ys = [top]
    for height in heights:
        ys.append(ys[-1] - height)
    (grid,) = find_grids(full_grid(xs, ys))
    assert grid.shape == (len(heights), len(widths))
    assert len(grid.blocks) == len(heights) * len(widths)


def _grid(cols: int = 3, rows: int = 3) -> Grid:
    xs = [72.0 + 100 * c for c in range(cols + 1)]
    ys = [700.0 - 30 * r for r in range(rows + 1)]
    (grid,) = find_grids(full_grid(xs, ys))
    return grid


def test_a_grid_with_a_word_in_most_cells_is_a_table() -> None:
    grid = _grid()
    glyphs = [g for r in range(3) for c in range(3) for g in word(76 + 100 * c, 680 - 30 * r)]
    assert plausible(grid, glyphs)


def test_a_frame_with_text_in_one_column_or_few_cells_is_no_table() -> None:
    grid = _grid()
    one_column = [g for r in range(3) for g in word(76, 680 - 30 * r)]
    assert not plausible(grid, one_column), "a chart's frame with its axis labels"
    two_cells = word(76, 680) + word(176, 620)
    assert not plausible(grid, two_cells), "2 of 9 cells hold text"


def test_columns_without_rules_between_them_are_no_table() -> None:
    """A cell whose line has a wide gap holds two columns the file did not rule."""
    grid = _grid()
    glyphs = [g for r in range(3) for c in range(3) for g in word(76 + 100 * c, 680 - 30 * r, letters=2)]
    glyphs += word(140, 680, letters=2)  # a second value 40 points right of the first in cell (0, 0)
    assert not plausible(grid, glyphs)


def test_rows_without_rules_between_them_are_no_table_but_wrapped_prose_is() -> None:
    grid = _grid()
    base = [g for r in range(3) for c in range(3) for g in word(76 + 100 * c, 682 - 30 * r)]
    stacked = base + word(76, 672) + word(176, 672)  # row 0 is the header: row 1 gets them
    stacked_body = base + word(76, 642) + word(176, 642)
    assert plausible(grid, stacked), "two-line header cells are common"
    assert not plausible(grid, stacked_body), "two values stacked in two cells of a row"
    prose = base + word(76, 642, letters=16) + word(176, 642, letters=16)
    wide_first = [g for g in prose if not (660 > g.y0 > 650)]
    wide_first += word(76, 652, letters=17) + word(176, 652, letters=17)
    assert plausible(grid, wide_first), "wrapped lines filling their cells"


def test_text_lines_group_by_baseline_and_leave_flat_marks_out() -> None:
    glyphs = [*word(10, 100), Glyph(27.6, 98.8, 31.6, 99.2), *word(32.0, 100), *word(10, 88)]
    lines = text_lines(glyphs)
    assert len(lines) == 2, "the underscore under the first line is no line of its own"
    first, second = lines
    assert first.y > second.y
    assert first.gap < 5, "the underscore's room is a small gap, not a column"
