"""``ragd ingest DIR`` syncs (files gone from the folder leave the index) and ``ragd rm``, end to end:
typer's runner, the real model, the embedded store in a temporary data dir."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from ragd.bootstrap import open_services
from ragd.cli.app import app
from ragd.ingest.ids import file_id_for_path
from ragd.kb.datasets import create_dataset
from ragd.kb_types import ADMIN_ROLE, Principal
from ragd.settings import EmbeddingSettings, Settings
from tests.support.listing import FailingListing

WIDE = {"COLUMNS": "300"}
HOLIDAYS = "# Holidays\n\nStaff get thirty days of paid leave per year.\n"
SECURITY = "# Security\n\nRotate the VPN certificates every ninety days.\n"
KITCHEN = "# Kitchen\n\nThe espresso machine is descaled every Friday afternoon.\n"


@pytest.fixture
def cli(tmp_path: Path, model_cache: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("RAGD_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RAGD_EMBEDDING__CACHE_DIR", str(model_cache))
    return CliRunner()


def write_folder(root: Path, name: str = "notes") -> Path:
    folder = root / name
    (folder / "sub").mkdir(parents=True)
    (folder / "holidays.md").write_text(HOLIDAYS)
    (folder / "sub" / "security.md").write_text(SECURITY)
    (folder / "kitchen.md").write_text(KITCHEN)
    return folder


def ingest(cli: CliRunner, *args: str) -> Result:
    result = cli.invoke(app, ["ingest", *args], env=WIDE)
    assert result.exit_code == 0, result.output
    return result


def sources(cli: CliRunner, collection: str = "team") -> list[str]:
    """The sources of every chunk of ``collection`` (one chunk per file here; no score floor)."""
    found = cli.invoke(app, ["search", "what does the office do", "-c", collection, "--json", "-k", "50"])
    assert found.exit_code == 0, found.output
    return sorted(hit["meta"]["source"] for hit in json.loads(found.output))


def test_a_file_deleted_from_the_folder_leaves_the_index(cli: CliRunner, tmp_path: Path) -> None:
    folder = write_folder(tmp_path)
    root = folder.as_posix()
    first = ingest(cli, str(folder), "-c", "team")
    assert "3 indexed" in first.output
    assert "0 removed" in first.output
    assert sources(cli) == [f"{root}/holidays.md", f"{root}/kitchen.md", f"{root}/sub/security.md"]

    (folder / "kitchen.md").unlink()
    (folder / "sub" / "security.md").unlink()
    again = ingest(cli, str(folder), "-c", "team")
    assert "1 unchanged" in again.output
    assert "2 removed (no longer in the folder)" in again.output
    assert f"{root}/kitchen.md (1 chunk)" in again.output
    assert f"{root}/sub/security.md (1 chunk)" in again.output
    assert sources(cli) == [f"{root}/holidays.md"], "only the file still in the folder is searchable"

    assert "0 removed" in ingest(cli, str(folder), "-c", "team").output


def test_no_prune_keeps_the_chunks_of_deleted_files(cli: CliRunner, tmp_path: Path) -> None:
    folder = write_folder(tmp_path)
    ingest(cli, str(folder), "-c", "team")
    (folder / "kitchen.md").unlink()

    kept = ingest(cli, str(folder), "-c", "team", "--no-prune")
    assert "removed" not in kept.output
    assert f"{folder.as_posix()}/kitchen.md" in sources(cli)


@pytest.mark.slow  # > 5 s (the fast tier's bound)
def test_only_files_ingested_from_the_folder_are_pruned(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another folder's files, and another collection's, are never this folder's to prune; the
    folder may be named differently from one run to the next (relative, absolute, a parent)."""
    docs = tmp_path / "docs"
    notes = write_folder(docs)
    other = docs / "other"
    other.mkdir()
    (other / "kitchen.md").write_text(KITCHEN.replace("Friday", "Monday"))
    monkeypatch.chdir(docs)
    ingest(cli, "notes", "other", "-c", "team")  # relative: sources "notes/…", "other/…"
    ingest(cli, "notes", "-c", "elsewhere")
    (other / "kitchen.md").unlink()
    (notes / "kitchen.md").unlink()

    result = ingest(cli, str(notes.resolve()), "-c", "team")  # the same folder, named absolutely
    assert "1 removed" in result.output
    assert "notes/kitchen.md (1 chunk)" in result.output
    assert sources(cli) == ["notes/holidays.md", "notes/sub/security.md", "other/kitchen.md"]
    assert "notes/kitchen.md" in sources(cli, "elsewhere")

    monkeypatch.chdir(notes / "sub")
    assert "1 removed" in ingest(cli, "../..", "-c", "team").output  # the parent covers other/
    assert sources(cli) == ["notes/holidays.md", "notes/sub/security.md"]


def test_a_missing_folder_is_an_error_and_removes_nothing(cli: CliRunner, tmp_path: Path) -> None:
    folder = write_folder(tmp_path)
    ingest(cli, str(folder), "-c", "team")
    folder.rename(tmp_path / "moved")

    result = cli.invoke(app, ["ingest", str(folder), "-c", "team"], env=WIDE)
    assert result.exit_code == 2
    assert "NOT_FOUND" in result.output
    assert len(sources(cli)) == 3


