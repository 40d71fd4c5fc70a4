"""A chunk's boxes and engine from its document's layout (ragd.ingest.layout)."""

from __future__ import annotations

from ragd.ingest.layout import MAX_BOXES, chunk_boxes, region_of
from ragd.types import ChunkMeta, Region, TextBox


def _words(page: int, line: int, start: int, n: int) -> list[TextBox]:
    """``n`` five-character words (with a space after) on ``line`` of ``page``."""
    y0 = 0.1 + line * 0.03
    return [
        TextBox(page, start + 6 * i, start + 6 * i + 5, 0.1 + 0.08 * i, y0, 0.16 + 0.08 * i, y0 + 0.02)
        for i in range(n)
    ]


def test_a_chunk_gets_one_rectangle_per_line_it_overlaps_and_nothing_outside_it() -> None:
    boxes = _words(0, 0, 0, 5) + _words(0, 1, 30, 5) + _words(1, 0, 60, 5)
    assert chunk_boxes(boxes, 0, 30) == ((0, 0.1, 0.1, 0.48, 0.12),)
    # from the middle of line one to the middle of the next page's first line
    got = chunk_boxes(boxes, 14, 74)
    assert [b[0] for b in got] == [0, 0, 1]
    assert got[0][1] == 0.26  # starts at the third word of line one
    assert got[2][3] == 0.32  # ends at the third word of the page's first line
    assert chunk_boxes(boxes, 200, 300) == ()
    assert chunk_boxes([], 0, 10) == ()


def test_a_chunk_of_many_lines_keeps_at_most_max_boxes_covering_the_same_area() -> None:
    boxes = [b for line in range(200) for b in _words(line // 30, line % 30, line * 30, 5)]
    got = chunk_boxes(boxes, 0, 200 * 30)
    assert 0 < len(got) <= MAX_BOXES
    assert {b[0] for b in got} == set(range(7))
    assert min(b[2] for b in got if b[0] == 0) == 0.1


def test_the_region_holding_most_of_a_chunk_names_its_engine() -> None:
    figure = Region(100, 200, "vision-llm", "figure")
    assert region_of([figure], 150, 260) == figure
    assert region_of([figure], 0, 100) is None
    assert region_of([Region(0, 120, "x"), figure], 90, 190) == figure


def test_boxes_and_profile_survive_the_payload() -> None:
    meta = ChunkMeta("c", "f", vision_profile="diagram", boxes=((2, 0.1, 0.2, 0.3, 0.4),))
    payload = meta.to_payload()
    assert payload["boxes"] == [[2, 0.1, 0.2, 0.3, 0.4]]
    assert payload["vision_profile"] == "diagram"
    back = ChunkMeta.parse(payload)
    assert back.boxes == meta.boxes
    assert back.vision_profile == "diagram"
    assert ChunkMeta.parse({"boxes": [[1, "a", 0, 0, 0], "x", [True, 0, 0, 1, 1]]}).boxes == ()
