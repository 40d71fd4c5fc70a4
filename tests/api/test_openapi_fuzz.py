"""The published OpenAPI schema, fuzzed by schemathesis against a live server: no 5xx, ever.

Every operation in ``/openapi.json`` gets generated requests — valid ones and ones that break the
schema (wrong types, missing fields, out-of-range numbers, odd strings) — sent over real HTTP to a
real uvicorn with the real model and store.  Any status >= 500 fails the test with the request
that caused it.  Run once with the API key (the handlers are reached) and once without (the auth
gate must answer 401, not crash, on every shape of request).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.generation.case import Case
from schemathesis.openapi import from_url
from schemathesis.schemas import APIOperation, BaseSchema

from ragd.api.app import create_app
from ragd.settings import S3Settings
from tests.api.conftest import AUTH, service_settings
from tests.support.live_server import LiveServer

FUZZ = settings(
    max_examples=30,
    deadline=None,
    derandomize=True,  # the same requests on every run: a failure here is reproducible
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[LiveServer]:
    settings_ = service_settings(tmp_path_factory.mktemp("ragd"), model_cache, inspection_enabled=True)
    # as deployed (docs/s3.md): the ingestion API reads only Open WebUI's bucket, so a generated bucket
    # is a 403; one that got through would be fetched from a store this machine has no credentials for,
    # and the reference contract's answer to a failed fetch is a 500 S3_FETCH_FAILED
    settings_ = settings_.model_copy(update={"s3": S3Settings(allowed_buckets=("openwebui",))})
    with LiveServer(create_app(settings_)) as server:
        server.wait_ready()
        yield server


@pytest.fixture(scope="module")
def api_schema(fuzzed: LiveServer) -> BaseSchema:
    return from_url(f"{fuzzed.url}/openapi.json")


def test_the_schema_lists_every_public_operation(api_schema: BaseSchema) -> None:
    paths = set(api_schema.raw_schema["paths"])
    assert {"/search", "/api/v1/ingest", "/api/v1/documents/{file_id}", "/api/v1/extract"} <= paths
    assert {"/health", "/health/ready"} <= paths
    assert {"/api/v1/datasets", "/api/v1/datasets/{dataset_id}/files", "/api/v1/jobs/{job_id}"} <= paths
    assert paths >= ENDLESS


def fuzz_operation(operation: APIOperation, mode: GenerationMode, url: str, key: bool) -> None:
    @FUZZ
    @given(case=operation.as_strategy(generation_mode=mode))
    def fuzz(case: Case) -> None:
        response = case.call(base_url=url, headers=AUTH if key else None, timeout=60)
        case.validate_response(response, checks=[not_a_server_error])
        if not key and not operation.path.startswith("/health"):
            # 401, or FastAPI's 422 for a body that is not even JSON (parsed before any dependency)
            assert 400 <= response.status_code < 500, (case.method, case.path, response.status_code)

    fuzz()


@pytest.mark.slow
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=str)
@pytest.mark.parametrize("key", [True, False], ids=["with-key", "without-key"])
def test_no_request_gets_a_server_error(
    api_schema: BaseSchema, fuzzed: LiveServer, mode: GenerationMode, key: bool
) -> None:
    """Positive cases follow the schema, negative ones break it; without a key the gate answers first."""
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 7
    for operation in operations:
        if mode is GenerationMode.NEGATIVE and not has_inputs(operation):
            continue  # nothing to break: GET /health takes no input
        if operation.path in ENDLESS and key:
            continue  # an event stream never ends by design; tests/kb reads it (and its 404s, 401s)
        fuzz_operation(operation, mode, fuzzed.url, key)


#: text/event-stream endpoints: a valid request is answered with a stream that stays open
ENDLESS = frozenset({"/api/v1/events"})


def has_inputs(operation: APIOperation) -> bool:
    return bool(operation.body or operation.path_parameters or operation.query)
