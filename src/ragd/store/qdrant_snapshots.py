"""IndexSnapshots on a Qdrant server's snapshot API, over its REST interface with httpx.

    POST   /collections/{c}/snapshots?wait=true                 -> {"result": {"name", "size", "checksum"}}
    GET    /collections/{c}/snapshots/{name}                     the snapshot file (streamed to disk)
    DELETE /collections/{c}/snapshots/{name}?wait=true           the server's copy, once downloaded
    POST   /collections/{c}/snapshots/upload?wait=true&priority=snapshot&checksum=<sha256>
                                                                 multipart field ``snapshot``: recover

The download is hashed as it is written and must match the server's ``checksum`` (SHA-256) and
``size``; the upload sends the checksum so the server refuses a corrupted file too.  The API key
goes in the ``api-key`` header.  Tested against a scripted server speaking these shapes (the
qdrant-client 1.20 OpenAPI models), not against a real Qdrant.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote

import httpx

from ragd.errors import StoreError, StoreUnavailable
from ragd.settings import StoreSettings
from ragd.store.snapshots import SnapshotFile

log = logging.getLogger(__name__)

#: a snapshot of a large collection takes a while to make and to move
TRANSFER_TIMEOUT_S = 3600.0
_BLOCK = 1 << 20


class QdrantSnapshots:
    def __init__(
        self,
        *,
        url: str,
        collection: str,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._base = url.rstrip("/")
        self._collection = collection
        self._path = f"/collections/{quote(collection, safe='')}/snapshots"
        self._headers = {"api-key": api_key} if api_key else {}
        self._timeout = httpx.Timeout(timeout_s, read=TRANSFER_TIMEOUT_S, write=TRANSFER_TIMEOUT_S)
        self._transport = transport

    @classmethod
    def from_settings(cls, settings: StoreSettings) -> QdrantSnapshots | None:
        """The snapshot port of a Qdrant server store; None for the embedded engine or local mode."""
        if settings.backend != "qdrant" or not settings.url or settings.url == ":memory:":
            return None
        return cls(
            url=settings.url,
            collection=settings.collection,
            api_key=settings.api_key,
            timeout_s=settings.timeout_s,
        )

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self._base, headers=self._headers, timeout=self._timeout, transport=self._transport
        )

    async def take(self, dest: Path) -> SnapshotFile:
        async with self._client() as client:
            made = _result(await _send(client, "POST", self._path, params={"wait": "true"}), "create")
            if not isinstance(made, dict) or not isinstance(made.get("name"), str):
                raise StoreError(f"the Qdrant server answered a snapshot without a name: {str(made)[:200]}")
            name = made["name"]
            try:
                got = await self._download(client, f"{self._path}/{quote(name, safe='')}", dest)
            finally:
                await self._forget(client, name)
        expected = made.get("checksum")
        if isinstance(expected, str) and expected.lower() != got.sha256:
            raise StoreError(f"the Qdrant snapshot {name} does not match its checksum after download")
        if isinstance(made.get("size"), int) and made["size"] != got.bytes:
            raise StoreError(
                f"the Qdrant snapshot {name} has {got.bytes} bytes after download, not {made['size']}"
            )
        log.info("Qdrant snapshot %s of %s: %d bytes", name, self._collection, got.bytes)
        return got

    async def _download(self, client: httpx.AsyncClient, path: str, dest: Path) -> SnapshotFile:
        digest, size = hashlib.sha256(), 0
        try:
            async with client.stream("GET", path) as response:
                if response.status_code != httpx.codes.OK:
                    await response.aread()
                    _raise(response, "download")
                with dest.open("xb") as fh:
                    async for block in response.aiter_bytes(_BLOCK):
                        fh.write(block)
                        digest.update(block)
                        size += len(block)
        except httpx.HTTPError as exc:
            raise StoreUnavailable(f"the Qdrant snapshot download failed: {exc!r}") from exc
        return SnapshotFile(bytes=size, sha256=digest.hexdigest())

    async def _forget(self, client: httpx.AsyncClient, name: str) -> None:
        """Delete the server's copy (a failure is logged: it only costs the server disk space)."""
        try:
            await _send(client, "DELETE", f"{self._path}/{quote(name, safe='')}", params={"wait": "true"})
        except StoreError as exc:
            log.warning("could not delete the Qdrant snapshot %s on the server: %s", name, exc)

    async def recover(self, src: Path, sha256: str) -> None:
        params = {"wait": "true", "priority": "snapshot", "checksum": sha256}
        async with self._client() as client:
            with src.open("rb") as fh:
                files = {"snapshot": (src.name, fh, "application/octet-stream")}
                response = await _send(client, "POST", f"{self._path}/upload", params=params, files=files)
        if _result(response, "recover") is not True:
            raise StoreError(f"the Qdrant server did not recover the snapshot: {response.text[:200]}")
        log.info("Qdrant collection %s recovered from %s", self._collection, src)


async def _send(client: httpx.AsyncClient, method: str, path: str, **kwargs: Any) -> httpx.Response:
    try:
        response = await client.request(method, path, **kwargs)
    except httpx.HTTPError as exc:
        raise StoreUnavailable(f"the Qdrant server did not answer {method} {path}: {exc!r}") from exc
    if not response.is_success:
        _raise(response, f"{method} {path}")
    return response


def _raise(response: httpx.Response, what: str) -> NoReturn:
    """Qdrant's error body is ``{"status": {"error": "..."}, "time": ...}``."""
    try:
        detail = response.json()["status"]["error"]
    except (ValueError, KeyError, TypeError):
        detail = response.text[:200]
    raise StoreError(f"the Qdrant server refused the snapshot {what} ({response.status_code}): {detail}")


def _result(response: httpx.Response, what: str) -> Any:
    try:
        return response.json()["result"]
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"the Qdrant server's snapshot {what} answer is not JSON with a result") from exc
