"""Flowcharts as Word drawing shapes: the grid layout of :mod:`.drawing` turned into inches."""

from __future__ import annotations

from .drawing import Edge, Node
from .ooxml import Connector, Shape

GEOMETRY = {
    "box": "flowChartProcess",
    "decision": "flowChartDecision",
    "terminal": "flowChartTerminator",
    "note": "rect",
}
CELL = (2.55, 1.3)  # inches between column / row centres
ORIGIN = (1.55, 1.2)  # centre of cell (0, 0), inches from the page's top-left corner
# a diamond's text sits in its middle half, so it is larger; a note is a borderless text box
SIZE = {"box": (2.25, 0.8), "terminal": (2.25, 0.8), "decision": (2.3, 1.05), "note": (2.25, 0.7)}


def _centre(node: Node) -> tuple[float, float]:
    return ORIGIN[0] + node.col * CELL[0], ORIGIN[1] + node.row * CELL[1]


def _border(node: Node, toward: tuple[float, float]) -> tuple[float, float]:
    (x, y), (w, h) = _centre(node), SIZE[node.shape]
    dx, dy = toward[0] - x, toward[1] - y
    if node.shape == "decision":  # to the diamond's edge: |dx|/(w/2) + |dy|/(h/2) = 1
        scale = 1 / (abs(dx) / (w / 2) + abs(dy) / (h / 2))
    else:
        scale = min(w / 2 / abs(dx) if dx else 1e9, h / 2 / abs(dy) if dy else 1e9)
    return round(x + dx * scale, 3), round(y + dy * scale, 3)


def vector_flow(nodes: list[Node], edges: list[Edge]) -> tuple[list[Shape], list[Connector]]:
    """One text-box shape per node, one connector per edge, a borderless text box per edge label."""
    by_key = {node.key: node for node in nodes}
    shapes = []
    for node in nodes:
        (x, y), (w, h) = _centre(node), SIZE[node.shape]
        shape = Shape(node.lines, x - w / 2, y - h / 2, w, h, GEOMETRY[node.shape], node.shape != "note")
        shapes.append(shape)
    arrows = []
    for edge in edges:
        start, end = by_key[edge.start], by_key[edge.end]
        (x1, y1), (x2, y2) = _border(start, _centre(end)), _border(end, _centre(start))
        arrows.append(Connector(x1, y1, x2, y2))
        if edge.label:
            middle = ((x1 + x2) / 2, (y1 + y2) / 2)
            shapes.append(
                Shape((edge.label,), middle[0] + 0.05, middle[1] - 0.38, 0.6, 0.35, "rect", border=False)
            )
    return shapes, arrows
