"""The private-address check at every connection of a crawl (issue 30 §1.6, docs/security.md).

Names are answered by a scripted resolver (tests/support/fake_dns.py patches
``socket.getaddrinfo``, beneath ragd's resolver and httpx's alike); the servers are real,
on loopback, and record every request they get.  A guarded client's network is
:class:`Routing`, which takes the test's public address to loopback and any other address
where it says: if the guard let ``127.0.0.1`` through, the server would see the request.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ragd.errors import PrivateAddress
from ragd.sources.address_guard import is_public, public_addresses
from ragd.sources.base import ItemFailure, SourceItem
from ragd.sources.guarded_http import guarded_client
from ragd.sources.web import CrawlSpec, WebSource
from tests.sources.site import LoopbackSite, Page
from tests.support.fake_dns import PUBLIC, FakeDns, Routing

NAME = "docs.rebind.test"


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> FakeDns:
    return FakeDns(monkeypatch)


@pytest.fixture
def site() -> Iterator[LoopbackSite]:
    with LoopbackSite() as running:  # every answer closes its connection: each request connects anew
        yield running


def page(name: str, *links: str) -> Page:
    text = f"<p>The {name} page explains {name} in enough words for the extractor to keep it whole.</p>"
    return Page.html(f"Page {name}", text * 3, links=links)


def port_of(site: LoopbackSite) -> int:
    return int(site.origin.rsplit(":", 1)[1])


# -- which addresses are public -----------------------------------------------------------------

REFUSED = [
    "127.0.0.1",
    "127.8.9.10",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",  # cloud metadata
    "100.64.0.1",  # carrier-grade NAT
    "0.0.0.0",
    "255.255.255.255",
    "224.0.0.1",  # multicast: is_global calls it global
    "239.255.255.250",
    "240.0.0.1",
    "192.0.2.1",
    "198.18.0.1",
    "::1",
    "::",
    "fe80::1",
    "fd00::1",
    "fec0::1",  # site-local: is_global calls it global on 3.11
    "ff0e::1",  # global-scope multicast
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:10.0.0.1",
    "::127.0.0.1",  # IPv4-compatible: is_global calls it global
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1: is_global calls it global
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "64:ff9b:1::a00:1",  # local-use NAT64 of 10.0.0.1
    "2002:7f00:1::",  # 6to4 of 127.0.0.1
    "2002:c0a8:101::1",  # 6to4 of 192.168.1.1
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo (2001::/32)
    "100::1",  # discard-only
]
ALLOWED = [
    "93.184.216.34",
    "8.8.8.8",
    "1.1.1.1",
    "2606:4700:4700::1111",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
]


@pytest.mark.parametrize("address", REFUSED)
def test_non_public_addresses_are_refused(address: str) -> None:
    assert not is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ALLOWED)
def test_public_addresses_pass(address: str) -> None:
    assert is_public(ipaddress.ip_address(address))


async def test_one_private_answer_among_public_ones_refuses_the_name(dns: FakeDns) -> None:
    dns.answer(NAME, [PUBLIC, "10.0.0.7"])
    with pytest.raises(PrivateAddress, match=r"10\.0\.0\.7"):
        await public_addresses(NAME, 443)
    dns.answer(NAME, ["8.8.8.8", PUBLIC])
    assert [str(a) for a in await public_addresses(NAME, 443)] == ["8.8.8.8", PUBLIC]


async def test_spellings_of_loopback_are_refused_at_connection() -> None:
    """IP literals go through the same check (the resolver reads 0x7f.1 and 2130706433 too)."""
    network = Routing()
    async with guarded_client(network=network) as client:
        for host in ("127.0.0.1", "[::1]", "[::ffff:127.0.0.1]", "0x7f.0.0.1", "2130706433", "127.1", "0"):
            with pytest.raises(PrivateAddress):
                await client.get(f"http://{host}:9/")
    assert network.connects == []


# -- the socket goes to the address checked; Host and TLS keep the name -----------------------


class _TlsSite:
    """An HTTPS server on loopback with a certificate for ``NAME`` only; records SNI and Host."""

    def __init__(self, tmp: Path) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, NAME)])
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(NAME)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256())
        )
        self.cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
        self.cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        self.server_names: list[str | None] = []
        self.hosts: list[str | None] = []
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_path, key_path)
        context.sni_callback = lambda _sock, name, _ctx: self.server_names.append(name)  # type: ignore[assignment,misc,return-value]
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.hosts.append(self.headers.get("Host"))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = int(self.httpd.server_address[1])
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01})
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self._thread.join()
        self.httpd.server_close()


async def test_the_socket_goes_to_the_checked_address_while_host_and_tls_name_the_host(
    dns: FakeDns, tmp_path: Path
) -> None:
    dns.answer(NAME, [PUBLIC])
    tls = _TlsSite(tmp_path)
    try:
        network = Routing()
        trust = ssl.create_default_context(cafile=str(tls.cert_path))
        async with guarded_client(verify=trust, network=network) as client:
            response = await client.get(f"https://{NAME}:{tls.port}/page")
        assert (response.status_code, response.text) == (200, "ok")
        assert network.connects == [(PUBLIC, tls.port)]  # the address checked, not the name again
        assert tls.server_names == [NAME]  # SNI, and the certificate (for the name only) verified
        assert tls.hosts == [f"{NAME}:{tls.port}"]
        assert dns.asked == [NAME]  # resolved once, by the guard
    finally:
        tls.close()


async def test_a_proxy_in_the_environment_is_not_used(
    dns: FakeDns, site: LoopbackSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proxy would resolve the name itself, out of reach of the check: guarded clients go direct."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    dns.answer(NAME, [PUBLIC])
    site.pages["/"] = page("home")
    network = Routing()
    async with guarded_client(network=network) as client:
        assert (await client.get(f"http://{NAME}:{port_of(site)}/")).status_code == 200
    assert network.connects == [(PUBLIC, port_of(site))]


async def test_a_name_that_does_not_resolve_is_a_connect_error(dns: FakeDns) -> None:
    dns.answer(NAME, [])
    async with guarded_client(network=Routing()) as client:
        with pytest.raises(httpx.ConnectError, match="cannot resolve"):
            await client.get(f"http://{NAME}/")


# -- redirects: every hop connects through the guard --------------------------------------------


async def test_a_redirect_to_loopback_is_refused(dns: FakeDns, site: LoopbackSite) -> None:
    dns.answer(NAME, [PUBLIC])
    dns.answer("inside.rebind.test", ["127.0.0.1"])
    with LoopbackSite({"/secret": page("secret")}) as inside:
        for target in (inside.url("/secret"), f"http://inside.rebind.test:{port_of(inside)}/secret"):
            site.pages["/go"] = Page.redirect(target, 302)
            network = Routing()
            async with guarded_client(network=network) as client:
                with pytest.raises(PrivateAddress):
                    await client.get(f"http://{NAME}:{port_of(site)}/go", follow_redirects=True)
            assert network.connects == [(PUBLIC, port_of(site))]  # the first hop only
        assert inside.requests == []
    assert site.paths() == ["/go", "/go"]


async def test_a_redirect_hop_after_the_answer_changed_is_refused(dns: FakeDns, site: LoopbackSite) -> None:
    """Within the site: robots.txt and the start page on the public answer, the hop on loopback."""
    dns.answer(NAME, [PUBLIC], [PUBLIC], ["127.0.0.1"])
    site.pages.update({"/": Page.redirect("/moved"), "/moved": page("moved")})
    network = Routing()
    source = WebSource(CrawlSpec(f"http://{NAME}:{port_of(site)}/", delay_s=0.0), network=network)
    try:
        with pytest.raises(PrivateAddress):
            [e async for e in source.scan()]
    finally:
        await source.aclose()
    assert site.paths() == ["/robots.txt", "/"]
    assert network.connects == [(PUBLIC, port_of(site))] * 2


# -- crawls: every page, every sync ---------------------------------------------------------------


async def test_a_page_whose_host_rebinds_mid_crawl_is_that_pages_failure(
    dns: FakeDns, site: LoopbackSite
) -> None:
    """robots.txt, the start page and /a on the public answer; /b and /c on loopback: refused,
    each its own PRIVATE_ADDRESS failure, and the crawl finishes."""
    dns.answer(NAME, [PUBLIC], [PUBLIC], [PUBLIC], ["127.0.0.1"])
    site.pages.update(
        {"/": page("home", "/a", "/b", "/c"), "/a": page("a"), "/b": page("b"), "/c": page("c")}
    )
    origin = f"http://{NAME}:{port_of(site)}"
    source = WebSource(CrawlSpec(f"{origin}/", delay_s=0.0), network=Routing())
    try:
        entries = [e async for e in source.scan()]
    finally:
        await source.aclose()
    assert [e.key for e in entries if isinstance(e, SourceItem)] == [f"{origin}/", f"{origin}/a"]
    failures = {e.key: (e.code, e.hides) for e in entries if isinstance(e, ItemFailure)}
    # the pages are not known to be gone: the failures hide the scope, so a sync removes nothing
    refused = ("PRIVATE_ADDRESS", f"{origin}/")
    assert failures == {f"{origin}/b": refused, f"{origin}/c": refused}
    assert site.paths() == ["/robots.txt", "/", "/a"]


async def test_a_name_resolving_to_loopback_at_crawl_time_is_refused_before_any_connection(
    dns: FakeDns, site: LoopbackSite
) -> None:
    """ragd's own network (no Routing): the crawl resolves the name, checks, and never connects."""
    dns.answer(NAME, ["127.0.0.1"])
    site.pages["/"] = page("home")
    source = WebSource(CrawlSpec(f"http://{NAME}:{port_of(site)}/", delay_s=0.0))
    try:
        with pytest.raises(PrivateAddress):
            [e async for e in source.scan()]
    finally:
        await source.aclose()
    assert site.requests == []
    assert dns.asked == [NAME]


