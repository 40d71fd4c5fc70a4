"""Text no store can hold is a 422 on every route, never a 500: a property-based test over the schema.

A lone UTF-16 surrogate (``"\\ud800"``: valid JSON, but no UTF-8, no SQLite, no PostgreSQL and no
tokenizer takes it) and a NUL (``"\\u0000"``: no path and no PostgreSQL text holds it) were each a 500
on a dozen routes.  The body gate refuses them as the body streams in (``INVALID_TEXT``), and a
NUL in a URL's path or query before the route runs.  Hypothesis puts such strings into every string
field the published OpenAPI schema lists — JSON bodies (nested objects and arrays included),
multipart form fields, path and query parameters — of every operation, plus the UI's sign-in, on a
live server; every answer must be a 422.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragd.api.app import create_app
from ragd.settings import LlmSettings
from tests.api.conftest import AUTH, service_settings
from tests.support.live_server import LiveServer

#: one lone surrogate of each kind, and NUL
BAD = ["\ud800", "\udbff", "\udc00", "\udfff", "\ud83d", "\x00"]
#: a URL or a multipart field carries no surrogate (UTF-8 cannot spell one: their bytes are decoded
#: with replacement, or as Latin-1, into ordinary text): only NUL there
BAD_IN_BYTES = ["\x00"]
CHECKED = settings(max_examples=2, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


def bad_text(bad: str) -> st.SearchStrategy[str]:
    """A short text with ``bad`` somewhere in it (``st.text`` itself never makes surrogates)."""
    plain = st.text(max_size=6)
    return st.builds(lambda a, c: a + bad + c, plain, plain)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[LiveServer]:
    settings_ = service_settings(tmp_path_factory.mktemp("text"), model_cache, inspection_enabled=True)
    settings_ = settings_.model_copy(update={"llm": LlmSettings(base_url="http://127.0.0.1:9/v1")})  # type: ignore[call-arg]
    with LiveServer(create_app(settings_)) as server:
        server.wait_ready()
        yield server


@pytest.fixture(scope="module")
def schema(live: LiveServer) -> dict[str, Any]:
    found: dict[str, Any] = httpx.get(f"{live.url}/openapi.json", timeout=30).json()
    return found


# -- the schema's string fields ------------------------------------------------------------------


def resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with ``$ref`` followed and ``anyOf``/``oneOf`` narrowed to its first non-null choice."""
    while True:
        if "$ref" in node:
            node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
        elif "anyOf" in node or "oneOf" in node:
            choices = [c for c in node.get("anyOf", node.get("oneOf", [])) if c.get("type") != "null"]
            strings = [c for c in choices if c.get("type") == "string"]
            node = (strings or choices or [{"type": "string"}])[0]
        else:
            return node


def string_paths(schema: dict[str, Any], node: dict[str, Any], depth: int = 0) -> Iterator[tuple[Any, ...]]:
    """Every path (property names and ``0`` for an array's first item) that leads to a string."""
    node = resolve(schema, node)
    if depth > 6:
        return
    kind = node.get("type")
    if kind == "string" and node.get("format") != "binary":
        yield ()
    elif kind == "array" and "items" in node:
        for rest in string_paths(schema, node["items"], depth + 1):
            yield (0, *rest)
    elif kind == "object" or "properties" in node:
        for name, sub in node.get("properties", {}).items():
            for rest in string_paths(schema, sub, depth + 1):
                yield (name, *rest)


def example(schema: dict[str, Any], node: dict[str, Any], along: tuple[Any, ...] = ()) -> Any:
    """A small value of ``node``'s shape: required properties, and those on the way to ``along``."""
    node = resolve(schema, node)
    kind = node.get("type")
    if (along and along[0] == 0) or kind == "array":
        return [example(schema, node.get("items", {}), along[1:])]
    if kind == "object" or "properties" in node:
        props = node.get("properties", {})
        wanted = set(node.get("required", ())) | ({along[0]} if along else set())
        return {
            name: example(schema, props[name], along[1:] if along and name == along[0] else ())
            for name in props
            if name in wanted
        }
    if "enum" in node:
        return node["enum"][0]
    if kind in ("integer", "number"):
        return max(1, node.get("minimum", 1))
    if kind == "boolean":
        return False
    return "x"


def put(value: Any, path: tuple[Any, ...], text: str) -> Any:
    if not path:
        return text
    value[path[0]] = put(value[path[0]], path[1:], text)
    return value


