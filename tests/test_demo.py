"""``ragd demo`` indexes its docs once (into the dataset it serves), and a taken port is refused with
advice that works for the command that found it taken (``--port`` or ``RAGD_SERVER__PORT``)."""

from __future__ import annotations

import io
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from ragd.bootstrap import open_services
from ragd.cli.app import app
from ragd.cli.demo import DATASET, TENANT, index_docs
from ragd.kb.seed import seed_dataset
from ragd.settings import EmbeddingSettings, Settings
from ragd.types import PointFilter

WIDE = {"COLUMNS": "400"}


@pytest.fixture
def cli(tmp_path: Path, model_cache: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("RAGD_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RAGD_EMBEDDING__CACHE_DIR", str(model_cache))
    for name in ("RAGD_SERVER__API_KEY", "RAGD_SERVER__HOST", "RAGD_SERVER__PORT"):
        monkeypatch.delenv(name, raising=False)
    return CliRunner()


@pytest.fixture
def taken() -> Iterator[int]:
    """A loopback port another process (this one) listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _suggested(output: str, pattern: str, taken: int) -> int:
    """The port the advice names (the same one each time it is named), checked free."""
    flat = " ".join(output.split())
    assert f"ADDRESS_IN_USE: 127.0.0.1:{taken} is taken" in flat, flat
    found = re.search(pattern, flat)
    assert found is not None, flat
    ports = {int(p) for p in found.groups()}
    assert len(ports) == 1, flat
    (port,) = ports
    assert port != taken
    assert _free(port)
    return port


def test_serve_names_its_port_option_and_the_variable(cli: CliRunner, taken: int) -> None:
    result = cli.invoke(app, ["serve", "--port", str(taken)], env=WIDE)
    assert result.exit_code == 2, result.output
    _suggested(result.output, r"ragd serve --port (\d+), or RAGD_SERVER__PORT=(\d+) ragd serve", taken)


def test_proxy_names_its_port_option_and_the_variable(cli: CliRunner, taken: int, tmp_path: Path) -> None:
    args = ["proxy", "--docs-folder", str(tmp_path), "--upstream", "http://127.0.0.1:9/v1", "--model", "m"]
    result = cli.invoke(app, [*args, "--port", str(taken)], env=WIDE)
    assert result.exit_code == 2, result.output
    _suggested(result.output, r"add --port (\d+) to ragd proxy, or set RAGD_SERVER__PORT=(\d+)", taken)


@pytest.mark.parametrize("by", ["option", "variable"])
def test_demo_takes_a_port_and_says_how_before_indexing(cli: CliRunner, taken: int, by: str) -> None:
    args, env = ["demo", "--serve"], dict(WIDE)
    if by == "option":
        args += ["--port", str(taken)]
    else:
        env["RAGD_SERVER__PORT"] = str(taken)
    result = cli.invoke(app, args, env=env)
    assert result.exit_code == 2, result.output
    advice = (
        r"ragd demo --serve --port (\d+), or RAGD_SERVER__PORT=(\d+) ragd demo --serve "
        r"\(from a checkout: python3 dev\.py demo --port (\d+)\)"
    )
    _suggested(result.output, advice, taken)
    assert "Indexing" not in result.output, "refused before any work"


def test_demo_port_without_serve_is_a_usage_error(cli: CliRunner) -> None:
    result = cli.invoke(app, ["demo", "--no-serve", "--port", "8001"], env=WIDE)
    assert result.exit_code == 2
    assert "give --serve too" in " ".join(result.output.split())


async def test_the_demo_embeds_each_chunk_once_into_the_dataset_it_serves(
    tmp_path: Path, model_cache: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tugs.md").write_text("# Tugs\n\nThe tug crews double their night shifts in March.\n")
    (docs / "locks.md").write_text("# Locks\n\nThe north lock closes for repairs every October.\n")
    settings = Settings(data_dir=tmp_path / "data", embedding=EmbeddingSettings(cache_dir=model_cache))
    shown = io.StringIO()
    async with open_services(settings) as services:
        collection = await index_docs(services, sorted(docs.iterdir()), Console(file=shown, width=200))
        everything = await services.store.count(PointFilter())
        collections = await services.store.facet("meta.collection_name", PointFilter(), limit=100)
        dataset_chunks = await services.store.count(PointFilter(collection_names=(collection,)))
        again = await index_docs(services, sorted(docs.iterdir()), Console(file=io.StringIO()))
        after = await services.store.count(PointFilter())
    assert dict(collections) == {collection: dataset_chunks}, "one collection: the dataset's"
    assert everything == dataset_chunks == 2
    assert "2 files indexed (2 chunks), 0 failed" in shown.getvalue()
    assert (again, after) == (collection, everything), "a second run indexes nothing again"


async def test_a_demo_stopped_before_its_job_ran_is_finished_by_the_next_run(
    tmp_path: Path, model_cache: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tugs.md").write_text("# Tugs\n\nThe tug crews double their night shifts in March.\n")
    settings = Settings(data_dir=tmp_path / "data", embedding=EmbeddingSettings(cache_dir=model_cache))
    async with open_services(settings) as services:
        seeded = await seed_dataset(services.knowledge(), [docs / "tugs.md"], tenant=TENANT, dataset=DATASET)
        assert seeded.job is not None  # queued, then the run stopped: nothing indexed yet
        shown = io.StringIO()
        collection = await index_docs(services, [docs / "tugs.md"], Console(file=shown, width=200))
        job = await services.knowledge().catalog.get_job(seeded.job.id)
        chunks = await services.store.count(PointFilter(collection_names=(collection,)))
    assert job is not None
    assert job.status.finished
    assert chunks == 1
    assert "1 file indexed (1 chunks)" in shown.getvalue()
