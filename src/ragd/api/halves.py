"""Which API halves a ``ragd serve`` process serves (``RAGD_SERVER__APIS``), as the ingestion service
deploys them: one replica ingests, others answer searches (docs/deployment.md#split-roles).

    ingestion   PUT /api/v1/ingest, POST /api/v1/extract, /api/v1/documents/{id}[/chunks], PUT /process,
                a dataset's uploads and text content, file deletes, re-index, import, source add and sync
    retrieval   POST /search, /api/v1/search, /api/v1/datasets/{id}/search and …/eval, /mcp, and every
                model or chat route (/v1/…, /embed…)

Everything else (``/health``, ``/metrics``, tenants, keys, datasets, files listed, jobs, audit, the
UI) is served by every process.  A request for a route of a half this process does not serve meets
:class:`Unserved`, the router's first route, which raises the router's own 404: it answers exactly
as a path that never existed (a sibling method on the same path, such as listing a dataset's files
beside uploading them, must not turn it into a 405).
"""

from __future__ import annotations

from collections.abc import Collection

from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute, Match, compile_path
from starlette.types import Receive, Scope, Send

INGESTION = "ingestion"
RETRIEVAL = "retrieval"

#: (method, route template) of each half; tests check every one is a route of the full app
ROUTES: dict[str, frozenset[tuple[str, str]]] = {
    INGESTION: frozenset(
        {
            ("PUT", "/api/v1/ingest"),
            ("POST", "/api/v1/extract"),
            ("DELETE", "/api/v1/documents/{file_id}"),
            ("GET", "/api/v1/documents/{file_id}/chunks"),
            ("PUT", "/process"),
            ("POST", "/api/v1/datasets/{dataset_id}/files"),
            ("POST", "/api/v1/datasets/{dataset_id}/content"),
            ("DELETE", "/api/v1/datasets/{dataset_id}/files/{file_id}"),
            ("POST", "/api/v1/datasets/{dataset_id}/files/{file_id}/reindex"),
            ("POST", "/api/v1/datasets/{dataset_id}/reindex"),
            ("POST", "/api/v1/datasets/import"),
            ("POST", "/api/v1/datasets/{dataset_id}/sources"),
            ("POST", "/api/v1/datasets/{dataset_id}/sources/{source_id}/sync"),
        }
    ),
    RETRIEVAL: frozenset(
        {
            ("POST", "/search"),
            ("POST", "/api/v1/search"),
            ("POST", "/api/v1/datasets/{dataset_id}/search"),
            ("POST", "/api/v1/datasets/{dataset_id}/eval"),  # an evaluation set's run: searches
        }
    ),
}
#: whole path prefixes of a half, any method: every OpenAI-shaped route (chat, models, embeddings,
#: rerank), the TEI embedder and MCP
PREFIXES: dict[str, tuple[str, ...]] = {INGESTION: (), RETRIEVAL: ("/v1/", "/embed", "/mcp")}


class Unserved(BaseRoute):
    """Matches the requests of the halves not served and answers them with the router's 404."""

    def __init__(self, apis: Collection[str]) -> None:
        off = [half for half in ROUTES if half not in apis]
        self._routes = [
            (method, compile_path(path)[0]) for half in off for method, path in sorted(ROUTES[half])
        ]
        self._prefixes = tuple(prefix for half in off for prefix in PREFIXES[half])

    @property
    def empty(self) -> bool:
        return not self._routes and not self._prefixes

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http":
            path, method = scope["path"], scope["method"]
            if path.startswith(self._prefixes) or any(
                (m == method or (m, method) == ("GET", "HEAD")) and regex.match(path)
                for m, regex in self._routes
            ):
                return Match.FULL, {}
        return Match.NONE, {}

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:  # noqa: ARG002
        raise HTTPException(status_code=404)  # what the router raises for a path it does not know


def serve_only(routes: list[BaseRoute], apis: Collection[str]) -> list[BaseRoute]:
    """``routes`` with those of the halves not in ``apis`` answering 404 as if absent."""
    guard = Unserved(apis)
    return routes if guard.empty else [guard, *routes]
