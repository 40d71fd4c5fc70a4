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


def niceness(prefix: str) -> list[int]:
    threads = [t for t in threading.enumerate() if t.name.startswith(prefix) and t.native_id is not None]
    return [os.getpriority(os.PRIO_PROCESS, t.native_id) for t in threads if t.native_id is not None]


async def test_the_lanes_and_the_tokenizer_run_below_the_searches(make_embedder: Make) -> None:
    embedder = make_embedder(lanes=2)
    await embedder.embed_documents(["one document", "another"])
    await embedder.embed_query("a query")
    base = os.getpriority(os.PRIO_PROCESS, 0)
    assert niceness("ragd-lane-") == [min(19, base + LANE_NICE)] * 2
    assert niceness("ragd-tokenize") == [min(19, base + LANE_NICE)]
    assert niceness("ragd-query") == [base]  # the searches' query thread keeps the process's
