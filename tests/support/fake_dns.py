"""A scripted resolver and a routing network backend, to test what a crawl connects to.

:class:`FakeDns` replaces ``socket.getaddrinfo`` (what asyncio, anyio, httpx and
:func:`ragd.sources.address_guard.resolve` all end up calling) for the names it is told
about; every other name still goes to the real resolver.  Each name has a list of answers
given in turn, the last one repeated::

    dns = FakeDns(monkeypatch)
    dns.answer("docs.rebind.test", [PUBLIC], ["127.0.0.1"])   # public once, loopback after

:class:`Routing` is the network under a guarded client in tests: it records every address
it is asked to connect to and routes the public test address to loopback, where the test's
server listens -- as if that server were on the Internet.  An address it does not route is
connected to as it is, so a guard that let ``127.0.0.1`` through would reach the server.
"""

from __future__ import annotations

import socket
import threading
import typing
from typing import Any

import httpcore
import pytest

#: a global unicast address the tests pretend their loopback servers live at
PUBLIC = "93.184.216.34"


class FakeDns:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self._real = socket.getaddrinfo
        self._answers: dict[str, list[list[str]]] = {}
        self._lock = threading.Lock()
        #: every scripted name looked up, in order
        self.asked: list[str] = []
        monkeypatch.setattr(socket, "getaddrinfo", self._getaddrinfo)

    def answer(self, name: str, *answers: list[str]) -> None:
        self._answers[name.lower()] = [list(a) for a in answers]

    def _getaddrinfo(
        self, host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0
    ) -> list[tuple[Any, ...]]:
        name = host.decode("ascii") if isinstance(host, bytes) else host
        if not isinstance(name, str) or name.lower() not in self._answers:
            return self._real(host, port, family, type, proto, flags)
        with self._lock:
            queue = self._answers[name.lower()]
            addresses = queue.pop(0) if len(queue) > 1 else queue[0]
            self.asked.append(name.lower())
        number = int(port or 0)
        found: list[tuple[Any, ...]] = []
        for address in addresses:
            kind = socket.AF_INET6 if ":" in address else socket.AF_INET
            if family in (0, socket.AF_UNSPEC, kind):
                where = (address, number) if kind == socket.AF_INET else (address, number, 0, 0)
                found.append((kind, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", where))
        if not found:
            raise socket.gaierror(socket.EAI_NONAME, f"{name} has no address")
        return found


class Routing(httpcore.AsyncNetworkBackend):
    """Connects :data:`PUBLIC` to 127.0.0.1 and anything else as asked; records every request."""

    def __init__(self) -> None:
        self._real = httpcore.AnyIOBackend()
        #: (host, port) of every connection asked for
        self.connects: list[tuple[str, int]] = []

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.connects.append((host, port))
        target = "127.0.0.1" if host == PUBLIC else host
        return await self._real.connect_tcp(
            target, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError(f"no unix sockets here ({path}, {timeout}, {socket_options})")

    async def sleep(self, seconds: float) -> None:
        await self._real.sleep(seconds)
