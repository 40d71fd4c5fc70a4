"""Fixtures for the object-store tests: a real S3 server (moto) on loopback and a store opened on it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from ragd.objects.s3 import S3ObjectStore
from tests.support.s3_server import S3Server, s3_server
from tests.support.scripted_http import scripted_server

__all__ = ["s3_server", "scripted_server", "store"]


@pytest.fixture
async def store(s3_server: S3Server) -> AsyncIterator[S3ObjectStore]:
    """An :class:`S3ObjectStore` on the session's moto server, closed after the test."""
    opened = await S3ObjectStore.open(s3_server.settings())
    yield opened
    await opened.aclose()
