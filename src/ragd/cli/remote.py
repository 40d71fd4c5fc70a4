"""The CLI's HTTP client for a running ``ragd serve`` that holds the index (the only module that
speaks to it): search, stats and ingest go through the server's API and come back as the same
records the local commands render (:class:`Hit`, :class:`Inventory`, :class:`IngestReport`).

The server is found by its record in the data dir (:mod:`ragd.cli.server_record`) and believed only
when its process is alive and ``/health`` answers.  The key is the CLI's own
``RAGD_SERVER__API_KEY`` (the same settings the server reads).  A server's error comes back as the
same :class:`RagError` (its stable code) that the local command would have raised.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from ragd.cli.server_record import ServerRecord, process_alive, read_record
from ragd.errors import InvalidRequest, RagError, Unauthorized, UpstreamFailed
from ragd.ingest.batch import ref_for
from ragd.ingest.inventory import Inventory
from ragd.ingest.sources import SourceFile
from ragd.store.manifest_io import manifest_from_dict
from ragd.types import (
    ComponentScores,
    Hit,
    IndexManifest,
    IngestReport,
    IngestStatus,
    SearchKnobs,
    SearchMode,
)

#: the ingest route's header saying indexed or unchanged (``ragd.api.routes.ingest.STATUS_HEADER``)
STATUS_HEADER = "X-Ragd-Ingest-Status"
PROBE_TIMEOUT_S = 2.0
#: a large file's extraction and embedding may take minutes; the connection itself not
TIMEOUT = httpx.Timeout(30.0, read=900.0, write=900.0)


def live_server(data_dir: Path) -> ServerRecord | None:
    """The server recorded in ``data_dir`` if it is alive and answers; None for no or a stale record."""
    record = read_record(data_dir)
    if record is None or not process_alive(record.pid):
        return None
    try:
        answer = httpx.get(f"{record.url}/health", timeout=PROBE_TIMEOUT_S)
    except httpx.HTTPError:
        return None
    return record if answer.status_code == 200 else None


class RemoteIndex:
    """``async with RemoteIndex(url, key) as remote: await remote.search(...)``"""

    def __init__(self, url: str, api_key: str | None) -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(base_url=self.url, headers=headers, timeout=TIMEOUT)

    async def __aenter__(self) -> RemoteIndex:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._client.aclose()

    async def search(
        self,
        query: str,
        collections: Sequence[str],
        *,
        k: int,
        mode: SearchMode,
        knobs: SearchKnobs,
        filter_json: object = None,
    ) -> list[Hit]:
        """``POST /api/v1/search`` over ``collections`` (the service key's reach), explained;
        ``filter_json``: the user's filter expression as given (the server parses it again)."""
        body = {
            "query": query,
            "collection_names": list(collections),
            "k": k,
            "mode": mode.value,
            "explain": True,
            "min_score": knobs.min_score,
            "vector_weight": knobs.vector_weight,
            "diversity": knobs.diversity,
            "max_per_file": knobs.max_per_file,
            "languages": list(knobs.languages) or None,
            "rerank": knobs.rerank,
            "filter": filter_json,
        }
        data = await self._json("POST", "/api/v1/search", json=body)
        return [_hit(row) for row in data["results"]]

    async def stats(self) -> tuple[IndexManifest, Inventory]:
        """``GET /api/v1/stats``: the manifest and each collection's files and chunks."""
        data = await self._json("GET", "/api/v1/stats")
        rows = data["collections"]
        held = Inventory(
            chunks={r["name"]: int(r["chunks"]) for r in rows},
            files={r["name"]: int(r["files"]) for r in rows},
            total=int(data["chunks"]),
        )
        return manifest_from_dict(data["manifest"], self.url), held

    async def ingest(self, file: SourceFile, collection: str, *, force: bool) -> IngestReport:
        """Upload one file to ``PUT /api/v1/ingest`` under the id a local ingest gives it; a failure
        is a failed report (with the server's code), as the local batch makes one."""
        ref = ref_for(file, collection)
        started = time.perf_counter()
        form = {
            "file_id": ref.file_id,
            "filename": file.source,  # the server keeps it as meta.source, as a local ingest does
            "collection_name": collection,
            "collection_type": "local",
            "user_id": "cli",
            "force": "true" if force else "false",
        }
        try:
            with file.path.open("rb") as stream:
                response = await self._client.put(
                    "/api/v1/ingest", data=form, files={"file": (file.path.name, stream)}
                )
            _check(response, self.url)
        except (RagError, OSError) as exc:
            code = exc.code if isinstance(exc, RagError) else "EXTRACTION_FAILED"
            return IngestReport(
                source=file.source,
                status=IngestStatus.FAILED,
                file_id=ref.file_id,
                collection_name=collection,
                code=code,
                message=str(exc),
                seconds=time.perf_counter() - started,
            )
        except httpx.HTTPError as exc:
            raise _unreachable(self.url, exc) from exc
        status = response.headers.get(STATUS_HEADER, IngestStatus.INDEXED.value)
        return IngestReport(
            source=file.source,
            status=IngestStatus(status) if status in _STATUSES else IngestStatus.INDEXED,
            file_id=ref.file_id,
            collection_name=collection,
            chunks=int(response.json()["chunks_count"]),
            seconds=time.perf_counter() - started,
        )

    async def backup(self, name: str) -> dict[str, Any]:
        """``POST /api/v1/system/backup``: the server writes a backup named ``name`` in its backup dir."""
        return await self._json("POST", "/api/v1/system/backup", json={"name": name})

    async def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = await self._client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise _unreachable(self.url, exc) from exc
        _check(response, self.url)
        data: dict[str, Any] = response.json()
        return data


_STATUSES = frozenset({IngestStatus.INDEXED.value, IngestStatus.UNCHANGED.value})


def _hit(row: dict[str, Any]) -> Hit:
    s = row.get("scores") or {}
    return Hit(
        id=row["id"],
        content=row["content"],
        meta=row.get("meta") or {},
        score=float(row["score"]),
        scores=ComponentScores(
            dense=s.get("dense"), sparse=s.get("sparse"), fused=s.get("fused"), rerank=s.get("rerank")
        ),
        relevance=float(row.get("relevance") or 0.0),
    )


def _unreachable(url: str, exc: httpx.HTTPError) -> UpstreamFailed:
    return UpstreamFailed(
        f"the ragd server at {url} did not answer ({type(exc).__name__}: {exc})",
        hint="is it still running? Stopped, the index is the CLI's again",
    )


def _check(response: httpx.Response, url: str) -> None:
    """Raise the server's error as the RagError it was (its code), or pass a success."""
    if response.is_success:
        return
    try:
        detail = response.json().get("detail")
    except ValueError:
        detail = None
    if response.status_code == 401:
        raise Unauthorized(
            f"the ragd server at {url} refused the API key",
            hint="set RAGD_SERVER__API_KEY to the server's key (the environment or .env it reads)",
        )
    if isinstance(detail, dict) and isinstance(detail.get("code"), str):
        code = str(detail.get("reason") or detail["code"])
        error = _error_class(code)(str(detail.get("error", "")), hint=detail.get("hint"))
        error.code, error.http_status = code, response.status_code
        raise error
    if isinstance(detail, list):  # FastAPI's validation error
        problems = "; ".join(f"{'.'.join(map(str, d.get('loc', ())))}: {d.get('msg')}" for d in detail)
        raise InvalidRequest(f"the ragd server at {url} refused the request: {problems}")
    raise RagError(f"the ragd server at {url} answered HTTP {response.status_code}: {response.text[:300]}")


def _error_class(code: str) -> type[RagError]:
    return next((cls for cls in _error_classes(RagError) if cls.code == code), RagError)


def _error_classes(root: type[RagError]) -> Iterator[type[RagError]]:
    yield root
    for sub in root.__subclasses__():
        yield from _error_classes(sub)


async def ingest_many(
    remote: RemoteIndex,
    files: Sequence[SourceFile],
    collection: str,
    *,
    force: bool,
    concurrency: int,
    on_done: Callable[[IngestReport], None],
) -> list[IngestReport]:
    """Upload ``files`` with at most ``concurrency`` in flight, reports in the order given."""
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(file: SourceFile) -> IngestReport:
        async with gate:
            report = await remote.ingest(file, collection, force=force)
        on_done(report)
        return report

    return list(await asyncio.gather(*(one(f) for f in files)))


async def call_json(client: httpx.AsyncClient, method: str, path: str, **kwargs: Any) -> Any:
    """One request to a ragd server; its answer's JSON, or its error raised as the RagError it was."""
    url = str(client.base_url)
    try:
        response = await client.request(method, path, **kwargs)
    except httpx.HTTPError as exc:
        raise _unreachable(url, exc) from exc
    _check(response, url)
    return response.json()
