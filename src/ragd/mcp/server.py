"""ragd's Model Context Protocol server, on stdio (``ragd mcp``) or streamable HTTP (``/mcp``).

Built on the SDK's low-level :class:`mcp.server.Server`: :mod:`ragd.mcp.tools` holds the tools,
this module only lists them for the caller and runs them.

    tools/list  -> the tools the caller's key may use (readers do not see add_text / add_url)
    tools/call  -> arguments validated, the use-case run, its result as structured content
                   and as JSON text; a mistake (bad arguments, NOT_FOUND, FORBIDDEN…) is a tool
                   result with ``isError`` and ``CODE: message``, never a crash of the session;
                   an unexpected exception is a ``PIPELINE_FAILED`` tool error (logged in full)

Who calls: on stdio the local user, who owns the data folder (the service key's rights); on
HTTP the key the ``/mcp`` route resolved (``scope[PRINCIPAL_KEY]``), the same keys as the API.
The HTTP transport is stateless with JSON responses: any replica can answer any request.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    TextContent,
    Tool,
    ToolAnnotations,
)
from pydantic import ValidationError
from starlette.types import Receive, Scope, Send

from ragd import __version__
from ragd.bootstrap import Services
from ragd.errors import NotReady, RagError, Unauthorized
from ragd.kb.access import require_writer
from ragd.kb_types import ADMIN_ROLE, Principal
from ragd.mcp.tools import BY_NAME, TOOLS, ToolSpec
from ragd.observe.logging import sanitize

log = logging.getLogger(__name__)

#: the local user of ``ragd mcp``: the data folder is theirs
LOCAL = Principal(tenant_id=None, role=ADMIN_ROLE)
#: where the HTTP route leaves the caller it resolved, in the ASGI scope
PRINCIPAL_KEY = "ragd.principal"
INSTRUCTIONS = (
    "ragd searches a knowledge base. Call search first; cite what you use with each hit's "
    "citation label; read_document gives a hit's whole document. list_collections shows what "
    "you may search."
)

#: the transport's request (a Starlette Request on HTTP, None on stdio) -> who acts
PrincipalOf = Callable[[Any], Principal]


def local_principal(_request: object) -> Principal:
    return LOCAL


def http_principal(request: Any) -> Principal:
    caller = None if request is None else request.scope.get(PRINCIPAL_KEY)
    if not isinstance(caller, Principal):
        raise Unauthorized("no API key was checked for this request")
    return caller


def build_server(services: Callable[[], Services], principal_of: PrincipalOf) -> Server[Any]:
    """The MCP server over the services ``services()`` returns (raising NotReady until they are up)."""

    async def list_tools(ctx: Any, _params: Any) -> ListToolsResult:
        caller = principal_of(ctx.request)
        return ListToolsResult(tools=[_tool(s) for s in TOOLS if caller.can_write or not s.writes])

    async def call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        spec = BY_NAME.get(params.name)
        if spec is None:
            return _error(
                f"INVALID_REQUEST: unknown tool {params.name[:80]!r}; the tools are {', '.join(BY_NAME)}"
            )
        caller = principal_of(ctx.request)
        try:
            if spec.writes:
                require_writer(caller)  # before the arguments: a reader learns it may not, first
            try:
                args = spec.args.model_validate(params.arguments or {})
            except ValidationError as exc:
                return _error(f"INVALID_REQUEST: {_problems(exc)}")
            result = await spec.run(services(), caller, args)
        except RagError as exc:
            log.info("mcp tool %s failed: %s %s", spec.name, exc.code, sanitize(exc.message))
            hint = f" ({exc.hint})" if exc.hint else ""
            return _error(f"{exc.code}: {exc.message}{hint}")
        except Exception as exc:  # a bug is still the tool's failure, not the session's
            log.error("mcp tool %s crashed", spec.name, exc_info=exc)
            return _error(
                f"{RagError.code}: the tool failed ({type(exc).__name__}); the server log has the details"
            )
        return CallToolResult(
            content=[TextContent(type="text", text=result.model_dump_json())],
            structured_content=result.model_dump(mode="json"),
        )

    return Server(
        "ragd",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _tool(spec: ToolSpec) -> Tool:
    return Tool(
        name=spec.name,
        description=spec.description,
        input_schema=spec.args.model_json_schema(),
        output_schema=spec.result.model_json_schema(mode="serialization"),
        # adding the same name or URL twice leaves one file: the writes are idempotent too
        annotations=ToolAnnotations(
            read_only_hint=not spec.writes, destructive_hint=False, idempotent_hint=True
        ),
    )


def _error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def _problems(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


async def serve_stdio(open_services: Callable[[], AbstractAsyncContextManager[Services]]) -> None:
    """Serve on stdin/stdout until the client closes stdin.

    The SDK points fd 1 at stderr while it serves, so nothing but protocol reaches stdout: the
    services (the model, the index) are opened inside, after the streams are claimed."""
    async with stdio_server() as (read, write), open_services() as services:
        server = build_server(lambda: services, local_principal)
        await server.run(read, write, server.create_initialization_options())


class HttpMcp:
    """The server on streamable HTTP, for a route that has resolved the caller first.

    Stateless with JSON responses.  ``loopback_only`` (an open service, no API key): Host must be
    loopback or one of ``hosts``, Origin loopback or one of ``origins``, against DNS rebinding
    (behind :mod:`ragd.api.origin_guard`, which checks both for the whole app first); with a key
    the key is the guard."""

    def __init__(
        self,
        services: Callable[[], Services],
        *,
        loopback_only: bool,
        origins: Sequence[str] = (),
        hosts: Sequence[str] = (),
        max_body_bytes: int,
    ) -> None:
        self._server = build_server(services, http_principal)
        names = ["127.0.0.1", "localhost", "[::1]", *hosts]  # hosts: server.allowed_hosts
        self._security = TransportSecuritySettings(
            enable_dns_rebinding_protection=loopback_only,
            allowed_hosts=[spelled for name in names for spelled in (name, f"{name}:*")],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*", *origins],
        )
        self._max_body_bytes = max_body_bytes
        self._manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Serve requests while open (an app's lifespan); a new session manager each time."""
        manager = StreamableHTTPSessionManager(
            app=self._server,
            json_response=True,
            stateless=True,
            security_settings=self._security,
            max_request_body_size=self._max_body_bytes,
        )
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._manager is None:
            raise NotReady("the MCP endpoint is not running")
        await self._manager.handle_request(scope, receive, send)
