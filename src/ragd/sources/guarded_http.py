"""An HTTP client for crawls that connects only to public addresses, checked at every connection.

    async with guarded_client() as client:          # what a tenant's web source uses
        response = await client.get("https://docs.example.org/")

Every TCP connection the client opens -- the first page, each redirect hop, robots.txt, every
later sync -- goes through :class:`GuardedBackend.connect_tcp`: the host is resolved
(:func:`ragd.sources.address_guard.resolve`), **every** address is checked, and the socket is
opened to a checked address, never to a name resolved a second time.  The request still names
the original host: httpx writes it in the ``Host`` header, and httpcore passes it as the TLS
server name, so SNI and certificate verification are against the name, not the address.  A
refused host raises :class:`ragd.errors.PrivateAddress` out of the request (not an
``httpx`` error), which the crawl records as that page's failure.

A name that does not resolve, or whose addresses all refuse the connection, is an
``httpcore.ConnectError`` (``httpx.ConnectError`` to the caller), as without the guard.  The
client ignores ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY``: a proxy would resolve the name
itself, out of reach of the check, so guarded crawls connect directly (sources allowed to reach
private addresses keep the environment's proxy, see :func:`crawl_client`).
"""

from __future__ import annotations

import ssl
import typing

import anyio
import httpcore
import httpx

from ragd.sources.address_guard import check_addresses, resolve

#: httpx's default pool limits (a crawl has one request in flight per source anyway)
_POOL = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0)


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """A network backend that resolves and checks the host, then connects to a checked address.

    ``inner`` opens the socket to the address (default: httpcore's own backend); tests hand in
    one that records what it was asked to connect to."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self._inner = inner if inner is not None else httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            with anyio.fail_after(timeout):
                addresses = await resolve(host, port)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"resolving {host!r} timed out") from exc
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve {host!r}: {exc}") from exc
        check_addresses(host, addresses)  # PrivateAddress before any socket is opened
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        raise failure or httpcore.ConnectError(f"{host!r} resolves to no address")

    async def connect_unix_socket(
        self,
        path: str,  # noqa: ARG002
        timeout: float | None = None,  # noqa: ARG002
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,  # noqa: ARG002
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("a crawl connects over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport (HTTP/1.1, TLS verified, connection pool) over a :class:`GuardedBackend`."""

    def __init__(
        self, *, verify: ssl.SSLContext | bool = True, network: httpcore.AsyncNetworkBackend | None = None
    ) -> None:
        super().__init__(verify=verify, trust_env=False)
        # the pool httpx built, again with the guarded backend (httpx takes no backend of its own)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(verify=verify, trust_env=False),
            max_connections=_POOL.max_connections,
            max_keepalive_connections=_POOL.max_keepalive_connections,
            keepalive_expiry=_POOL.keepalive_expiry,
            network_backend=GuardedBackend(network),
        )


def guarded_client(
    *, verify: ssl.SSLContext | bool = True, network: httpcore.AsyncNetworkBackend | None = None
) -> httpx.AsyncClient:
    """A client that reaches public addresses only (a transport given: no proxy from the environment)."""
    transport = GuardedTransport(verify=verify, network=network)
    return httpx.AsyncClient(transport=transport, follow_redirects=False)


def crawl_client(
    *, allow_private: bool, network: httpcore.AsyncNetworkBackend | None = None
) -> httpx.AsyncClient:
    """The client of a crawl: guarded, unless the source may reach private addresses (then httpx's
    default, which honours the environment's proxy settings)."""
    if allow_private:
        return httpx.AsyncClient(follow_redirects=False)
    return guarded_client(network=network)
