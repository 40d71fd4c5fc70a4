"""``ragd migrate`` embedded (no server holds the index): a dataset with files and an evaluation set
moves to another chunking in this process (a job worker runs here), its files' chunk counts change,
``--list`` shows it, ``--rollback`` serves the old version again; a bad model and a collection of
``ragd ingest`` exit 2 with the error's code."""

from __future__ import annotations

import asyncio
import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragd.api.app import create_app
from ragd.bootstrap import open_services
from ragd.cli.app import app as cli_app
from ragd.kb import datasets as ds
from ragd.kb import evalsets
from ragd.kb import files as fs
from ragd.kb.audit import OPERATOR
from ragd.kb_types import EvalSource
from ragd.settings import EmbeddingSettings, MigrationSettings, Settings
from tests.kb.conftest import SERVICE_KEY, Api, kb_settings, new_tenant, run_to_end
from tests.support.live_server import LiveServer

pytestmark = pytest.mark.slow

TOPICS = {
    "harbour": "The harbour master logs every ferry that docks at the northern pier",
    "orchard": "Apple orchards are pruned in winter so that the trees fruit well in autumn",
    "forge": "The blacksmith heats iron in the forge and hammers it on the anvil until it glows",
}
WIDE = {"COLUMNS": "300"}


def _text(sentence: str) -> str:
    """Some 150 tokens: one chunk with the default chunking, several with 48 tokens."""
    return " ".join(f"{sentence}, note {i}." for i in range(8))


def _settings(data_dir: Path, model_cache: Path) -> Settings:
    return Settings(data_dir=data_dir, embedding=EmbeddingSettings(cache_dir=model_cache))


async def _dataset(settings: Settings, folder: Path) -> str:
    """A dataset of three files, indexed, with a labelled query per file."""
    async with open_services(settings) as services:
        kb = services.knowledge()
        tenant = await kb.catalog.create_tenant("acme")
        made = await ds.create_dataset(kb, OPERATOR, name="crafts", tenant_id=tenant.id)
        uploads = []
        for name, sentence in TOPICS.items():
            path = folder / f"{name}.txt"
            path.write_text(_text(sentence), encoding="utf-8")
            uploads.append(fs.Upload(path.name, path, path.stat().st_size))
        _, job = await fs.upload_files(kb, OPERATOR, made.id, uploads)
        assert (await run_to_end(kb, job)).status.value == "succeeded"
        labels = [
            evalsets.Label("who logs the ferries at the pier", ("harbour.txt",)),
            evalsets.Label("when are apple trees pruned", ("orchard.txt",)),
            evalsets.Label("where is iron hammered", ("forge.txt",)),
        ]
        await evalsets.add_labels(kb, OPERATOR, made.id, labels, source=EvalSource.IMPORT, max_queries=100)
        return made.id


async def _chunks(settings: Settings, dataset_id: str) -> dict[str, int]:
    """Each file's chunks as the catalog records them (the served version's)."""
    async with open_services(settings) as services:
        files = await services.knowledge().catalog.list_files(dataset_id, limit=100)
        return {f.name: f.chunks for f in files}


