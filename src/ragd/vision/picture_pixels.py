"""A picture's pixels, bounded: decoding an image file at most so large, and the PNG a figure is.

Pillow reads the header first: an image under 32 × 32 pixels is decoration, one over
:data:`MAX_DECODE_PIXELS` is skipped unless it is a JPEG (decoded at 1/2 to 1/8 of its size by
``draft``), and what is decoded is downscaled to ``max_pixels``.  Transparent parts are put on
white (a chart exported with a transparent background stays readable).
"""

from __future__ import annotations

import io
import logging
import math
import warnings

from PIL import Image

logger = logging.getLogger(__name__)

#: formats that cannot decode at a reduced size are skipped above this many pixels
MAX_DECODE_PIXELS = 40_000_000
#: pictures narrower or lower than this are decoration (a colour fill, a bullet)
MIN_SIDE = 32


def decode_bounded(raw: bytes, max_pixels: int) -> Image.Image | None:
    """An image file's first frame as RGB with at most ``max_pixels``, or None when Pillow cannot
    read it or it is too large to decode (over :data:`MAX_DECODE_PIXELS`, JPEG aside: it decodes
    at a reduced scale)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(raw))
            width, height = image.size
            if width < MIN_SIDE or height < MIN_SIDE:
                return None
            if width * height > max_pixels and image.format == "JPEG":
                scale = math.sqrt(max_pixels / (width * height))
                image.draft("RGB", (max(1, int(width * scale)), max(1, int(height * scale))))
            if image.size[0] * image.size[1] > max(MAX_DECODE_PIXELS, max_pixels):
                return None
            image.load()
    except (OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError, Warning) as exc:
        logger.debug("picture skipped: %s", exc)
        return None
    return fit(rgb(image), max_pixels)


def rgb(image: Image.Image) -> Image.Image:
    """RGB, transparent parts on white (a chart exported with a transparent background)."""
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        canvas = Image.new("RGB", rgba.size, "white")
        canvas.paste(rgba, mask=rgba.getchannel("A"))
        return canvas
    return image.convert("RGB")


def fit(image: Image.Image, max_pixels: int) -> Image.Image:
    width, height = image.size
    if width * height <= max_pixels:
        return image
    scale = math.sqrt(max_pixels / (width * height))
    size = (max(1, int(width * scale)), max(1, int(height * scale)))
    return image.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)


def encode_png(image: Image.Image) -> bytes:
    """The PNG bytes of a figure (the same pixels give the same bytes, hence the same hash)."""
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()
