"""A real S3 server on loopback for tests: moto's ``ThreadedMotoServer`` (the S3 HTTP protocol).

Use it from any test package by importing the fixture into that package's
``conftest.py`` (a non-root conftest may not set ``pytest_plugins``)::

    from tests.support.s3_server import s3_server

    __all__ = ["s3_server"]

and in a test::

    async def test_ingest_by_reference(s3_server: S3Server) -> None:
        bucket = s3_server.bucket({"docs/a.txt": b"hello"})   # a fresh bucket, unique name
        settings = s3_server.settings(allowed_buckets=(bucket,))  # an S3Settings for the server
        ...
        assert [r.method for r in s3_server.requests_for(bucket)] == ["HEAD", "GET"]

The server is session-scoped (moto keeps its state in process-wide backends),
so every test makes its own bucket with :meth:`S3Server.bucket` rather than
resetting the server.  While the fixture is alive the machine's AWS setup
cannot leak in: every ``AWS_*`` and proxy variable is removed and the shared
config/credentials files point at a path that does not exist (restored at
the end of the session).  Settings carry the dummy credentials
``testing``/``testing`` explicitly.

Two repairs of the test harness (not of the wire format) happen in a WSGI
wrapper that also records every request: moto's own ``server: amazon.com``
header is dropped because werkzeug's dev server already sends ``Server`` and
aiohttp refuses a response with two; and the listening socket is closed on
stop (``ThreadedMotoServer.stop`` leaves it open, a ResourceWarning).

:meth:`S3Server.enforce_auth` turns on moto's IAM authentication for a block
(so unknown access keys get ``InvalidAccessKeyId`` and users without a policy
``AccessDenied``), and :meth:`S3Server.user_without_access` makes such a user.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import moto.settings
import pytest
from moto.server import ThreadedMotoServer
from pydantic import SecretStr

from ragd.settings import S3Settings

__all__ = ["RecordedS3Request", "S3Server", "isolated_aws_env", "s3_server"]

REGION = "us-east-1"
ACCESS_KEY = "testing"
SECRET_KEY = "testing"

_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@dataclass(frozen=True, slots=True)
class RecordedS3Request:
    """One request as moto received it (path-style: ``/bucket/key``)."""

    method: str
    path: str
    query: str


class _Recorder:
    """WSGI middleware: log each request; drop moto's duplicate ``Server`` header."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self._app = app
        self._lock = threading.Lock()
        self._requests: list[RecordedS3Request] = []

    @property
    def requests(self) -> list[RecordedS3Request]:
        with self._lock:
            return list(self._requests)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        request = RecordedS3Request(
            environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", "")
        )
        with self._lock:
            self._requests.append(request)

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            kept = [(name, value) for name, value in headers if name.lower() != "server"]
            return start_response(status, kept, exc_info)

        return self._app(environ, start)