def _json(output: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    return out


def test_ragd_migrate_switches_lists_and_rolls_back(
    tmp_path: Path, model_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir, uploads = tmp_path / "data", tmp_path / "uploads"
    uploads.mkdir()
    settings = _settings(data_dir, model_cache)
    dataset_id = asyncio.run(_dataset(settings, uploads))
    before = asyncio.run(_chunks(settings, dataset_id))
    assert before == {"harbour.txt": 1, "orchard.txt": 1, "forge.txt": 1}
    monkeypatch.setenv("RAGD_DATA_DIR", str(data_dir))
    monkeypatch.setenv("RAGD_EMBEDDING__CACHE_DIR", str(model_cache))
    monkeypatch.setenv("RAGD_MIGRATIONS__SETTLE_S", "0")
    runner = CliRunner()

    shown = runner.invoke(
        cli_app,
        ["migrate", "-c", "crafts", "--chunking", "token", "--chunk-size", "48", "--overlap", "0"],
        env=WIDE,
    )
    assert shown.exit_code == 0, shown.output
    assert "switched" in shown.output
    assert "3 labelled queries" in shown.output  # the evaluation of both versions
    assert "3 chunks →" in shown.output
    after = asyncio.run(_chunks(settings, dataset_id))
    assert set(after) == set(before)
    assert all(n > 1 for n in after.values()), after

    listed = runner.invoke(cli_app, ["migrate", "-c", "crafts", "--list", "--json"])
    assert listed.exit_code == 0, listed.output
    migrations = _json(listed.output)["migrations"]
    assert [m["state"] for m in migrations] == ["switched"]
    mid = migrations[0]["id"]
    assert migrations[0]["target"]["chunking"] == {"strategy": "token", "size": 48, "overlap": 0}
    assert migrations[0]["reports"]["queries"] == 3
    table = runner.invoke(cli_app, ["migrate", "-c", dataset_id, "--list"], env=WIDE)
    assert table.exit_code == 0, table.output
    assert mid in table.output
    assert "switched" in table.output

    back = runner.invoke(cli_app, ["migrate", "-c", "crafts", "--rollback", mid], env=WIDE)
    assert back.exit_code == 0, back.output
    assert "rolled back" in back.output
    assert asyncio.run(_chunks(settings, dataset_id)) == before
    again = runner.invoke(cli_app, ["migrate", "-c", "crafts", "--rollback", mid], env=WIDE)
    assert again.exit_code == 2
    assert "MIGRATION_STATE" in again.output

    bad = runner.invoke(cli_app, ["migrate", "-c", "crafts", "--model", "no-such-model"], env=WIDE)
    assert bad.exit_code == 2
    assert "INVALID_REQUEST" in bad.output
    assert "no-such-model" in bad.output
    still = runner.invoke(cli_app, ["migrate", "-c", "crafts", "--list", "--json"])
    assert [m["state"] for m in _json(still.output)["migrations"]] == ["rolled_back"]  # none started

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Notes\n\nA raw collection of ragd ingest.\n", encoding="utf-8")
    ingested = runner.invoke(cli_app, ["ingest", str(notes), "-c", "notes"])
    assert ingested.exit_code == 0, ingested.output
    raw = runner.invoke(cli_app, ["migrate", "-c", "notes", "--chunk-size", "64"], env=WIDE)
    assert raw.exit_code == 2
    assert "INVALID_REQUEST" in raw.output
    assert "ragd ingest" in raw.output
    assert "not a dataset" in raw.output
    missing = runner.invoke(cli_app, ["migrate", "-c", "nowhere", "--list"], env=WIDE)
    assert missing.exit_code == 2
    assert "NOT_FOUND" in missing.output


def test_ragd_migrate_through_a_server_picks_the_tenant_and_waits_for_a_switch(
    tmp_path: Path, model_cache: Path
) -> None:
    settings = kb_settings(tmp_path / "data", model_cache, None, migrations=MigrationSettings(settle_s=0.0))
    runner = CliRunner()
    with LiveServer(create_app(settings)) as live, ExitStack() as clients:
        live.wait_ready()
        service = Api(live.url, SERVICE_KEY)
        clients.callback(service.close)
        made: dict[str, tuple[Api, str]] = {}
        for tenant in ("north", "south"):
            _, keys = new_tenant(service, tenant, "admin")
            admin = keys["admin"]
            clients.callback(admin.close)
            ds_id = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "docs"})["id"]
            files = [("files", (f"{n}.txt", _text(s).encode())) for n, s in TOPICS.items()]
            sent = admin.ok("POST", f"/api/v1/datasets/{ds_id}/files", 202, files=files)
            assert admin.wait_job(sent["job"]["id"])["status"] == "succeeded"
            made[tenant] = (admin, ds_id)
        remote = ["--url", live.url, "--key", SERVICE_KEY]

        def served(tenant: str) -> list[int]:
            admin, ds_id = made[tenant]
            return [f["chunks"] for f in admin.ok("GET", f"/api/v1/datasets/{ds_id}/files")["files"]]

        assert served("north") == served("south") == [1, 1, 1]
        twice = runner.invoke(cli_app, ["migrate", "-c", "docs", "--list", *remote], env=WIDE)
        assert twice.exit_code == 2
        assert "INVALID_REQUEST" in twice.output
        assert "--tenant" in twice.output

        shape = ["--chunk-size", "48", "--overlap", "0", "--no-auto-switch"]
        held = runner.invoke(
            cli_app, ["migrate", "-c", "docs", "--tenant", "north", *shape, *remote], env=WIDE
        )
        assert held.exit_code == 0, held.output
        assert "held (manual)" in held.output
        assert served("north") == [1, 1, 1]  # built, evaluated, not served yet
        listed = runner.invoke(
            cli_app, ["migrate", "-c", "docs", "--tenant", "north", "--list", "--json", *remote]
        )
        assert listed.exit_code == 0, listed.output
        (ready,) = _json(listed.output)["migrations"]
        assert (ready["state"], ready["held"]) == ("ready", "manual")
        switched = runner.invoke(
            cli_app, ["migrate", "-c", made["north"][1], "--switch", ready["id"], *remote], env=WIDE
        )
        assert switched.exit_code == 0, switched.output
        assert "switched" in switched.output
        assert all(n > 1 for n in served("north"))
        assert served("south") == [1, 1, 1]

        bad = runner.invoke(
            cli_app, ["migrate", "-c", "docs", "--tenant", "south", "--model", "nope", *remote], env=WIDE
        )
        assert bad.exit_code == 2
        assert "INVALID_REQUEST" in bad.output
        assert "nope" in bad.output
        south = ["migrate", "-c", "docs", "--tenant", "south"]
        started = runner.invoke(
            cli_app, [*south, "--chunk-size", "64", "--overlap", "8", "--no-auto-switch", "--json", *remote]
        )
        assert started.exit_code == 0, started.output
        waiting = _json(started.output)
        assert (waiting["state"], waiting["held"]) == ("ready", "manual")  # its job may still be ending
        assert waiting["target"]["chunking"]["size"] == 64
        cancelled = runner.invoke(cli_app, [*south, "--cancel", waiting["id"], *remote], env=WIDE)
        assert cancelled.exit_code == 0, cancelled.output
        assert "cancelled" in cancelled.output
        gone = runner.invoke(cli_app, [*south, "--list", "--json", *remote])
        assert [m["state"] for m in _json(gone.output)["migrations"]] == ["cancelled"]
        assert served("south") == [1, 1, 1]
