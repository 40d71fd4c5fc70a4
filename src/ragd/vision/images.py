"""Image files as the pictures sent to the model: each frame (a multi-page TIFF has several) as a
PNG of at most ``max_pixels``, decoded without ever holding more than a bounded bitmap.

A file's header declares its size; one declaring more than :data:`MAX_DECODE_PIXELS` (a
30,000 x 30,000 px PNG is 2.7 GB of RGB) is refused before it is decoded
(:class:`ragd.errors.PayloadTooLarge`), except a JPEG, which PIL decodes at a fraction of its size
(``draft``).  What is decoded is scaled down to ``max_pixels`` before it is encoded.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterator

from PIL import Image, ImageSequence, UnidentifiedImageError

from ragd.errors import ExtractionError, PayloadTooLarge

#: the largest bitmap ragd decodes from an image file (about 200 MB of RGB)
MAX_DECODE_PIXELS = 64_000_000


def image_pages(data: bytes, source: str, *, max_pages: int, max_pixels: int) -> tuple[list[bytes], int]:
    """The first ``max_pages`` frames of an image file as PNG bytes, and how many frames it has."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # the size is checked below
            image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as exc:
        raise PayloadTooLarge(
            f"{source!r} is a picture over the {MAX_DECODE_PIXELS:,}-pixel limit",
            hint="scale it down and ingest it again",
        ) from exc
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise ExtractionError(
            f"{source!r} is not an image ragd can decode: {exc}",
            hint="save it as PNG or JPEG",
        ) from exc
    with image:
        frames = getattr(image, "n_frames", 1)
        pages = [_png(frame, source, max_pixels) for frame in _frames(image, max_pages)]
    return pages, frames


def _frames(image: Image.Image, limit: int) -> Iterator[Image.Image]:
    for index, frame in enumerate(ImageSequence.Iterator(image)):
        if index >= limit:
            return
        yield frame


def _png(frame: Image.Image, source: str, max_pixels: int) -> bytes:
    width, height = frame.size
    if width * height > max_pixels and frame.format == "JPEG":
        scale = (max_pixels / (width * height)) ** 0.5
        frame.draft("RGB", (max(1, int(width * scale)), max(1, int(height * scale))))
        width, height = frame.size
    if width * height > MAX_DECODE_PIXELS:
        raise PayloadTooLarge(
            f"{source!r} is a picture of {width:,} x {height:,} pixels, over the "
            f"{MAX_DECODE_PIXELS:,}-pixel limit",
            hint="scale it down (or save it as JPEG) and ingest it again",
        )
    try:
        rgb = frame.convert("RGB")
    except (OSError, ValueError) as exc:
        raise ExtractionError(
            f"{source!r} could not be decoded: {exc}", hint="save it as PNG or JPEG"
        ) from exc
    if width * height > max_pixels:
        scale = (max_pixels / (width * height)) ** 0.5
        rgb = rgb.resize((max(1, int(width * scale)), max(1, int(height * scale))), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    rgb.save(out, format="PNG")
    return out.getvalue()
