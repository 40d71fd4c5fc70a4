"""``ragd eval --dataset NAME_OR_ID``: a dataset's evaluation set, imported and run (issue 31 §2).

Embedded (no server holds the index): the use-cases run in this process as the service key does
(``ragd tenants``), one progress step per search.  Through a server (``--url``, or the server
holding the data dir): ``POST /api/v1/datasets/{id}/eval`` in slices of :data:`SLICE` queries, one
progress step per slice, the slices' per-query scores put together into one report.  Either way the
report is the API's JSON (``--json``) or a table.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from ragd.bootstrap import Services
from ragd.catalog.base import DatasetRepo
from ragd.cli.progress import RateProgress
from ragd.cli.remote import call_json as _call
from ragd.errors import InvalidEvalQuery, InvalidRequest, NotFound
from ragd.kb import audit, evalset_run, evalsets
from ragd.kb.evalset_run import EvalSpec, QueryScore, summarise
from ragd.kb_types import EvalSource
from ragd.types import SearchKnobs, SearchMode

#: queries one request of a remote run searches (its progress step)
SLICE = 20
_TIMEOUT = httpx.Timeout(30.0, read=600.0)


@dataclass(frozen=True, slots=True)
class DatasetEval:
    dataset: str
    mode: SearchMode
    k: int
    knobs: SearchKnobs
    compare: bool
    import_path: Path | None = None


def read_labels(path: Path) -> list[evalsets.Label]:
    """A JSONL file of labelled queries, or a BEIR folder (queries.jsonl, qrels/test.tsv)."""
    if path.is_dir():
        return evalsets.beir_labels(path)
    if not path.is_file():
        raise InvalidEvalQuery(f"{path}: no such file or folder")
    return evalsets.parse_jsonl(path.read_text(encoding="utf-8"), path.name)


def _batches(labels: Sequence[evalsets.Label]) -> list[Sequence[evalsets.Label]]:
    return [labels[i : i + evalsets.MAX_BATCH] for i in range(0, len(labels), evalsets.MAX_BATCH)]


class Bar:
    """A progress bar whose total is learnt on the way (how many queries the set holds)."""

    def __init__(self, console: Console, unit: str) -> None:
        self._console, self._unit = console, unit
        self._bar: RateProgress | None = None

    def total(self, n: int) -> None:
        self._bar = RateProgress(self._console, "Evaluating", n, unit=self._unit).__enter__()

    def step(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.advance(steps=n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)


# -- embedded ----------------------------------------------------------------------------------------


async def _local_dataset(catalog: DatasetRepo, ref: str) -> str:
    """The id of the dataset ``ref`` names, by id or by name (every tenant's: the CLI acts as the
    service key); a name two tenants use is INVALID_REQUEST."""
    return _pick([{"id": d.id, "name": d.name} for d in await catalog.list_datasets(None)], ref)


def _pick(rows: Sequence[dict[str, Any]], ref: str) -> str:
    for key in ("id", "name"):
        found = [d["id"] for d in rows if d[key] == ref]
        if len(found) == 1:
            return str(found[0])
        if len(found) > 1:
            raise InvalidRequest(f"datasets of several tenants are named {ref[:200]!r}: give its id")
    raise NotFound(f"no dataset with the id or name {ref[:200]!r}")


async def run_embedded(services: Services, request: DatasetEval, bar: Bar) -> dict[str, Any]:
    kb = services.knowledge()
    audit.CLIENT.set(audit.CLI_CLIENT)  # the import's records say it came from the command line
    dataset_id = await _local_dataset(kb.catalog, request.dataset)
    if request.import_path is not None:
        for batch in _batches(read_labels(request.import_path)):
            await evalsets.add_labels(
                kb,
                audit.OPERATOR,
                dataset_id,
                batch,
                source=EvalSource.IMPORT,
                max_queries=services.settings.evaluation.max_queries,
            )
    total = await kb.catalog.count_eval_queries(dataset_id)
    bar.total(total * (2 if request.compare else 1))
    spec = EvalSpec(request.mode, request.knobs, request.k)
    floor = SearchKnobs(min_score=services.settings.retrieval.min_score)
    result = await evalset_run.run_evalset(
        kb,
        services.pipeline,
        audit.OPERATOR,
        dataset_id,
        spec,
        baseline=EvalSpec(SearchMode.HYBRID, floor, request.k) if request.compare else None,
        max_run_queries=max(total, 1),
        tick=bar.step,
    )
    return evalset_run.comparison_json(dataset_id, result)


# -- through a server --------------------------------------------------------------------------------


def _knobs_json(request: DatasetEval) -> dict[str, Any]:
    k = request.knobs
    body: dict[str, Any] = {"mode": request.mode.value, "k": request.k, "diversity": k.diversity}
    optional = {"vector_weight": k.vector_weight, "max_per_file": k.max_per_file, "rerank": k.rerank}
    return body | {name: value for name, value in optional.items() if value is not None}


async def _remote_dataset(client: httpx.AsyncClient, ref: str) -> str:
    return _pick((await _call(client, "GET", "/api/v1/datasets"))["datasets"], ref)


def _scores(rows: Sequence[dict[str, Any]]) -> list[QueryScore]:
    return [
        QueryScore(r["id"], r["query"], r["rank"], r["ndcg_at_10"], r["recall_at_k"], r["mrr_at_10"])
        for r in rows
    ]


async def run_remote(url: str, key: str | None, request: DatasetEval, bar: Bar) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx.AsyncClient(base_url=url.rstrip("/"), headers=headers, timeout=_TIMEOUT) as client:
        dataset_id = await _remote_dataset(client, request.dataset)
        path = f"/api/v1/datasets/{dataset_id}"
        if request.import_path is not None:
            for batch in _batches(read_labels(request.import_path)):
                queries = [
                    {"query": x.query, "files": list(x.files), "chunks": list(x.chunks), "answer": x.answer}
                    for x in batch
                ]
                await _call(client, "POST", f"{path}/evalset", json={"source": "import", "queries": queries})
        total = int((await _call(client, "GET", f"{path}/evalset", params={"limit": 1}))["total"])
        bar.total(total)
        body = _knobs_json(request) | ({"baseline": {}} if request.compare else {})
        rows: dict[str, list[dict[str, Any]]] = {"report": [], "baseline": []}
        wins: list[str] = []
        losses: list[str] = []
        for offset in range(0, total, SLICE):
            part = await _call(client, "POST", f"{path}/eval", json=body | {"offset": offset, "limit": SLICE})
            rows["report"] += part["report"]["queries"]
            if part["baseline"] is not None:
                rows["baseline"] += part["baseline"]["queries"]
            wins += part["wins"]
            losses += part["losses"]
            bar.step(part["ran"])
    report = summarise(_scores(rows["report"]), request.k)
    baseline = summarise(_scores(rows["baseline"]), request.k) if request.compare else None
    merged = evalset_run.EvalComparison(report, baseline, tuple(wins), tuple(losses), 0, total)
    return evalset_run.comparison_json(dataset_id, merged)


# -- the report ----------------------------------------------------------------------------------------


def render(console: Console, out: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(out) + "\n")
        return
    k = out["report"]["k"]
    table = Table(title=f"dataset {out['dataset_id']}: {out['ran']} of {out['total']} labelled queries")
    for column in ("run", "nDCG@10", f"recall@{k}", "MRR@10"):
        table.add_column(column, justify="left" if column == "run" else "right")
    for name in ("report", "baseline"):
        r = out[name]
        if r is not None:
            label = "knobs" if name == "report" else "baseline"
            table.add_row(label, f"{r['ndcg_at_10']:.4f}", f"{r['recall_at_k']:.4f}", f"{r['mrr_at_10']:.4f}")
    console.print(table)
    if out["baseline"] is None:
        return
    before = {q["id"]: q["rank"] for q in out["baseline"]["queries"]}
    changed = Table(
        title=f"{len(out['wins'])} wins, {len(out['losses'])} losses (rank of the first expected hit)"
    )
    for column in ("", "query", "baseline", "knobs"):
        changed.add_column(column)
    for q in out["report"]["queries"]:
        mark = "win" if q["id"] in out["wins"] else "loss" if q["id"] in out["losses"] else None
        if mark:
            changed.add_row(mark, q["query"][:80], str(before.get(q["id"]) or "-"), str(q["rank"] or "-"))
    console.print(changed)
