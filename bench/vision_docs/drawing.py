"""The pictures of the vision corpus, drawn with Pillow: flowcharts, org charts, bar charts,
tables and scanned forms whose words exist only as pixels.

Everything is drawn with Pillow's bundled font (``ImageFont.load_default(size)``, Aileron) so the
bytes are the same on every machine with the same Pillow.  Sizes are chosen for Tesseract at the
vision engines' 150 dpi: every label is at least ~20 px high once the picture is placed on its page.
"""

from __future__ import annotations

import io
import random
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont

INK = (25, 25, 35)
LINE = (60, 70, 90)
FILL = (232, 240, 252)
DECISION = (255, 243, 214)
BAR = (70, 110, 170)


def font(size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=size)  # type: ignore[return-value]


@dataclass(frozen=True)
class Node:
    """A box of a diagram: its label lines, its cell on the layout grid, its shape."""

    key: str
    lines: tuple[str, ...]
    col: float
    row: float
    shape: str = "box"  # box | decision | terminal | note


@dataclass(frozen=True)
class Edge:
    start: str
    end: str
    label: str = ""


def diagram(
    nodes: list[Node],
    edges: list[Edge],
    *,
    title: str = "",
    cell: tuple[int, int] = (420, 190),
    box: tuple[int, int] = (360, 120),
    size: int = 30,
    elbow: bool = False,
) -> Image.Image:
    """A flowchart (straight arrows) or an org chart (``elbow``: parent down, across, down to child)."""
    cols = max(n.col for n in nodes) + 1
    rows = max(n.row for n in nodes) + 1
    top = 110 if title else 30
    image = Image.new("RGB", (int(cols * cell[0]) + 40, int(rows * cell[1]) + top + 10), "white")
    draw = ImageDraw.Draw(image)
    if title:
        draw.text((image.width // 2, 50), title, fill=INK, font=font(size + 8), anchor="mm")
    centres = {n.key: (20 + (n.col + 0.5) * cell[0], top + (n.row + 0.5) * cell[1]) for n in nodes}
    half = (box[0] / 2, box[1] / 2)
    for edge in edges:
        start, end = centres[edge.start], centres[edge.end]
        if elbow:
            _elbow(draw, start, end, half)
        else:
            _arrow(draw, _border(start, end, half), _border(end, start, half))
    for node in nodes:
        _node(draw, node, centres[node.key], half, size)
    for edge in edges:  # labels last, beside the arrow's middle (up and to the right)
        if edge.label:
            start, end = centres[edge.start], centres[edge.end]
            middle = ((start[0] + end[0]) / 2 + size, (start[1] + end[1]) / 2 - size * 0.9)
            _label(draw, middle, edge.label, size - 4)
    return image


def _border(centre: tuple[float, float], toward: tuple[float, float], half: tuple[float, float]):
    dx, dy = toward[0] - centre[0], toward[1] - centre[1]
    scale = min(half[0] / abs(dx) if dx else 1e9, half[1] / abs(dy) if dy else 1e9)
    return centre[0] + dx * scale, centre[1] + dy * scale


def _arrow(draw: ImageDraw.ImageDraw, start, end) -> None:
    draw.line([start, end], fill=LINE, width=4)
    dx, dy = end[0] - start[0], end[1] - start[1]
    length = max(1.0, (dx * dx + dy * dy) ** 0.5)
    ux, uy = dx / length, dy / length
    back = (end[0] - 22 * ux, end[1] - 22 * uy)
    draw.polygon(
        [end, (back[0] - 11 * uy, back[1] + 11 * ux), (back[0] + 11 * uy, back[1] - 11 * ux)], fill=LINE
    )


def _elbow(draw: ImageDraw.ImageDraw, start, end, half) -> None:
    middle = (start[1] + half[1] + end[1] - half[1]) / 2
    points = [(start[0], start[1] + half[1]), (start[0], middle), (end[0], middle)]
    draw.line(points, fill=LINE, width=4)
    _arrow(draw, (end[0], middle), (end[0], end[1] - half[1]))


def _label(draw: ImageDraw.ImageDraw, at, text: str, size: int) -> None:
    face = font(size)
    left, top, right, bottom = draw.textbbox(at, text, font=face, anchor="mm")
    draw.rectangle((left - 6, top - 4, right + 6, bottom + 4), fill="white")
    draw.text(at, text, fill=INK, font=face, anchor="mm")


def _node(draw: ImageDraw.ImageDraw, node: Node, centre, half, size: int) -> None:
    x, y = centre
    box = (x - half[0], y - half[1], x + half[0], y + half[1])
    if node.shape == "decision":
        points = [(x, box[1] - 14), (box[2], y), (x, box[3] + 14), (box[0], y)]
        draw.polygon(points, fill=DECISION, outline=LINE, width=3)
    elif node.shape == "note":
        pass  # an annotation: words beside the flow, no frame
    elif node.shape == "terminal":
        draw.rounded_rectangle(box, radius=int(half[1]), fill=FILL, outline=LINE, width=3)
    else:
        draw.rectangle(box, fill=FILL, outline=LINE, width=3)
    face = font(size)
    step = size + 8
    first = y - step * (len(node.lines) - 1) / 2
    for index, line in enumerate(node.lines):
        draw.text((x, first + index * step), line, fill=INK, font=face, anchor="mm")


def bar_chart(title: str, unit: str, bars: list[tuple[str, str, float]], *, size: int = 30) -> Image.Image:
    """Vertical bars over a data row: each bar's category, and its printed value under it."""
    width, height = 300 + 230 * len(bars), 880
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    draw.text((width // 2, 50), title, fill=INK, font=font(size + 8), anchor="mm")
    draw.text((40, 120), unit, fill=INK, font=font(size - 4), anchor="lm")
    base, tallest = 760, max(value for _, _, value in bars)
    draw.line([(120, 150), (120, base), (width - 60, base)], fill=LINE, width=3)
    for index, (category, printed, value) in enumerate(bars):
        left = 180 + 230 * index
        top = base - int(520 * value / tallest)
        draw.rectangle((left, top, left + 140, base), fill=BAR)
        draw.text((left + 70, base + 40), category, fill=INK, font=font(size), anchor="mm")
        draw.text((left + 70, base + 90), printed, fill=INK, font=font(size), anchor="mm")
    return image


def table(title: str, rows: list[tuple[str, ...]], widths: list[int], *, size: int = 30) -> Image.Image:
    """A table as a screenshot or a pasted figure shows it: a shaded header row, a rule under each row."""
    step = size + 34
    image = Image.new("RGB", (sum(widths) + 80, 60 + step * len(rows) + 110), "white")
    draw = ImageDraw.Draw(image)
    draw.text((40, 50), title, fill=INK, font=font(size + 6), anchor="lm")
    right = 40 + sum(widths)
    draw.rectangle((40, 100, right, 100 + step), fill=FILL)
    for index, row in enumerate(rows):
        y, x = 100 + index * step, 40
        for width, cell in zip(widths, row, strict=True):
            draw.text((x + 14, y + step // 2), cell, fill=INK, font=font(size), anchor="lm")
            x += width
        draw.line([(40, y + step), (right, y + step)], fill=LINE, width=2)
    return image


def scanned_form(title: str, fields: list[tuple[str, str]], footer: str, seed: int) -> Image.Image:
    """A filled-in paper form as a 150 dpi scan: A4, grey paper, slightly turned, speckled."""
    page = Image.new("L", (1240, 1754), 246)
    draw = ImageDraw.Draw(page)
    draw.text((120, 140), title, fill=20, font=font(46))
    draw.line([(120, 215), (1120, 215)], fill=40, width=3)
    y = 300
    for label, value in fields:
        draw.text((120, y), label, fill=30, font=font(30))
        draw.line([(520, y + 40), (1120, y + 40)], fill=90, width=2)
        draw.text((540, y - 2), value, fill=10, font=font(34))
        y += 110
    draw.text((120, y + 60), footer, fill=40, font=font(26))
    rng = random.Random(seed)
    for _ in range(2500):
        x, y = rng.randrange(page.width), rng.randrange(page.height)
        page.putpixel((x, y), rng.randrange(120, 200))
    return page.rotate(0.4, resample=Image.Resampling.BICUBIC, fillcolor=246)


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "PNG", optimize=False)
    return buffer.getvalue()


def jpeg(image: Image.Image, quality: int = 82) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality)
    return buffer.getvalue()