class S3Server:
    """A started moto S3 server on 127.0.0.1 plus helpers; build with :func:`running_s3_server`."""

    def __init__(self, moto_server: ThreadedMotoServer, recorder: _Recorder) -> None:
        self._moto = moto_server
        self._recorder = recorder
        host, port = moto_server.get_host_and_port()
        self.host = host
        self.port = port
        self.endpoint_url = f"http://{host}:{port}"
        self._names = itertools.count(1)
        # moto's backend is one per process: servers started by different test modules share it,
        # so names carry this server's own tag to never meet another's buckets or users
        self._tag = uuid.uuid4().hex[:8]
        self.client: Any = self._boto3("s3")

    def settings(self, **overrides: Any) -> S3Settings:
        """``S3Settings`` pointing at this server with the dummy credentials; ``overrides`` win."""
        fields: dict[str, Any] = {
            "endpoint_url": self.endpoint_url,
            "region": REGION,
            "access_key_id": ACCESS_KEY,
            "secret_access_key": SecretStr(SECRET_KEY),
            "addressing_style": "path",
            "timeout_s": 5.0,
        }
        return S3Settings(**{**fields, **overrides})

    def bucket(self, objects: Mapping[str, bytes] | None = None, *, name: str | None = None) -> str:
        """Create a bucket (a fresh ``ragd-test-<n>`` unless ``name``), put ``objects``, return its name."""
        bucket = name or f"ragd-test-{self._tag}-{next(self._names)}"
        self.client.create_bucket(Bucket=bucket)
        for key, body in (objects or {}).items():
            self.put(bucket, key, body)
        return bucket

    def put(self, bucket: str, key: str, body: bytes) -> None:
        self.client.put_object(Bucket=bucket, Key=key, Body=body)

    @property
    def requests(self) -> list[RecordedS3Request]:
        """Every request the server received so far, in arrival order (a copy)."""
        return self._recorder.requests

    def requests_for(self, bucket: str) -> list[RecordedS3Request]:
        """The requests addressed to ``bucket`` (path-style addressing)."""
        return [r for r in self.requests if r.path == f"/{bucket}" or r.path.startswith(f"/{bucket}/")]

    @contextlib.contextmanager
    def enforce_auth(self) -> Iterator[None]:
        """Within the block, moto checks signatures and IAM policies on every request."""
        saved = moto.settings.INITIAL_NO_AUTH_ACTION_COUNT
        moto.settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
        try:
            yield
        finally:
            moto.settings.INITIAL_NO_AUTH_ACTION_COUNT = saved

    def user_without_access(self) -> tuple[str, str]:
        """A new IAM user with no policy attached: its (access key id, secret key)."""
        iam = self._boto3("iam")
        try:
            name = f"ragd-nobody-{self._tag}-{next(self._names)}"
            iam.create_user(UserName=name)
            key = iam.create_access_key(UserName=name)["AccessKey"]
        finally:
            iam.close()
        return str(key["AccessKeyId"]), str(key["SecretAccessKey"])

    def close(self) -> None:
        self.client.close()
        self._moto.stop()
        wsgi_server = self._moto._server  # stop() shuts the loop down but leaves the socket open
        if wsgi_server is not None:
            wsgi_server.server_close()

    def _boto3(self, service: str) -> Any:
        return boto3.client(
            service,
            endpoint_url=self.endpoint_url,
            region_name=REGION,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
        )


@contextlib.contextmanager
def isolated_aws_env(scratch: Path) -> Iterator[None]:
    """No ``AWS_*`` or proxy variable, and no readable ~/.aws config, within the block."""
    with pytest.MonkeyPatch.context() as mp:
        for name in [n for n in os.environ if n.startswith("AWS_") or n in _PROXY_VARS]:
            mp.delenv(name)
        mp.setenv("AWS_CONFIG_FILE", str(scratch / "no-aws-config"))
        mp.setenv("AWS_SHARED_CREDENTIALS_FILE", str(scratch / "no-aws-credentials"))
        mp.setenv("AWS_EC2_METADATA_DISABLED", "true")
        mp.setenv("NO_PROXY", "127.0.0.1,localhost")
        yield


@contextlib.contextmanager
def running_s3_server() -> Iterator[S3Server]:
    """Start moto on a free loopback port, yield an :class:`S3Server`, stop it."""
    moto_server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto_server.start()
    wsgi_server = moto_server._server
    assert wsgi_server is not None
    recorder = _Recorder(wsgi_server.app)
    wsgi_server.app = recorder  # no request can arrive before start() returns the address
    server = S3Server(moto_server, recorder)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A moto S3 server on loopback for the whole session; see the module docstring."""
    werkzeug_log = logging.getLogger("werkzeug")
    level = werkzeug_log.level
    werkzeug_log.setLevel(logging.WARNING)  # one access-log line per request is noise
    try:
        with isolated_aws_env(tmp_path_factory.mktemp("aws")), running_s3_server() as server:
            yield server
    finally:
        werkzeug_log.setLevel(level)
