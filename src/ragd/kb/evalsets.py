"""A dataset's evaluation set: labelled queries added, listed, deleted, imported (issue 31 §2).

Writers add and delete (audited), readers list, exactly like the dataset's files: another tenant's
dataset is NOT_FOUND.  A label names what answers the query: the dataset's files (by id, by name,
or by name without its extension: what a BEIR corpus id or a JSONL line gives) and/or chunk ids
(judged only when no file is given: chunk ids change when the dataset is re-chunked, file ids do
not).  A set holds at most ``evaluation.max_queries``; a request that would go past it stores
nothing (EVALSET_FULL).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ragd.errors import InvalidEvalQuery, NotFound
from ragd.evaluation.beir import load_labels
from ragd.kb import audit
from ragd.kb.access import readable, writable
from ragd.kb.context import KbContext
from ragd.kb.search import MAX_QUERY_CHARS
from ragd.kb_types import EvalQuery, EvalSource, FileEntry, Principal

#: one request adds at most this many labelled queries
MAX_BATCH = 1000
#: a label names at most this many files and this many chunks
MAX_REFS = 100
MAX_REF_CHARS = 512
MAX_ANSWER_CHARS = 20_000
#: a page of the listing holds at most this many
MAX_PAGE = 1000
_FILE_PAGE = 1000


@dataclass(frozen=True, slots=True)
class Label:
    """A labelled query as given: ``files`` are file ids or names of the dataset."""

    query: str
    files: tuple[str, ...] = ()
    chunks: tuple[str, ...] = ()
    answer: str | None = None


def _check(label: Label, where: str) -> None:
    if not label.query.strip():
        raise InvalidEvalQuery(f"{where}: the query is empty")
    if len(label.query) > MAX_QUERY_CHARS:
        raise InvalidEvalQuery(f"{where}: a query is at most {MAX_QUERY_CHARS} characters")
    if not label.files and not label.chunks:
        raise InvalidEvalQuery(f"{where}: name the files and/or chunks that answer the query")
    if len(label.files) > MAX_REFS or len(label.chunks) > MAX_REFS:
        raise InvalidEvalQuery(f"{where}: at most {MAX_REFS} files and {MAX_REFS} chunks")
    if any(not ref or len(ref) > MAX_REF_CHARS for ref in (*label.files, *label.chunks)):
        raise InvalidEvalQuery(f"{where}: a file or chunk id is 1 to {MAX_REF_CHARS} characters")
    if label.answer is not None and len(label.answer) > MAX_ANSWER_CHARS:
        raise InvalidEvalQuery(f"{where}: an answer is at most {MAX_ANSWER_CHARS} characters")


async def _dataset_files(ctx: KbContext, dataset_id: str) -> list[FileEntry]:
    out: list[FileEntry] = []
    while True:
        page = await ctx.catalog.list_files(dataset_id, limit=_FILE_PAGE, offset=len(out))
        out += page
        if len(page) < _FILE_PAGE:
            return out


def _resolver(files: Sequence[FileEntry]) -> dict[str, str | None]:
    """File refs to ids: an id, a name, a name without its extension (None: ambiguous)."""
    stems: dict[str, set[str]] = {}
    names: dict[str, set[str]] = {}
    for f in files:
        stems.setdefault(PurePosixPath(f.name).stem, set()).add(f.id)
        names.setdefault(f.name, set()).add(f.id)
    by_ref = {k: (min(v) if len(v) == 1 else None) for k, v in stems.items()}
    by_ref.update({k: (min(v) if len(v) == 1 else None) for k, v in names.items()})  # names win
    by_ref.update({f.id: f.id for f in files})  # ids win
    return by_ref


def _resolve(refs: Iterable[str], by_ref: dict[str, str | None], where: str) -> tuple[str, ...]:
    out = []
    for ref in refs:
        if ref not in by_ref:
            raise InvalidEvalQuery(f"{where}: the dataset has no file with the id or name {ref[:200]!r}")
        found = by_ref[ref]
        if found is None:
            raise InvalidEvalQuery(
                f"{where}: several files of the dataset are named {ref[:200]!r}: give its id"
            )
        out.append(found)
    return tuple(dict.fromkeys(out))


@audit.audited("evalset.add", "dataset", "dataset_id")
async def add_labels(
    ctx: KbContext,
    principal: Principal,
    dataset_id: str,
    labels: Sequence[Label],
    *,
    source: EvalSource,
    max_queries: int,
) -> list[EvalQuery]:
    """Add ``labels`` to the dataset's set, all or none (the first bad one is INVALID_EVAL_QUERY
    naming its position; past the bound EVALSET_FULL)."""
    dataset = await writable(principal, ctx.catalog, dataset_id)
    audit.note(tenant_id=dataset.tenant_id, source=source.value, count=len(labels))
    if not labels:
        raise InvalidEvalQuery("give at least one labelled query")
    if len(labels) > MAX_BATCH:
        raise InvalidEvalQuery(f"at most {MAX_BATCH} labelled queries a request")
    for i, label in enumerate(labels):
        _check(label, f"queries[{i}]")
    by_ref = _resolver(await _dataset_files(ctx, dataset.id)) if any(x.files for x in labels) else {}
    queries = [
        EvalQuery(
            id=str(uuid.uuid4()),
            dataset_id=dataset.id,
            query=label.query,
            files=_resolve(label.files, by_ref, f"queries[{i}]"),
            chunks=tuple(dict.fromkeys(label.chunks)),
            answer=label.answer,
            source=source,
        )
        for i, label in enumerate(labels)
    ]
    return await ctx.catalog.add_eval_queries(dataset.id, queries, max_queries=max_queries)


async def list_labels(
    ctx: KbContext, principal: Principal, dataset_id: str, *, limit: int = 100, offset: int = 0
) -> tuple[list[EvalQuery], int]:
    """A page of the set, oldest first, and how many it holds."""
    await readable(principal, ctx.catalog, dataset_id)
    limit = max(1, min(limit, MAX_PAGE))
    page = await ctx.catalog.list_eval_queries(dataset_id, limit=limit, offset=max(0, offset))
    return page, await ctx.catalog.count_eval_queries(dataset_id)


async def all_labels(ctx: KbContext, dataset_id: str, *, offset: int = 0, limit: int) -> list[EvalQuery]:
    """The set's queries ``offset`` to ``offset + limit`` (check the dataset's access first)."""
    out: list[EvalQuery] = []
    while len(out) < limit:
        want = min(MAX_PAGE, limit - len(out))
        page = await ctx.catalog.list_eval_queries(dataset_id, limit=want, offset=offset + len(out))
        out += page
        if len(page) < want:
            break
    return out


@audit.audited("evalset.delete", "eval_query", "query_id")
async def delete_label(ctx: KbContext, principal: Principal, dataset_id: str, query_id: str) -> None:
    dataset = await writable(principal, ctx.catalog, dataset_id)
    audit.note(tenant_id=dataset.tenant_id, dataset_id=dataset.id)
    if not await ctx.catalog.delete_eval_query(dataset.id, query_id):
        raise NotFound(f"labelled query {query_id!r} not found in this dataset")


# -- reading a file of labels (the CLI's import) ----------------------------------------------------


def _strings(value: Any, where: str, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidEvalQuery(f"{where}: {name!r} is a list of strings")
    return tuple(value)


def label_of(obj: Any, where: str) -> Label:
    """One JSONL line's object: ``{"query", "files"|"chunks", "answer"?}``."""
    if not isinstance(obj, dict) or not isinstance(obj.get("query"), str):
        raise InvalidEvalQuery(f'{where}: expected an object with a "query" string')
    unknown = set(obj) - {"query", "files", "chunks", "answer"}
    if unknown:
        raise InvalidEvalQuery(f"{where}: unknown fields {sorted(unknown)}")
    answer = obj.get("answer")
    if answer is not None and not isinstance(answer, str):
        raise InvalidEvalQuery(f'{where}: "answer" is a string')
    label = Label(
        obj["query"],
        _strings(obj.get("files"), where, "files"),
        _strings(obj.get("chunks"), where, "chunks"),
        answer,
    )
    _check(label, where)
    return label


def parse_jsonl(text: str, name: str = "labels") -> list[Label]:
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidEvalQuery(f"{name} line {n}: not JSON ({exc.msg})") from exc
        out.append(label_of(obj, f"{name} line {n}"))
    return out


def beir_labels(folder: Path, split: str = "test") -> list[Label]:
    """A BEIR folder's judged queries (queries.jsonl, qrels/<split>.tsv): each corpus id names a
    file of the dataset (its id, name, or name without extension)."""
    return [Label(text, tuple(sorted(docs))) for _, text, docs in load_labels(folder, split)]


def label_json(q: EvalQuery) -> dict[str, Any]:
    return {
        "id": q.id,
        "query": q.query,
        "files": list(q.files),
        "chunks": list(q.chunks),
        "answer": q.answer,
        "source": q.source.value,
        "created_at": q.created_at,
    }
