"""The inspection paths of the vision engines on hostile files, at full size: each ends bounded,
or refused with its code.

Each case runs in a spawned process under the extraction workers' address-space limit
(``RAGD_EXTRACT__MEMORY_MB``, 1536 MB) and reports its peak resident memory (``VmHWM``, what
bench/hostile_inputs.py samples from ``/proc``), which must stay under 1.5 GB.  The files are
tests/support/hostile.py's cases (the live-server test runs them through ``ragd serve``).
"""

from __future__ import annotations

import multiprocessing
import resource
from pathlib import Path
from typing import Any

from ragd.errors import RagError
from tests.support.hostile import CASES

LIMIT_MB = 1536


def _case(name: str) -> bytes:
    return next(case for case in CASES if case.name == name).build(1.0)


def _tiny_images() -> dict[str, Any]:
    from ragd.vision.figures import pdf_figures

    data = _case("tiny images PDF")
    found = pdf_figures(data, min_area_share=0.001, max_images=20)
    return {"figures": len(found)}


def _huge_page() -> dict[str, Any]:
    from ragd.extract.pdf_pages import open_pdf, render_page
    from ragd.vision.figures import pdf_figures

    data = _case("huge page PDF")
    with open_pdf(data) as pdf:
        page = render_page(pdf, 0, dpi=150, max_pixels=4_000_000)
    found = pdf_figures(data, min_area_share=0.05, max_images=5, max_pixels=1_000_000)
    return {
        "page_pixels": page.image.width * page.image.height,
        "figure_pixels": [_pixels(figure.png) for figure in found],
        "figure_shares": [figure.area_share for figure in found],
    }


def _million_shapes() -> dict[str, Any]:
    from ragd.vision.detect import RouterThresholds, docx_signals, route_docx
    from ragd.vision.figures import docx_figures

    data = _case("million shapes DOCX")
    signals = docx_signals(data, name="shapes.docx", max_unpacked_bytes=512 * 1024 * 1024)
    route = route_docx(
        signals, RouterThresholds(), diagram_engine="hybrid-diagram", default_engine="kreuzberg"
    )
    refused = ""
    try:
        docx_signals(data, name="shapes.docx", max_unpacked_bytes=50_000_000)
    except RagError as exc:
        refused = exc.code
    return {
        "zipped_mb": len(data) / 1e6,
        "capped": signals.capped,
        "shapes": signals.shapes,
        "route": (route.signal, route.signals.get("capped")),
        "figures": len(docx_figures(data, min_area_share=0.05, max_images=5)),
        "refused": refused,
    }


def _pixels(png: bytes) -> int:
    import io

    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        return image.width * image.height


def _child(target: str, conn: Any) -> None:
    limit = LIMIT_MB * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        result: Any = globals()[target]()
    except BaseException as exc:  # reported to the test, which fails with it
        result = {"error": repr(exc)}
    status = Path("/proc/self/status").read_text()
    peak_kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
    conn.send((result, peak_kb / 1024))
    conn.close()


def _bounded(target: str) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(target, child))
    process.start()
    child.close()
    try:
        assert parent.poll(240), f"{target} did not finish"
        result, peak_mb = parent.recv()
    finally:
        process.join(30)
    assert process.exitcode == 0, f"{target} died: {process.exitcode}"
    assert "error" not in result, result["error"]
    assert peak_mb < 1500, f"{target} peaked at {peak_mb:.0f} MB"
    return dict(result)


def test_ten_thousand_tiny_images_are_skipped_from_their_positions() -> None:
    assert _bounded("_tiny_images") == {"figures": 0}  # 8 x 8 px each: decoration, never decoded


def test_a_30000_point_page_and_its_2_gigapixel_image_render_within_their_caps() -> None:
    result = _bounded("_huge_page")
    assert result["page_pixels"] <= 4_000_000
    assert result["figure_shares"] == [1.0]
    assert result["figure_pixels"][0] <= 1_000_000


def test_a_million_shapes_are_counted_to_the_cap_and_an_oversized_package_is_refused() -> None:
    result = _bounded("_million_shapes")
    assert result["zipped_mb"] < 10  # the test file itself stays small
    assert result["capped"]
    assert result["shapes"] == 10_000
    assert result["route"] == ("textbox", 1)
    assert result["figures"] == 0
    assert result["refused"] == "FILE_TOO_LARGE"
