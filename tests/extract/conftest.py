"""Fixtures of the extraction tests: settings, OCR availability (real and simulated)."""

from __future__ import annotations

import pytest

from ragd.extract.ocr import OcrStatus, TesseractProbe
from ragd.extract.router import RoutingExtractor, build_extractor
from ragd.settings import ExtractSettings

TESSERACT_READY = TesseractProbe()("eng").available
needs_tesseract = pytest.mark.skipif(
    not TESSERACT_READY,
    reason="Tesseract with English data is not installed (apt-get install tesseract-ocr tesseract-ocr-eng)",
)


def no_ocr(language: str) -> OcrStatus:
    """An OCR check that says Tesseract is absent, whatever this machine has."""
    return OcrStatus(False, f"simulated: no Tesseract for {language}")


@pytest.fixture
def settings() -> ExtractSettings:
    return ExtractSettings()


@pytest.fixture
def extractor(settings: ExtractSettings) -> RoutingExtractor:
    """The default router with the machine's real OCR availability."""
    return build_extractor(settings)


@pytest.fixture
def extractor_without_ocr(settings: ExtractSettings) -> RoutingExtractor:
    """The default router on a machine without Tesseract (simulated, deterministic)."""
    return build_extractor(settings, ocr_check=no_ocr)
