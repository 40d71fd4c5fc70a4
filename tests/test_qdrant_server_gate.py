"""The gated suite (issue 34 §3): the store contract and replicas tests run on a Qdrant server named
by ``RAGD_TEST_QDRANT_URL``; unset, they are skipped saying so; named but silent, they fail saying
so (a skip would let an upgrade check pass that never ran).  No server exists here: a port bound
but not listening stands for one that is down."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import qdrant_server

REPO = Path(__file__).resolve().parents[1]
#: one contract test of the server backend: enough to see the gate, cheap to collect
ONE = "tests/store/test_store_contract.py::test_upsert_then_scroll_returns_content_meta_and_vectors[server]"


@pytest.fixture
def closed_url() -> Iterator[str]:
    with socket.socket() as sock:  # bound, never listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_unset_skips_with_the_reason() -> None:
    with pytest.raises(pytest.skip.Exception, match=r"RAGD_TEST_QDRANT_URL is not set.*before-an-upgrade"):
        qdrant_server.server({})
    with pytest.raises(pytest.skip.Exception):
        qdrant_server.server({"RAGD_TEST_QDRANT_URL": "  "})


def test_a_named_server_that_does_not_answer_fails(closed_url: str) -> None:
    with pytest.raises(pytest.fail.Exception, match=rf"RAGD_TEST_QDRANT_URL={closed_url} does not answer"):
        qdrant_server.server({"RAGD_TEST_QDRANT_URL": closed_url})


def _run(env_url: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "RAGD_TEST_QDRANT_URL"}
    if env_url is not None:
        env["RAGD_TEST_QDRANT_URL"] = env_url
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:randomly", "-p", "no:cacheprovider", ONE],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_the_suite_skips_unset_and_fails_on_a_silent_server(closed_url: str) -> None:
    unset = _run(None)
    assert unset.returncode == 0, unset.stdout + unset.stderr
    assert "1 skipped" in unset.stdout, unset.stdout
    assert "RAGD_TEST_QDRANT_URL is not set" in unset.stdout, unset.stdout
    down = _run(closed_url)
    assert down.returncode == 1, down.stdout + down.stderr
    assert f"RAGD_TEST_QDRANT_URL={closed_url} does not answer" in down.stdout, down.stdout
