"""Is OCR possible here, and what to tell the user when it is not.

OCR runs through kreuzberg's bundled Tesseract engine, which needs the Debian
Tesseract language data.  :class:`TesseractProbe` checks for the ``tesseract``
program and asks it which languages are installed (once per probe).  Extractors
take the probe as a plain callable, so tests can inject "not installed"
deterministically.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from ragd.errors import OcrUnavailable

logger = logging.getLogger(__name__)

_LIST_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class OcrStatus:
    available: bool
    reason: str = ""


OcrCheck = Callable[[str], OcrStatus]
"""Given a Tesseract language spec (``eng``, ``eng+deu``), whether OCR can run for it."""


class TesseractProbe:
    """An :data:`OcrCheck` for a real machine: the program on PATH and its installed languages."""

    def __init__(self, program: str = "tesseract") -> None:
        self._program = program
        self._languages: frozenset[str] | None = None

    def __call__(self, language: str) -> OcrStatus:
        path = shutil.which(self._program)
        if path is None:
            return OcrStatus(False, "Tesseract is not installed (no 'tesseract' program on PATH)")
        installed = self._installed(path)
        missing = [code for code in language.split("+") if code not in installed]
        if missing:
            return OcrStatus(False, f"Tesseract has no language data for {'+'.join(missing)}")
        return OcrStatus(True)

    def _installed(self, path: str) -> frozenset[str]:
        if self._languages is None:
            self._languages = _list_languages(path)
        return self._languages


def _list_languages(program: str) -> frozenset[str]:
    """Language codes ``tesseract --list-langs`` prints (one per line after a header line)."""
    try:
        done = subprocess.run(
            [program, "--list-langs"], check=False, capture_output=True, text=True, timeout=_LIST_TIMEOUT_S
        )
    except (OSError, subprocess.SubprocessError) as exc:
        logger.warning("could not list Tesseract languages: %s", exc)
        return frozenset()
    lines = (done.stdout + done.stderr).splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and " " not in line.strip())


def _what(image: bool) -> str:
    # a PNG or a photo is an image, not "scanned pages": say what the user gave
    return "is an image" if image else "has no text layer (scanned pages)"


def ocr_unavailable(source: str, language: str, reason: str, *, image: bool = False) -> OcrUnavailable:
    """The error for a scanned file or an image that cannot be OCRed here, with how to enable OCR."""
    packages = " ".join(f"tesseract-ocr-{code}" for code in language.split("+"))
    return OcrUnavailable(
        f"{source!r} {_what(image)} and OCR is unavailable: {reason}",
        hint=f"install OCR with 'apt-get install tesseract-ocr {packages}' and set RAGD_EXTRACT__OCR=auto",
    )


def ocr_disabled(source: str, *, image: bool = False) -> OcrUnavailable:
    """The error for a scanned file or an image when OCR is switched off in the settings."""
    return OcrUnavailable(
        f"{source!r} {_what(image)} and OCR is switched off",
        hint="set RAGD_EXTRACT__OCR=auto (and install tesseract-ocr tesseract-ocr-eng) to OCR it",
    )
