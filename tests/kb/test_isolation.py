"""Tenant isolation, randomised: no search, listing, file read, job, event stream or error message
shown to one tenant's key ever reveals another tenant's data, and a role sees only its datasets.

Each tenant's documents carry secret marker words; every response body a key gets is checked
for markers, ids and names of data it must not see.  The operation sequence is random but
seeded (the seed is in the failure message).
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from tests.kb.conftest import Api, new_tenant

SEED = 20261123
ROLES = ("admin", "editor", "reader", "hr")


@dataclass
class Tenant:
    id: str
    keys: dict[str, Api]
    datasets: dict[str, dict] = field(default_factory=dict)  # id -> dataset (with "_marker", "_hr")
    files: list[str] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)

    def visible_to(self, role: str) -> set[str]:
        """Dataset ids this tenant's role may read."""
        return {d for d, ds in self.datasets.items() if role != "reader" or not ds["_hr"]}


@pytest.fixture(scope="module")
def world(service: Api) -> Iterator[list[Tenant]]:
    tenants = []
    for t in range(3):
        tenant_id, keys = new_tenant(service, f"tenant-{t}-{uuid.uuid4().hex[:6]}", *ROLES)
        tenant = Tenant(tenant_id, keys)
        admin = keys["admin"]
        for d in range(2):
            hr = d == 1
            marker = f"zq{t}x{d}marker"
            body = {"name": f"t{t}-dataset-{d}", "allowed_roles": ["hr"] if hr else []}
            ds = admin.ok("POST", "/api/v1/datasets", 201, json=body)
            ds["_marker"], ds["_hr"] = marker, hr
            tenant.datasets[ds["id"]] = ds
            text = f"# Report {marker}\nThe {marker} figures for the quarter are confidential.\n".encode()
            sent = admin.ok(
                "POST", f"/api/v1/datasets/{ds['id']}/files", 202, files=[("files", (f"{marker}.md", text))]
            )
            tenant.files += [f["id"] for f in sent["files"]]
            tenant.jobs.append(sent["job"]["id"])
        tenants.append(tenant)
    for tenant in tenants:
        for job_id in tenant.jobs:
            assert tenant.keys["admin"].wait_job(job_id)["status"] == "succeeded"
    yield tenants
    for tenant in tenants:
        for api in tenant.keys.values():
            api.close()


def secrets_of(tenant: Tenant, dataset_ids: set[str] | None = None) -> set[str]:
    ids = set(tenant.datasets) if dataset_ids is None else dataset_ids
    out = {tenant.id} if dataset_ids is None else set()
    for d in ids:
        ds = tenant.datasets[d]
        out |= {d, ds["_marker"], ds["name"], ds["collection_name"]}
    if dataset_ids is None:
        out |= set(tenant.files) | set(tenant.jobs)
    return out


def forbidden_for(me: Tenant, role: str, world: list[Tenant]) -> set[str]:
    """Everything this key must never see: other tenants' data, and its own hr datasets for a reader."""
    out: set[str] = set()
    for other in world:
        if other is not me:
            out |= secrets_of(other)
    hidden = set(me.datasets) - me.visible_to(role)
    return out | secrets_of(me, hidden)


def stream_for(api: Api, seconds: float) -> str:
    text = []
    started = time.monotonic()
    try:
        with (
            httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer {api.key}"}) as client,
            client.stream("GET", "/api/v1/events", timeout=httpx.Timeout(5.0, read=seconds)) as r,
        ):
            for line in r.iter_lines():
                text.append(line)
                if time.monotonic() - started > seconds:
                    break
    except httpx.ReadTimeout:
        pass
    return "\n".join(text)


def operations(me: Tenant, role: str, world: list[Tenant], rng: random.Random) -> list[tuple[str, str, dict]]:
    """One random request of each family, aimed at a random own or foreign target."""
    everyone = list(world)
    target = rng.choice(everyone)
    dataset = rng.choice(list(target.datasets))
    file_id = rng.choice(target.files)
    job_id = rng.choice(target.jobs)
    marker = rng.choice([ds["_marker"] for t in everyone for ds in t.datasets.values()])
    return [
        ("GET", "/api/v1/datasets", {}),
        ("GET", f"/api/v1/datasets/{dataset}", {}),
        ("GET", f"/api/v1/datasets/{dataset}/files", {}),
        ("GET", f"/api/v1/datasets/{dataset}/files/{file_id}", {}),
        ("GET", f"/api/v1/datasets/{dataset}/sources", {}),
        ("POST", "/api/v1/search", {"json": {"query": f"{marker} figures", "k": 10}}),
        ("POST", "/api/v1/search", {"json": {"query": f"{marker} figures", "dataset_ids": [dataset]}}),
        ("POST", f"/api/v1/datasets/{dataset}/search", {"json": {"query": f"{marker} quarter"}}),
        ("GET", "/api/v1/jobs", {}),
        ("GET", f"/api/v1/jobs/{job_id}", {}),
        ("GET", "/api/v1/events", {"params": {"job_id": job_id}}),
        ("GET", f"/api/v1/tenants/{target.id}/keys", {}),
        ("GET", "/api/v1/tenants", {}),
        ("PATCH", f"/api/v1/datasets/{dataset}", {"json": {"description": "hijacked"}}),
        ("PATCH", f"/api/v1/datasets/{dataset}/files/{file_id}", {"json": {"enabled": True}}),
        ("POST", f"/api/v1/datasets/{dataset}/reindex", {}),
        ("POST", f"/api/v1/jobs/{job_id}/cancel", {}),
    ]


