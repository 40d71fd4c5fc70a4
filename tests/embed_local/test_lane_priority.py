"""Bulk embedding yields the cores to searches: the document lanes and the documents' tokenizer
thread run at a lower CPU priority (Linux niceness, per thread); a search's query does not."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from ragd.embed.local_onnx import LANE_NICE

from .conftest import Make

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread niceness is Linux's")


def niceness(prefix: str, earlier: frozenset[threading.Thread] = frozenset()) -> list[int]:
    """The niceness of each thread named ``prefix…`` that is not one of ``earlier`` (other tests'
    embedders in this process may still have theirs)."""
    threads = [t for t in threading.enumerate() if t.name.startswith(prefix) and t not in earlier]
    return [os.getpriority(os.PRIO_PROCESS, t.native_id) for t in threads if t.native_id is not None]


async def test_the_lanes_and_the_tokenizer_run_below_the_searches(make_embedder: Make) -> None:
    earlier = frozenset(threading.enumerate())
    embedder = make_embedder(lanes=2)
    await embedder.embed_documents(["one document", "another"])
    await embedder.embed_query("a query")
    base = os.getpriority(os.PRIO_PROCESS, 0)
    assert niceness("ragd-lane-", earlier) == [min(19, base + LANE_NICE)] * 2
    assert niceness("ragd-tokenize", earlier) == [min(19, base + LANE_NICE)]
    assert niceness("ragd-query", earlier) == [base]  # the searches' query thread keeps the process's