async def test_a_second_crawl_after_the_answer_changed_is_refused(dns: FakeDns, site: LoopbackSite) -> None:
    dns.answer(NAME, [PUBLIC])
    site.pages.update({"/": page("home", "/a"), "/a": page("a")})
    network = Routing()
    source = WebSource(CrawlSpec(f"http://{NAME}:{port_of(site)}/", delay_s=0.0), network=network)
    try:
        first = [e async for e in source.scan()]
        assert [type(e) for e in first] == [SourceItem, SourceItem]
        seen = len(site.requests)
        dns.answer(NAME, ["127.0.0.1"])
        with pytest.raises(PrivateAddress):
            [e async for e in source.scan()]
        with pytest.raises(PrivateAddress):  # load() fetches through the same guard
            await source.load(SourceItem(key=f"http://{NAME}:{port_of(site)}/a", fingerprint="", name="a"))
    finally:
        await source.aclose()
    assert len(site.requests) == seen
    assert set(network.connects) == {(PUBLIC, port_of(site))}


async def test_a_spec_that_allows_private_addresses_reaches_loopback(site: LoopbackSite) -> None:
    site.pages["/"] = page("home")
    spec = CrawlSpec(site.url("/"), delay_s=0.0)
    for allow, expected in ((False, PrivateAddress), (True, None)):
        source = WebSource(CrawlSpec(spec.start_url, delay_s=0.0, allow_private=allow))
        try:
            if expected is None:
                assert len([e async for e in source.scan()]) == 1
            else:
                with pytest.raises(expected):
                    [e async for e in source.scan()]
        finally:
            await source.aclose()
    assert site.paths() == ["/robots.txt", "/"]
