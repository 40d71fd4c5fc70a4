"""The lines a PDF page draws, as horizontal and vertical rules (PDFium, through pypdfium2).

Every path object of the page, and of the Form XObjects it draws (their matrices composed, up to
:data:`MAX_FORM_DEPTH` deep), is read segment by segment in page coordinates: a straight stroked
segment that is horizontal or vertical is a rule; a filled shape thinner than :data:`RULE_WIDTH`
points is one too (a rule drawn as a thin rectangle); curves, slants and fills are not.
Bounded: a page drawing more than :data:`MAX_SEGMENTS` path segments, or more than
:data:`MAX_OBJECTS` objects, yields no rules (a drawing, not a table).
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Iterator
from itertools import pairwise

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from ragd.extract.table_grid import Rule

logger = logging.getLogger(__name__)

#: path segments (and Form XObjects) read per page at most (a drawing of more is no table)
MAX_SEGMENTS = 20_000
#: a page drawing more objects than this (text runs, pictures, paths) is not looked at
MAX_OBJECTS = 200_000
#: Form XObjects nested deeper than this are not looked into
MAX_FORM_DEPTH = 3
#: a segment shorter than this (points) is no rule; a filled rectangle thinner than RULE_WIDTH is one
MIN_RULE = 2.0
RULE_WIDTH = 3.0
#: a segment whose ends differ by at most this across its axis is horizontal (or vertical)
_SLANT = 0.5

Matrix = tuple[float, float, float, float, float, float]
_IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


def page_rules(page: pdfium.PdfPage, budget: list[int] | None = None) -> list[Rule]:
    """The page's horizontal and vertical line segments; none when it draws more than
    :data:`MAX_SEGMENTS` segments (or more than ``budget`` holds: what it reads is taken from it)."""
    rules: list[Rule] = []
    allowed = min(MAX_SEGMENTS, budget[0]) if budget is not None else MAX_SEGMENTS
    left = [allowed]
    raw_page = page.raw
    if pdfium_c.FPDFPage_CountObjects(raw_page) > MAX_OBJECTS:
        logger.debug("a page draws more than %d objects: no table looked for", MAX_OBJECTS)
        return []
    objects = (
        pdfium_c.FPDFPage_GetObject(raw_page, i) for i in range(pdfium_c.FPDFPage_CountObjects(raw_page))
    )
    complete = _collect(objects, _IDENTITY, rules, left, 0)
    if budget is not None:
        budget[0] -= allowed - max(left[0], 0)
    if not complete:
        logger.debug("a page draws more than %d path segments: no table looked for", allowed)
        return []
    return rules


def _collect(
    objects: Iterator[object], outer: Matrix, rules: list[Rule], budget: list[int], depth: int
) -> bool:
    """Rules of ``objects`` (page or form objects) into ``rules``; False when over the budget."""
    for obj in objects:
        kind = pdfium_c.FPDFPageObj_GetType(obj)
        if kind == pdfium_c.FPDF_PAGEOBJ_PATH:
            if not _path_rules(obj, _times(_matrix(obj), outer), rules, budget):
                return False
        elif kind == pdfium_c.FPDF_PAGEOBJ_FORM and depth < MAX_FORM_DEPTH:
            budget[0] -= 1
            inner = (
                pdfium_c.FPDFFormObj_GetObject(obj, i) for i in range(pdfium_c.FPDFFormObj_CountObjects(obj))
            )
            if not _collect(inner, _times(_matrix(obj), outer), rules, budget, depth + 1):
                return False
    return True


def _path_rules(path: object, matrix: Matrix, rules: list[Rule], budget: list[int]) -> bool:
    count = pdfium_c.FPDFPath_CountSegments(path)
    budget[0] -= max(count, 1)  # an empty path costs one: a million of them is no table either
    if budget[0] < 0:
        return False
    fill, stroke = ctypes.c_int(), ctypes.c_int()
    if not pdfium_c.FPDFPath_GetDrawMode(path, fill, stroke) or not (fill.value or stroke.value):
        return True
    for subpath in _subpaths(path, count, matrix):
        if stroke.value:
            rules.extend(rule for a, b in pairwise(subpath) if (rule := _rule(a, b)))
        elif (rule := _thin_rectangle(subpath)) is not None:
            rules.append(rule)
    return True


def _subpaths(path: object, count: int, matrix: Matrix) -> Iterator[list[tuple[float, float]]]:
    """Each subpath's points in page coordinates (closed ones end at their start); a subpath
    with curves is cut at each curve (only straight pieces can be rules)."""
    x, y = ctypes.c_float(), ctypes.c_float()
    points: list[tuple[float, float]] = []
    for i in range(count):
        segment = pdfium_c.FPDFPath_GetPathSegment(path, i)
        if not segment or not pdfium_c.FPDFPathSegment_GetPoint(segment, x, y):
            continue
        point = _apply(matrix, x.value, y.value)
        kind = pdfium_c.FPDFPathSegment_GetType(segment)
        if kind in (pdfium_c.FPDF_SEGMENT_MOVETO, pdfium_c.FPDF_SEGMENT_BEZIERTO):
            if len(points) > 1:
                yield points
            points = [point]
        else:
            points.append(point)
        if pdfium_c.FPDFPathSegment_GetClose(segment) and len(points) > 1:
            yield [*points, points[0]]
            points = [points[0]]
    if len(points) > 1:
        yield points


def _rule(a: tuple[float, float], b: tuple[float, float]) -> Rule | None:
    (x0, y0), (x1, y1) = a, b
    if abs(y1 - y0) <= _SLANT and abs(x1 - x0) >= MIN_RULE:
        return Rule(True, (y0 + y1) / 2, min(x0, x1), max(x0, x1))
    if abs(x1 - x0) <= _SLANT and abs(y1 - y0) >= MIN_RULE:
        return Rule(False, (x0 + x1) / 2, min(y0, y1), max(y0, y1))
    return None


def _thin_rectangle(points: list[tuple[float, float]]) -> Rule | None:
    """A filled shape thin enough to be a rule, as that rule (along its long side)."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    width, height = max(xs) - min(xs), max(ys) - min(ys)
    if height <= RULE_WIDTH and width >= MIN_RULE and width > height:
        return Rule(True, (min(ys) + max(ys)) / 2, min(xs), max(xs))
    if width <= RULE_WIDTH and height >= MIN_RULE and height > width:
        return Rule(False, (min(xs) + max(xs)) / 2, min(ys), max(ys))
    return None


def _matrix(obj: object) -> Matrix:
    found = pdfium_c.FS_MATRIX()
    if not pdfium_c.FPDFPageObj_GetMatrix(obj, found):
        return _IDENTITY
    return (found.a, found.b, found.c, found.d, found.e, found.f)


def _times(inner: Matrix, outer: Matrix) -> Matrix:
    """The matrix applying ``inner`` first, then ``outer`` (PDF row-vector convention)."""
    a, b, c, d, e, f = inner
    p, q, r, s, t, u = outer
    return (a * p + b * r, a * q + b * s, c * p + d * r, c * q + d * s, e * p + f * r + t, e * q + f * s + u)


def _apply(m: Matrix, x: float, y: float) -> tuple[float, float]:
    return (m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5])
