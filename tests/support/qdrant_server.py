"""The gated suite's Qdrant server (issue 34 §3): named by ``RAGD_TEST_QDRANT_URL`` (and
``RAGD_TEST_QDRANT_API_KEY`` when it wants one), else every test that needs it is skipped with
:data:`SKIP`.  A server that is named but does not answer is a failure, not a skip: whoever names
one means the suite to run on it, and a skip would pass an upgrade check that never ran
(docs/deployment.md#before-an-upgrade).  Each test works in a collection of its own, dropped after.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping

import httpx
import pytest

URL_VAR = "RAGD_TEST_QDRANT_URL"
KEY_VAR = "RAGD_TEST_QDRANT_API_KEY"
SKIP = (
    f"{URL_VAR} is not set: the store contract and replicas tests against a Qdrant server are skipped"
    " (docs/deployment.md#before-an-upgrade)"
)
_reached: dict[str, str | None] = {}


def server(environ: Mapping[str, str] = os.environ) -> tuple[str, str | None]:
    """The server's URL and API key; skips the test when none is named, fails when it does not answer."""
    url = environ.get(URL_VAR, "").strip()
    if not url:
        pytest.skip(SKIP)
    key = environ.get(KEY_VAR) or None
    if url not in _reached:
        _reached[url] = _problem(url, key)
    problem = _reached[url]
    if problem is not None:
        pytest.fail(problem, pytrace=False)
    return url, key


def _problem(url: str, key: str | None) -> str | None:
    headers = {"api-key": key} if key else {}
    try:
        r = httpx.get(f"{url.rstrip('/')}/collections", headers=headers, timeout=5)
    except httpx.HTTPError as exc:
        why = f"{type(exc).__name__}: {exc}"
        return f"{URL_VAR}={url} does not answer ({why}); start the server or unset {URL_VAR}"
    if r.status_code != 200:
        return f"{URL_VAR}={url} answers GET /collections with {r.status_code} (is {KEY_VAR} right?)"
    return None


def collection_name() -> str:
    """A collection no other test (or person) uses."""
    return f"ragd_test_{uuid.uuid4().hex[:12]}"


def drop(url: str, key: str | None, collection: str) -> None:
    headers = {"api-key": key} if key else {}
    httpx.delete(f"{url.rstrip('/')}/collections/{collection}", headers=headers, timeout=30)
