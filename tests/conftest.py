"""Fixtures shared by the whole suite: paths to ../shared, a session-wide real embedder, settings."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragd.embed.base import DenseEmbedder
from ragd.settings import EmbeddingSettings, Settings
from tests.support.postgres import UNAVAILABLE, PostgresServer, find_server
from tests.support.scripted_http import scripted_server

__all__ = ["scripted_server", "shared_path"]

# pytest-xdist's workers start with COLUMNS=80 in their environment; rich would fix the CLI's consoles
# at that width when ragd.cli.runner is imported, and the tests that widen them per call (COLUMNS=300
# in CliRunner's env) would see wrapped lines.  The serial run has no COLUMNS: make the workers alike.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)
# A new tenant gets the tenant template's datasets (by default four: docs/knowledge-bases.md,
# "Standard datasets").  The suite's tests count and name their tenants' datasets themselves, so
# their tenants start empty; tests/kb/test_tenant_template.py passes the default explicitly.
os.environ["RAGD_TENANTS__DATASETS"] = "[]"

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def shared_path(*parts: str) -> Path:
    """A path under ../shared, or skip the test with a clear reason when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs the shared benchmark data at {path} (clone ragd beside ../shared)")
    return path


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def dense(model_cache: Path) -> Iterator[DenseEmbedder]:
    """The real packaged all-MiniLM-L6-v2 in onnxruntime, loaded once per session."""
    from ragd.embed.local_onnx import OnnxDenseEmbedder

    embedder = OnnxDenseEmbedder.from_settings(EmbeddingSettings(), model_cache)
    yield embedder
    asyncio.run(embedder.aclose())


@pytest.fixture
def settings(tmp_path: Path, model_cache: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", embedding=EmbeddingSettings(cache_dir=model_cache))


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the session (RAGD_TEST_POSTGRES_URL, else a private throwaway
    cluster from Debian's binaries), or skip; see tests/support/postgres.py."""
    server = find_server()
    if server is None:
        pytest.skip(UNAVAILABLE)
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """The SQLAlchemy URL of a fresh empty PostgreSQL database, dropped after the test."""
    url = postgres_server.create_database()
    yield url
    postgres_server.drop_database(url)


@pytest.fixture(params=["sqlite", "postgres"])
def catalog_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh empty catalog database: a SQLite file, then a PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'ragd.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/ui drives a browser: mark it, so ``-m "not browser"`` (the fast tier,
    ``python3 dev.py test --fast``) leaves them out without each module having to say so.  A test
    marked ``slow_on_postgres`` is slow in its PostgreSQL case only (its catalog parameter, of
    ``catalog_url`` or ``kb_server``, is "postgres"): the SQLite case stays in the fast tier."""
    browser = pytest.mark.browser
    for item in items:
        if "ui" in item.path.relative_to(REPO).parts[1:2]:
            item.add_marker(browser)
        params = item.callspec.params if hasattr(item, "callspec") else {}
        if item.get_closest_marker("slow_on_postgres") and "postgres" in params.values():
            item.add_marker(pytest.mark.slow)