def cases(schema: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any], str, tuple[Any, ...]]]:
    """(method, path template, operation, where: json/form/path/query, field path) for every string."""
    for template, operations in schema["paths"].items():
        for method, op in operations.items():
            for param in op.get("parameters", []):
                if (
                    param["in"] in ("path", "query")
                    and resolve(schema, param.get("schema", {})).get("type") == "string"
                ):
                    yield method, template, op, param["in"], (param["name"],)
            for media, body in op.get("requestBody", {}).get("content", {}).items():
                where = {"application/json": "json", "multipart/form-data": "form"}.get(media)
                if where is not None:
                    for field in string_paths(schema, body["schema"]):
                        if field:
                            yield method, template, op, where, field


# -- sending -------------------------------------------------------------------------------------


#: ids of real records for the path of a form case: a multipart route looks its record up (404 for an
#: unknown one) before it reads the body, so its fields are checked only behind a real id
REAL_IDS: dict[str, str] = {}


def send(live: LiveServer, schema: dict[str, Any], case: tuple[Any, ...], text: str) -> httpx.Response:
    method, template, op, where, field = case
    params = {p["name"]: p for p in op.get("parameters", []) if p["in"] in ("path", "query")}
    path_values = {
        name: REAL_IDS.get(name, "x") if where == "form" else "x"
        for name, p in params.items()
        if p["in"] == "path"
    }
    query: dict[str, str] = {}
    if where == "path":
        path_values[field[0]] = text
    elif where == "query":
        query[field[0]] = text
    url = live.url + template.format(**{k: quote(v, safe="") for k, v in path_values.items()})
    request: dict[str, Any] = {"params": query, "headers": dict(AUTH), "timeout": 60}
    content = op.get("requestBody", {}).get("content", {})
    if where == "json" or (where in ("path", "query") and "application/json" in content):
        body_schema = content["application/json"]["schema"]
        body = example(schema, body_schema, field if where == "json" else ())
        if where == "json":
            body = put(body, field, text)
        request["content"] = json.dumps(body, ensure_ascii=True).encode()  # "\ud800" as its JSON escape
        request["headers"]["Content-Type"] = "application/json"
    elif where == "form" or "multipart/form-data" in content:
        form_schema = resolve(schema, content["multipart/form-data"]["schema"])
        form = {k: v for k, v in example(schema, form_schema).items() if not isinstance(v, list | dict)}
        if where == "form":
            form[field[0]] = text
        binary = [
            name for name, prop in form_schema.get("properties", {}).items() if "binary" in json.dumps(prop)
        ]
        request["data"] = {
            k: str(v).encode("utf-8", "surrogatepass") for k, v in form.items() if k not in binary
        }
        request["files"] = [(name, ("a.txt", b"plain text")) for name in binary] or [
            ("file", ("a.txt", b"x"))
        ]
    return httpx.request(method.upper(), url, **request)


def test_the_schema_has_string_fields_everywhere(schema: dict[str, Any]) -> None:
    found = {(c[0], c[1], c[3], c[4]) for c in cases(schema)}
    assert ("post", "/search", "json", ("queries", 0)) in found
    assert ("post", "/api/v1/datasets/{dataset_id}/sources", "json", ("kind",)) in found
    assert ("put", "/api/v1/ingest", "form", ("filename",)) in found
    assert ("post", "/v1/chat/completions", "json", ("model",)) in found
    assert ("get", "/api/v1/datasets/{dataset_id}", "path", ("dataset_id",)) in found
    assert len(found) >= 60


def check(
    live: LiveServer, schema: dict[str, Any], case: tuple[Any, ...], bad: str, failures: list[str]
) -> None:
    """Hypothesis's texts with ``bad`` in them, sent in ``case``'s field; what is not a 422 is kept."""
    method, template, _, where, field = case

    @CHECKED
    @given(text=bad_text(bad))
    def one(text: str) -> None:
        answer = send(live, schema, case, text)
        if answer.status_code != 422:
            failures.append(f"{method.upper()} {template} {where} {field} {text!r}: {answer.status_code}")

    one()


@pytest.fixture(scope="module")
def real_ids(live: LiveServer) -> Iterator[None]:
    with httpx.Client(base_url=live.url, headers=dict(AUTH), timeout=30) as client:
        tenant = client.post("/api/v1/tenants", json={"name": "text"}).raise_for_status().json()
        made = client.post("/api/v1/datasets", json={"name": "text", "tenant_id": tenant["id"]})
        REAL_IDS["dataset_id"] = made.raise_for_status().json()["id"]
    yield
    REAL_IDS.clear()


