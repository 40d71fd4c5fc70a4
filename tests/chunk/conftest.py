"""Fixtures for the chunking tests: the packaged MiniLM tokenizer and a whitespace counter."""

from __future__ import annotations

import pytest

from tests.chunk.chunk_support import MiniLmCounter, WhitespaceCounter, minilm_counter


@pytest.fixture(scope="session")
def minilm() -> MiniLmCounter:
    return minilm_counter()


@pytest.fixture
def whitespace() -> WhitespaceCounter:
    return WhitespaceCounter()
