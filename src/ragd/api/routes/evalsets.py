"""A dataset's evaluation set and eval runs (docs/knowledge-bases.md, "Evaluation sets").

    GET/POST /api/v1/datasets/{id}/evalset          list (paged, oldest first) / add one or many (writers)
    DELETE   /api/v1/datasets/{id}/evalset/{qid}    remove one labelled query (writers)
    POST     /api/v1/datasets/{id}/eval             run the set with knobs (and a baseline): a report

Runs are synchronous and bounded (``RAGD_EVALUATION__MAX_RUN_QUERIES`` queries a request; larger
sets run in slices with ``offset``/``limit``, as ``ragd eval --dataset`` does with its progress bar).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from ragd.api.auth import Caller
from ragd.api.deps import services
from ragd.api.eval_schemas import EvalBody, EvalSetAdd
from ragd.bootstrap import Services
from ragd.kb import evalset_run, evalsets

router = APIRouter(prefix="/api/v1", tags=["evaluation sets"])
Svc = Annotated[Services, Depends(services)]


@router.get("/datasets/{dataset_id}/evalset")
async def list_evalset(
    dataset_id: str,
    caller: Caller,
    svc: Svc,
    limit: Annotated[int, Query(ge=1, le=evalsets.MAX_PAGE)] = 100,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> dict[str, Any]:
    page, total = await evalsets.list_labels(svc.knowledge(), caller, dataset_id, limit=limit, offset=offset)
    return {
        "queries": [evalsets.label_json(q) for q in page],
        "total": total,
        "limit": limit,
        "offset": offset,
    }


@router.post("/datasets/{dataset_id}/evalset", status_code=201)
async def add_evalset(dataset_id: str, body: EvalSetAdd, caller: Caller, svc: Svc) -> dict[str, Any]:
    added = await evalsets.add_labels(
        svc.knowledge(),
        caller,
        dataset_id,
        body.labels(),
        source=body.source,
        max_queries=svc.settings.evaluation.max_queries,
    )
    return {"queries": [evalsets.label_json(q) for q in added]}


@router.delete("/datasets/{dataset_id}/evalset/{query_id}")
async def delete_evalset_query(dataset_id: str, query_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    await evalsets.delete_label(svc.knowledge(), caller, dataset_id, query_id)
    return {"deleted": query_id}


@router.post("/datasets/{dataset_id}/eval")
async def run_eval(dataset_id: str, body: EvalBody, caller: Caller, svc: Svc) -> dict[str, Any]:
    defaults = svc.settings.retrieval
    result = await evalset_run.run_evalset(
        svc.knowledge(),
        svc.pipeline,
        caller,
        dataset_id,
        spec := body.spec(defaults),
        baseline=None if body.baseline is None else body.baseline.spec(defaults, spec.k),
        offset=body.offset,
        limit=body.limit,
        max_run_queries=svc.settings.evaluation.max_run_queries,
    )
    return evalset_run.comparison_json(dataset_id, result)