@pytest.mark.slow
@pytest.mark.usefixtures("real_ids")
def test_every_string_field_of_every_route_refuses_unencodable_text(
    live: LiveServer, schema: dict[str, Any]
) -> None:
    failures: list[str] = []
    for case in cases(schema):
        for bad in BAD if case[3] == "json" else BAD_IN_BYTES:
            check(live, schema, case, bad, failures)
    assert not failures, "\n".join(failures[:40])


def test_a_nul_in_a_folder_sources_path_is_a_422(live: LiveServer) -> None:
    tenant = httpx.post(f"{live.url}/api/v1/tenants", json={"name": "nul"}, headers=AUTH, timeout=30).json()
    dataset = {"name": "nul", "tenant_id": tenant["id"]}
    made = httpx.post(f"{live.url}/api/v1/datasets", json=dataset, headers=AUTH, timeout=30)
    assert made.status_code == 201, made.text
    answer = httpx.post(
        f"{live.url}/api/v1/datasets/{made.json()['id']}/sources",
        json={"kind": "folder", "config": {"path": "/tmp/a\x00b"}},
        headers=AUTH,
        timeout=30,
    )
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"]["code"] == "INVALID_TEXT"


@pytest.mark.parametrize("bad", ["\ud800", "\x00"], ids=["surrogate", "nul"])
def test_the_openai_surface_and_the_sign_in_answer_422_in_their_shape(live: LiveServer, bad: str) -> None:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": f"a{bad}b"}]}).encode()
    chat = httpx.post(
        f"{live.url}/v1/chat/completions",
        content=body,
        headers={**AUTH, "Content-Type": "application/json"},
        timeout=30,
    )
    assert chat.status_code == 422, chat.text
    assert chat.json()["error"]["code"] == "INVALID_TEXT"
    sign_in = httpx.post(
        f"{live.url}/ui/session",
        content=json.dumps({"key": f"k{bad}"}).encode(),
        headers={"Content-Type": "application/json"},
        timeout=30,
    )
    assert sign_in.status_code == 422, sign_in.text


def test_a_paired_surrogate_and_plain_text_still_pass(live: LiveServer) -> None:
    # "\ud83d\ude00" is the escape of 😀: valid, and it reaches the route
    emoji = json.dumps({"queries": ["find 😀 and \\ud800 as text"], "collection_names": ["kb"]})
    answer = httpx.post(
        f"{live.url}/search",
        content=emoji.encode(),
        headers={**AUTH, "Content-Type": "application/json"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text


def test_the_ingestion_service_surface_keeps_its_code_with_the_reason(live: LiveServer) -> None:
    as_json = httpx.put(
        f"{live.url}/api/v1/ingest",
        content=b'{"file_id": "a\\ud800", "collection_name": "kb", "s3_bucket": "b", "s3_key": "k"}',
        headers={**AUTH, "Content-Type": "application/json"},
        timeout=30,
    )
    as_form = httpx.put(
        f"{live.url}/api/v1/ingest",
        data={"file_id": "a", "collection_name": "kb", "user_id": "u", "filename": "a\x00.txt"},
        files={"file": ("a.txt", b"text")},
        headers=AUTH,
        timeout=30,
    )
    for answer in (as_json, as_form):
        assert answer.status_code == 422, answer.text
        detail = answer.json()["detail"]
        assert (detail["code"], detail["reason"]) == ("INVALID_REQUEST", "INVALID_TEXT")


@pytest.mark.parametrize("path", ["/search", "/api/v1/search", "/v1/embeddings"])
def test_a_body_of_raw_bytes_that_is_not_utf8_is_a_422(live: LiveServer, path: str) -> None:
    """A body sent as another type than JSON is read raw; its bytes echoed in the 422 were decoded
    as UTF-8 and a body that is not was a 500 (found by tests/api/test_openapi_fuzz.py)."""
    raw = b"\x0f\xd5;\xc7T\xba\xf3\n\xc6\x87I\xd5\x9e\xe5\xb5"
    headers = {**AUTH, "Content-Type": "application/octet-stream"}
    response = httpx.post(f"{live.url}{path}", content=raw, headers=headers, timeout=30)
    assert response.status_code == 422, response.text