def test_an_empty_folder_prunes_nothing(cli: CliRunner, tmp_path: Path) -> None:
    """An unmounted disk leaves an empty mount point behind: that must not empty the collection."""
    folder = write_folder(tmp_path)
    ingest(cli, str(folder), "-c", "team")
    for path in sorted(folder.rglob("*.md")):
        path.unlink()

    result = ingest(cli, str(folder), "-c", "team")
    assert "0 removed" in result.output
    assert len(sources(cli)) == 3


@pytest.mark.slow  # > 5 s (the fast tier's bound)
def test_a_folder_listed_in_part_prunes_nothing(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write_folder(tmp_path)
    ingest(cli, str(folder), "-c", "team")
    (folder / "kitchen.md").unlink()
    FailingListing(monkeypatch).deny(folder.resolve() / "sub")

    result = cli.invoke(app, ["ingest", str(folder), "-c", "team"], env=WIDE)
    assert result.exit_code == 1, result.output
    assert "0 removed: a folder could not be listed" in result.output
    assert len(sources(cli)) == 3, "nothing went: the walk saw only part of the folder"


@pytest.mark.slow  # > 5 s (the fast tier's bound)
def test_rm_removes_a_file_by_path_or_id(cli: CliRunner, tmp_path: Path) -> None:
    folder = write_folder(tmp_path)
    root = folder.as_posix()
    ingest(cli, str(folder), "-c", "team")

    by_path = cli.invoke(app, ["rm", str(folder / "kitchen.md"), "-c", "team"], env=WIDE)
    assert by_path.exit_code == 0, by_path.output
    assert f"Removed {root}/kitchen.md (1 chunk" in by_path.output

    file_id = file_id_for_path(folder / "holidays.md")
    by_id = cli.invoke(app, ["rm", file_id, "-c", "team"], env=WIDE)
    assert by_id.exit_code == 0, by_id.output
    assert f"file id {file_id}) from team" in by_id.output
    assert sources(cli) == [f"{root}/sub/security.md"]

    again = cli.invoke(app, ["rm", file_id, "-c", "team"], env=WIDE)
    assert again.exit_code == 2
    assert f"NOT_FOUND: no file '{file_id}' in collection 'team'" in again.output
    elsewhere = cli.invoke(app, ["rm", str(folder / "sub" / "security.md"), "-c", "nobody"], env=WIDE)
    assert elsewhere.exit_code == 2
    assert "NOT_FOUND" in elsewhere.output
    assert sources(cli) == [f"{root}/sub/security.md"]


@pytest.mark.slow  # > 5 s (the fast tier's bound)
def test_rm_all_removes_a_collection_after_asking(cli: CliRunner, tmp_path: Path) -> None:
    folder = write_folder(tmp_path)
    ingest(cli, str(folder), "-c", "team")
    ingest(cli, str(folder / "holidays.md"), "-c", "keep")

    declined = cli.invoke(app, ["rm", "-c", "team", "--all"], input="n\n", env=WIDE)
    assert declined.exit_code == 1
    assert "Remove every file of collection 'team'?" in declined.output
    assert len(sources(cli)) == 3

    confirmed = cli.invoke(app, ["rm", "-c", "team", "--all"], input="y\n", env=WIDE)
    assert confirmed.exit_code == 0, confirmed.output
    assert "Removed collection team: 3 files, 3 chunks" in confirmed.output
    assert sources(cli) == []
    assert sources(cli, "keep") == [f"{folder.as_posix()}/holidays.md"]

    unknown = cli.invoke(app, ["rm", "-c", "team", "--all", "--yes"], env=WIDE)
    assert unknown.exit_code == 2
    assert "NOT_FOUND: collection 'team' does not exist" in unknown.output


def test_rm_needs_a_file_or_all(cli: CliRunner) -> None:
    neither = cli.invoke(app, ["rm", "-c", "team"])
    assert neither.exit_code == 2
    assert "FILE_ID_OR_PATH" in neither.output
    both = cli.invoke(app, ["rm", "x", "-c", "team", "--all"])
    assert both.exit_code == 2
    no_collection = cli.invoke(app, ["rm", "--all", "--yes"])
    assert no_collection.exit_code == 2
    assert "--collection" in no_collection.output


def test_rm_leaves_a_knowledge_base_dataset_to_the_dataset_api(
    cli: CliRunner, tmp_path: Path, model_cache: Path
) -> None:
    async def create() -> str:
        settings = Settings(data_dir=tmp_path / "data", embedding=EmbeddingSettings(cache_dir=model_cache))
        async with open_services(settings) as services:
            kb = services.knowledge()
            tenant = await kb.catalog.create_tenant("acme")
            admin = Principal(tenant_id=None, role=ADMIN_ROLE)
            dataset = await create_dataset(kb, admin, name="Handbook", tenant_id=tenant.id)
            return dataset.collection_name

    collection = asyncio.run(create())
    refused = cli.invoke(app, ["rm", "-c", collection, "--all", "--yes"], env=WIDE)
    assert refused.exit_code == 2
    assert f"CONFLICT: collection '{collection}' is knowledge-base dataset 'Handbook'" in refused.output
