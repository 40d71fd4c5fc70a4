"""Which addresses a crawl may connect to: public unicast only, each resolved address checked.

A host name is resolved with :func:`resolve` (the one resolver of this check; tests script
``socket.getaddrinfo`` beneath it) and :func:`public_addresses` refuses the name when
**any** address it resolves to is not public, so a name that answers a public and a
loopback address cannot slip through on the lucky one.  Not public:

* loopback, private (RFC 1918, ULA ``fc00::/7``), link-local (``169.254/16``, ``fe80::/10``,
  cloud metadata endpoints live there), carrier-grade NAT ``100.64/10``, multicast, reserved
  (``240/4``), unspecified (``0.0.0.0``, ``::``), the broadcast address, documentation and
  benchmark ranges -- every IPv4 address :attr:`ipaddress.IPv4Address.is_global` does not call
  global, plus multicast, which it does; in IPv6 anything outside global unicast ``2000::/3``
  (so site-local ``fec0::/10`` and multicast too) and what ``is_global`` excludes within it;
* an IPv6 address that carries an IPv4 one is judged by that IPv4 address too: IPv4-mapped
  ``::ffff:a.b.c.d``, the deprecated IPv4-compatible ``::a.b.c.d``, NAT64 ``64:ff9b::/96``
  and ``64:ff9b:1::/48``, 6to4 ``2002::/16`` and Teredo ``2001::/32``.

The check is made where the connection is opened (:mod:`ragd.sources.guarded_http`), and
the socket goes to the address that was checked: a name that resolves to a public address
when a source is added and to ``127.0.0.1`` later (DNS rebinding) is refused at the later
connection, whichever page, redirect or sync makes it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket

from ragd.errors import PrivateAddress

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
_COMPATIBLE = ipaddress.IPv6Network("::/96")  # ::a.b.c.d, deprecated (RFC 4291 2.5.5.1)
_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")  # the only IPv6 unicast routed on the Internet


def is_public(address: IPAddress) -> bool:
    """True for a global unicast address (see the module docstring for what is not)."""
    if isinstance(address, ipaddress.IPv4Address):
        return address.is_global and not address.is_multicast
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        return is_public(embedded)
    return address in _GLOBAL_UNICAST and address.is_global


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]  # the client's address (the server's is public by design)
    if address in _COMPATIBLE or any(address in net for net in _NAT64):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


async def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to for a TCP connection, in the resolver's order.

    Raises :class:`OSError` (``socket.gaierror``) when the name does not resolve.  The system
    resolver runs in a thread, as asyncio's own ``getaddrinfo`` does (uvloop's would bypass
    ``socket.getaddrinfo``, which tests script)."""
    infos = await asyncio.to_thread(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
    found: dict[IPAddress, None] = {}
    for _family, _type, _proto, _name, sockaddr in infos:
        found[ipaddress.ip_address(str(sockaddr[0]).partition("%")[0])] = None
    return list(found)


def check_addresses(host: str, addresses: list[IPAddress]) -> None:
    """Raise :class:`PrivateAddress` unless every one of ``addresses`` is public."""
    for address in addresses:
        if not is_public(address):
            raise PrivateAddress(
                f"{host[:200]!r} resolves to {address}, a loopback, private, link-local or reserved address",
                hint="only the service key, or RAGD_CRAWL__ALLOW_PRIVATE=true, may reach such addresses",
            )


async def public_addresses(host: str, port: int) -> list[IPAddress]:
    """The addresses of ``host``, every one checked; PrivateAddress if any is not public.

    Raises :class:`OSError` when the name does not resolve."""
    addresses = await resolve(host, port)
    check_addresses(host, addresses)
    return addresses
