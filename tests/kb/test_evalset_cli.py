"""``ragd eval --dataset`` embedded (no server holds the index): it imports a JSONL file of labels
and a BEIR folder's, runs the set through the dataset search in-process and prints the report the
API gives."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragd.bootstrap import open_services
from ragd.cli.app import app as cli_app
from ragd.kb import datasets as ds
from ragd.kb import evalset_run
from ragd.kb import files as fs
from ragd.kb.audit import OPERATOR
from ragd.kb.evalset_run import EvalSpec
from ragd.kb_types import AuditQuery
from ragd.settings import EmbeddingSettings, Settings
from tests.kb.conftest import run_to_end

pytestmark = pytest.mark.slow

DOCS = {
    "harbour": "The harbour master logs every ferry that docks at the northern pier.",
    "orchard": "Apple orchards are pruned in winter so the trees fruit in autumn.",
    "forge": "The blacksmith heats iron in the forge and hammers it on the anvil.",
}


def _settings(data_dir: Path, model_cache: Path) -> Settings:
    return Settings(data_dir=data_dir, embedding=EmbeddingSettings(cache_dir=model_cache))


async def _index(settings: Settings, folder: Path) -> str:
    async with open_services(settings) as services:
        kb = services.knowledge()
        tenant = await kb.catalog.create_tenant("acme")
        made = await ds.create_dataset(kb, OPERATOR, name="crafts", tenant_id=tenant.id)
        uploads = []
        for name, text in DOCS.items():
            path = folder / f"{name}.txt"
            path.write_text(text, encoding="utf-8")
            uploads.append(fs.Upload(path.name, path, path.stat().st_size))
        _, job = await fs.upload_files(kb, OPERATOR, made.id, uploads)
        assert (await run_to_end(kb, job)).status.value == "succeeded"
        return made.id


async def _report(settings: Settings, dataset_id: str) -> dict[str, Any]:
    async with open_services(settings) as services:
        kb = services.knowledge()
        result = await evalset_run.run_evalset(
            kb, services.pipeline, OPERATOR, dataset_id, EvalSpec(), max_run_queries=100
        )
        added = await kb.catalog.list_audit(AuditQuery(action="evalset.add"))
        return evalset_run.comparison_json(dataset_id, result) | {
            "audit": [(r.actor, r.client, r.outcome.value, r.detail.get("count")) for r in added]
        }


def test_ragd_eval_dataset_embedded_imports_and_reports(
    tmp_path: Path, model_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir, uploads = tmp_path / "data", tmp_path / "uploads"
    uploads.mkdir()
    settings = _settings(data_dir, model_cache)
    dataset_id = asyncio.run(_index(settings, uploads))
    monkeypatch.setenv("RAGD_DATA_DIR", str(data_dir))
    monkeypatch.setenv("RAGD_EMBEDDING__CACHE_DIR", str(model_cache))
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        json.dumps(
            {"query": "who logs the ferries", "files": ["harbour.txt"], "answer": "the harbour master"}
        )
        + "\n"
        + json.dumps({"query": "when are apple trees pruned", "files": ["orchard"]})
        + "\n",
        encoding="utf-8",
    )
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "where is iron hammered"}) + "\n")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tforge\t1\n")
    runner = CliRunner()
    first = runner.invoke(cli_app, ["eval", "--dataset", "crafts", "--import", str(labels), "--json"])
    assert first.exit_code == 0, first.output
    out = runner.invoke(cli_app, ["eval", "-d", dataset_id, "--import", str(beir), "--json", "--compare"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["total"] == report["ran"] == 3
    assert [q["rank"] for q in report["report"]["queries"]] == [1, 1, 1]
    assert report["report"]["ndcg_at_10"] == pytest.approx(1.0)
    assert report["baseline"]["ndcg_at_10"] == pytest.approx(1.0)
    assert (report["wins"], report["losses"]) == ([], [])
    again = asyncio.run(_report(settings, dataset_id))
    assert again["report"] == report["report"]
    assert again["audit"] == [("service", "cli", "ok", 1), ("service", "cli", "ok", 2)]  # newest first
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "no label"}\n', encoding="utf-8")
    refused = runner.invoke(cli_app, ["eval", "-d", "crafts", "--import", str(bad)], env={"COLUMNS": "300"})
    assert refused.exit_code == 2
    assert "INVALID_EVAL_QUERY" in refused.output
    assert "bad.jsonl line 1" in refused.output