@pytest.mark.slow_on_postgres  # > 5 s on PostgreSQL; the SQLite case stays in the fast tier
def test_no_key_ever_sees_another_tenants_data(world: list[Tenant]) -> None:
    rng = random.Random(SEED)
    checked = 0
    for _ in range(6):
        me = rng.choice(world)
        role = rng.choice(ROLES)
        api = me.keys[role]
        bad = forbidden_for(me, role, world)
        for method, path, kwargs in operations(me, role, world, rng):
            if path == "/api/v1/events" and kwargs["params"]["job_id"] not in me.jobs:
                r = api.request(method, path, **kwargs)
            elif path == "/api/v1/events":
                continue  # an own job's stream is read below
            else:
                r = api.request(method, path, **kwargs)
            sent = path + json.dumps(kwargs)  # echoing what the caller itself sent reveals nothing
            leaked = {s for s in bad if s in r.text and s not in sent}
            assert not leaked, (
                f"seed {SEED}: {role} of {me.id} got {sorted(leaked)} from {method} {path}: {r.text[:300]}"
            )
            foreign = any(s in path for s in bad)
            if foreign and r.status_code != 401:
                assert r.status_code == 404, f"seed {SEED}: {method} {path} -> {r.status_code} {r.text[:200]}"
            checked += 1
        events = stream_for(api, 1.5)
        assert not {s for s in bad if s in events}, f"seed {SEED}: event stream leaked to {role}"
    assert checked >= 80


def test_a_foreign_id_reads_exactly_like_a_missing_one(world: list[Tenant]) -> None:
    me, other = world[0], world[1]
    foreign = next(iter(other.datasets))
    missing = str(uuid.uuid4())
    api = me.keys["admin"]
    for template in ("/api/v1/datasets/{}", "/api/v1/datasets/{}/files", "/api/v1/datasets/{}/sources"):
        a, b = api.get(template.format(foreign)), api.get(template.format(missing))
        assert a.status_code == b.status_code == 404
        assert a.json()["detail"]["code"] == b.json()["detail"]["code"]
        assert a.json()["detail"]["error"].replace(foreign, "X") == b.json()["detail"]["error"].replace(
            missing, "X"
        )


def test_search_without_ids_covers_exactly_the_readable_datasets(world: list[Tenant]) -> None:
    for me in world:
        for role in ROLES:
            found = me.keys[role].ok(
                "POST", "/api/v1/search", json={"query": "confidential figures quarter", "k": 20}
            )
            assert set(found["datasets"]) == me.visible_to(role), (role, found["datasets"])
            assert {h["dataset_id"] for h in found["results"]} <= me.visible_to(role)
            markers = {me.datasets[d]["_marker"] for d in me.visible_to(role)}
            assert {h["name"].removesuffix(".md") for h in found["results"]} == markers


def test_reader_cannot_change_anything(world: list[Tenant]) -> None:
    me = world[2]
    reader = me.keys["reader"]
    dataset = next(d for d in me.datasets if not me.datasets[d]["_hr"])
    assert reader.patch(f"/api/v1/datasets/{dataset}", json={"description": "x"}).status_code == 403
    assert reader.delete(f"/api/v1/datasets/{dataset}").status_code == 403
    files = reader.ok("GET", f"/api/v1/datasets/{dataset}/files")["files"]
    assert reader.delete(f"/api/v1/datasets/{dataset}/files/{files[0]['id']}").status_code == 403
    json.dumps(files)  # listing is allowed and plain JSON


def test_tenant_keys_search_only_their_readable_collections_on_the_open_webui_surface(
    world: list[Tenant],
) -> None:
    """``/search``: a tenant key reaches the datasets its role may read, and nothing else (other
    tenants' collections are left out like unknown ones).  The chat proxy: tests/api/test_chat_proxy.py."""
    everything = [ds["collection_name"] for tenant in world for ds in tenant.datasets.values()]
    for tenant in world:
        others = set().union(*(secrets_of(t) for t in world if t is not tenant))
        for role in ("reader", "hr"):
            api = tenant.keys[role]
            body = {
                "queries": ["figures for the quarter are confidential"],
                "collection_names": everything,
                "k": 20,
            }
            response = api.post("/search", json=body)
            assert response.status_code == 200, response.text
            text = response.text
            assert not [s for s in others if s in text], "another tenant's data"
            visible = tenant.visible_to(role)
            for dataset_id, ds in tenant.datasets.items():
                assert (ds["_marker"] in text) == (dataset_id in visible), (role, ds["name"])


def _clamped_k(service: Api) -> float:
    metrics = service.get("/metrics").text
    lines = [line for line in metrics.splitlines() if line.startswith('search_clamped_total{field="k"}')]
    return float(lines[0].rsplit(" ", 1)[1]) if lines else 0.0


def test_an_over_limit_search_is_counted_even_when_the_key_reads_nothing(
    world: list[Tenant], service: Api
) -> None:
    """Clamping is logged and counted before access narrows the collections: a key that may read
    none of them still gets its 200 (empty), and the operator still sees the clamp."""
    first, second = world[0], world[1]
    foreign = [ds["collection_name"] for ds in second.datasets.values()]
    before = _clamped_k(service)
    response = first.keys["reader"].post(
        "/search", json={"queries": ["x"], "collection_names": foreign, "k": 500}
    )
    assert response.status_code == 200, response.text
    assert response.json()["documents"] == [[]]
    assert _clamped_k(service) == before + 1
