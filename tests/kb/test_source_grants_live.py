"""Source grants over HTTP against a live ragd (real uvicorn, worker, catalog, moto S3 on loopback):
a tenant admin cannot reach another tenant's folder, prefix or whole bucket; the service key grants;
revoking disables; a start-up disables what an upgrade left ungranted (issue 30 §1.1)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ragd.api.app import create_app
from ragd.catalog.sql import open_catalog
from ragd.kb import grants as kb_grants
from ragd.kb_types import ADMIN_ROLE, Dataset, Principal, SourceKind, SourceSpec
from ragd.settings import CatalogSettings, Settings
from tests.kb.conftest import SERVICE_KEY, Api, kb_settings, new_tenant
from tests.support.live_server import LiveServer
from tests.support.s3_server import S3Server, s3_server

__all__ = ["s3_server"]

pytestmark = pytest.mark.slow

SERVICE = Principal(tenant_id=None, role=ADMIN_ROLE)


@dataclass
class Tenant:
    name: str
    id: str
    admin: Api
    folder: Path
    marker: str
    dataset: str = ""
    sources: dict[str, str] = field(default_factory=dict)


@dataclass
class World:
    service: Api
    bucket: str
    north: Tenant
    south: Tenant


def _code(response: Any) -> str:
    return str(response.json()["detail"]["code"])


def _settings(root: Path, model_cache: Path, s3: S3Server, bucket: str) -> Settings:
    settings = kb_settings(root / "data", model_cache, None, s3=s3.settings(allowed_buckets=(bucket,)))
    # the docs' advice (one allowed bucket, one folder root) is in place: still not enough alone
    return settings.model_copy(update={"catalog": CatalogSettings(folder_roots=[root / "shares"])})


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path, s3_server: S3Server
) -> Iterator[World]:
    root = tmp_path_factory.mktemp("grants")
    markers = {n: f"zq{n}{uuid.uuid4().hex[:6]}" for n in ("north", "south")}
    for name, marker in markers.items():
        (root / "shares" / name).mkdir(parents=True)
        (root / "shares" / name / "memo.md").write_text(f"# Memo\nThe {marker} budget is confidential.\n")
    bucket = s3_server.bucket(
        {f"{n}/plan.md": f"# Plan\nThe {m} plan.\n".encode() for n, m in markers.items()}
    )
    with LiveServer(create_app(_settings(root, model_cache, s3_server, bucket))) as live:
        live.wait_ready()
        service = Api(live.url, SERVICE_KEY)
        tenants = []
        for name in ("north", "south"):
            tenant_id, keys = new_tenant(service, name, "admin")
            tenant = Tenant(name, tenant_id, keys["admin"], root / "shares" / name, markers[name])
            tenant.dataset = tenant.admin.ok("POST", "/api/v1/datasets", 201, json={"name": "docs"})["id"]
            tenants.append(tenant)
        yield World(service, bucket, *tenants)
        for api in (service, *(t.admin for t in tenants)):
            api.close()


def _add(tenant: Tenant, kind: str, config: dict[str, Any]) -> Any:
    return tenant.admin.post(
        f"/api/v1/datasets/{tenant.dataset}/sources", json={"kind": kind, "config": config}
    )


def _grant_raw(service: Api, tenant_id: str, folder: str) -> Any:
    body = {"kind": "folder", "target": folder}
    return service.ok("POST", f"/api/v1/tenants/{tenant_id}/grants", 201, json=body)


def _grant(w: World, tenant: Tenant, kind: str, target: str, status: int = 201, **extra: Any) -> Any:
    body = {"kind": kind, "target": target, **extra}
    return w.service.ok("POST", f"/api/v1/tenants/{tenant.id}/grants", status, json=body)


def test_1_a_tenant_admin_cannot_reach_another_tenants_prefix_bucket_or_folder(world: World) -> None:
    w, south, north = world, world.south, world.north
    _grant(w, south, "folder", str(south.folder))
    _grant(w, south, "s3", f"{w.bucket}/south/")
    for kind, config in (
        ("folder", {"path": str(south.folder)}),
        ("s3", {"bucket": w.bucket, "prefix": "south/"}),
    ):
        added = _add(south, kind, config)
        assert added.status_code == 202, added.text
        south.sources[kind] = added.json()["source"]["id"]
        assert south.admin.wait_job(added.json()["job"]["id"])["status"] == "succeeded"

    attempts = [
        ("s3", {"bucket": w.bucket, "prefix": "south/"}),  # the other tenant's prefix
        ("s3", {"bucket": w.bucket, "prefix": ""}),  # the whole (allowed) bucket
        ("folder", {"path": str(south.folder)}),  # the other tenant's watched folder
        ("folder", {"path": str(south.folder.parent)}),  # the folder root that holds both
    ]
    for kind, config in attempts:
        refused = _add(north, kind, config)
        assert refused.status_code == 403, (config, refused.text)
        assert _code(refused) == "SOURCE_NOT_GRANTED"
        assert "/grants" in refused.json()["detail"]["hint"]
    assert north.admin.ok("GET", f"/api/v1/datasets/{north.dataset}/sources")["sources"] == []
    assert not [h for h in north.admin.search(south.marker) if south.marker in h["content"]]


def test_2_with_a_grant_the_tenant_admin_adds_and_searches_its_folder(world: World) -> None:
    w, north = world, world.north
    grant = _grant(w, north, "folder", str(north.folder))
    assert (grant["kind"], grant["target"], grant["shared"]) == ("folder", str(north.folder.resolve()), False)
    added = _add(north, "folder", {"path": str(north.folder)})
    assert added.status_code == 202, added.text
    north.sources["folder"] = added.json()["source"]["id"]
    assert north.admin.wait_job(added.json()["job"]["id"])["status"] == "succeeded"
    assert any(north.marker in h["content"] for h in north.admin.search(north.marker))


def test_3_an_overlapping_grant_needs_shared(world: World) -> None:
    w, north = world, world.north
    for target in (f"{w.bucket}/south/", f"{w.bucket}/", f"{w.bucket}/south/deep/"):
        refused = w.service.post(f"/api/v1/tenants/{north.id}/grants", json={"kind": "s3", "target": target})
        assert refused.status_code == 409, refused.text
        assert _code(refused) == "GRANT_OVERLAP"
    grants = f"/api/v1/tenants/{north.id}/grants"
    for body, status in (
        ({"kind": "folder", "target": "rel"}, 400),
        ({"kind": "web", "target": "https://example.org/"}, 400),
        ({"kind": "ftp", "target": "/srv"}, 422),
        ({"kind": "folder", "target": ""}, 422),
        ({"kind": "folder", "target": "/" + "a" * 3000}, 422),
        ({"kind": "s3", "target": "b/x", "extra": 1}, 422),
    ):
        refused = w.service.post(grants, json=body)
        assert refused.status_code == status, (body, refused.text)
    assert w.service.delete(f"{grants}/no-such-grant").status_code == 404
    assert w.service.get("/api/v1/tenants/no-such-tenant/grants").status_code == 404
    shared = _grant(w, north, "s3", f"{w.bucket}/south/", shared=True)
    assert shared["shared"] is True
    added = _add(north, "s3", {"bucket": w.bucket, "prefix": "south/"})
    assert added.status_code == 202, added.text
    north.sources["s3"] = added.json()["source"]["id"]


def test_4_grants_are_listed_to_the_tenant_admin_and_changed_only_by_the_service_key(world: World) -> None:
    w, north, south = world, world.north, world.south
    own = north.admin.ok("GET", f"/api/v1/tenants/{north.id}/grants")["grants"]
    assert {g["kind"] for g in own} == {"folder", "s3"}
    assert north.admin.get(f"/api/v1/tenants/{south.id}/grants").status_code == 404
    made = north.admin.post(
        f"/api/v1/tenants/{north.id}/grants", json={"kind": "s3", "target": f"{w.bucket}/x/"}
    )
    assert made.status_code == 403
    gone = north.admin.delete(f"/api/v1/tenants/{north.id}/grants/{own[0]['id']}")
    assert gone.status_code == 403
    assert len(north.admin.ok("GET", f"/api/v1/tenants/{north.id}/grants")["grants"]) == len(own)


def test_5_revoking_disables_the_source_and_its_syncs_until_granted_again(world: World) -> None:
    w, north = world, world.north
    sources = f"/api/v1/datasets/{north.dataset}/sources"
    grants = north.admin.ok("GET", f"/api/v1/tenants/{north.id}/grants")["grants"]
    folder_grant = next(g for g in grants if g["kind"] == "folder")
    source_id = north.sources["folder"]
    revoked = w.service.ok("DELETE", f"/api/v1/tenants/{north.id}/grants/{folder_grant['id']}")
    assert revoked["disabled_sources"] == [source_id]
    assert revoked["grant"]["revoked_at"] is not None
    listed = {s["id"]: s for s in north.admin.ok("GET", sources)["sources"]}
    assert listed[source_id]["disabled"] is True
    assert "no live grant" in listed[source_id]["disabled_reason"]
    assert listed[north.sources["s3"]]["disabled"] is False
    assert not [h for h in north.admin.search(north.marker) if north.marker in h["content"]], "out of search"
    files = north.admin.ok("GET", f"/api/v1/datasets/{north.dataset}/files")["files"]
    memo = next(f for f in files if f["source_id"] == source_id)
    back = north.admin.patch(f"/api/v1/datasets/{north.dataset}/files/{memo['id']}", json={"enabled": True})
    assert back.status_code == 409, back.text
    assert _code(back) == "SOURCE_DISABLED"
    assert not [h for h in north.admin.search(north.marker) if north.marker in h["content"]]
    sync = north.admin.post(f"{sources}/{source_id}/sync")
    assert sync.status_code == 409, sync.text
    assert _code(sync) == "SOURCE_DISABLED"
    enable = north.admin.post(f"{sources}/{source_id}/enable")
    assert enable.status_code == 403
    assert _code(enable) == "SOURCE_NOT_GRANTED"
    assert north.admin.ok("GET", f"/api/v1/tenants/{north.id}/grants")["grants"] == [
        g for g in grants if g["id"] != folder_grant["id"]
    ]
    everything = north.admin.ok("GET", f"/api/v1/tenants/{north.id}/grants?include_revoked=true")["grants"]
    assert folder_grant["id"] in {g["id"] for g in everything}

    _grant(w, north, "folder", str(north.folder))
    again = {s["id"]: s for s in north.admin.ok("GET", sources)["sources"]}[source_id]
    assert (again["disabled"], again["disabled_reason"]) == (False, None)
    assert any(north.marker in h["content"] for h in north.admin.search(north.marker)), "back in search"
    job = north.admin.ok("POST", f"{sources}/{source_id}/sync", 202)["job"]
    assert north.admin.wait_job(job["id"])["status"] in ("succeeded", "partial")


def test_start_up_disables_a_source_an_upgrade_left_without_a_grant(
    tmp_path: Path, model_cache: Path, s3_server: S3Server
) -> None:
    bucket = s3_server.bucket({"a/x.md": b"# X\nx\n"})
    (tmp_path / "shares" / "old").mkdir(parents=True)
    settings = _settings(tmp_path, model_cache, s3_server, bucket)

    async def seed() -> tuple[str, str]:
        settings.data_dir.mkdir(parents=True)
        catalog = await open_catalog(settings.catalog_url)
        try:
            tenant = await catalog.create_tenant("legacy")
            ds = await catalog.create_dataset(
                Dataset(id="ds-legacy", tenant_id=tenant.id, name="docs", collection_name="kb-legacy")
            )
            config = {"path": str(tmp_path / "shares" / "old")}
            await catalog.create_source(
                SourceSpec(id="old", dataset_id=ds.id, kind=SourceKind.FOLDER, config=config)
            )
            return tenant.id, ds.id
        finally:
            await catalog.aclose()

    tenant_id, dataset_id = asyncio.run(seed())
    with LiveServer(create_app(settings)) as live:
        live.wait_ready()
        service = Api(live.url, SERVICE_KEY)
        try:
            listed = service.ok("GET", f"/api/v1/datasets/{dataset_id}/sources")["sources"]
            assert [(s["id"], s["disabled"]) for s in listed] == [("old", True)]
            refused = service.post(f"/api/v1/datasets/{dataset_id}/sources/old/sync")
            assert refused.status_code == 409
            assert _code(refused) == "SOURCE_DISABLED"
            body = {"kind": "folder", "target": str(tmp_path / "shares" / "old")}
            service.ok("POST", f"/api/v1/tenants/{tenant_id}/grants", 201, json=body)
            listed = service.ok("GET", f"/api/v1/datasets/{dataset_id}/sources")["sources"]
            assert [(s["id"], s["disabled"]) for s in listed] == [("old", False)]
        finally:
            service.close()


def test_a_source_revoked_from_the_cli_leaves_search_at_the_next_start(
    tmp_path: Path, model_cache: Path, s3_server: S3Server
) -> None:
    """`ragd grants revoke` works on the catalog alone (no store): the next `ragd serve` takes the
    source's files out of search; `POST …/enable` once granted again puts them back."""
    marker = f"zqcli{uuid.uuid4().hex[:6]}"
    folder = tmp_path / "shares" / "cli"
    folder.mkdir(parents=True)
    (folder / "memo.md").write_text(f"# Memo\nThe {marker} ledger is private.\n")
    settings = _settings(tmp_path, model_cache, s3_server, s3_server.bucket())

    def found(api: Api) -> bool:
        return any(marker in h["content"] for h in api.search(marker))

    with LiveServer(create_app(settings)) as live:
        live.wait_ready()
        service = Api(live.url, SERVICE_KEY)
        tenant_id, keys = new_tenant(service, "cli", "admin")
        admin = keys["admin"]
        grant = _grant_raw(service, tenant_id, str(folder))
        ds = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "docs"})["id"]
        source = {"kind": "folder", "config": {"path": str(folder)}}
        added = admin.ok("POST", f"/api/v1/datasets/{ds}/sources", 202, json=source)
        assert admin.wait_job(added["job"]["id"])["status"] == "succeeded"
        assert found(admin)
        for api in (admin, service):
            api.close()

    async def revoke_on_the_catalog() -> list[SourceSpec]:  # what `ragd grants revoke` does
        catalog = await open_catalog(settings.catalog_url)
        try:
            _, disabled = await kb_grants.revoke_grant(catalog, SERVICE, tenant_id, grant["id"])
            return disabled
        finally:
            await catalog.aclose()

    assert [s.id for s in asyncio.run(revoke_on_the_catalog())] == [added["source"]["id"]]
    with LiveServer(create_app(settings)) as live:
        live.wait_ready()
        service, admin = Api(live.url, SERVICE_KEY), Api(live.url, admin.key)
        try:
            assert not found(admin), "the next start took the disabled source's files out of search"
            _grant_raw(service, tenant_id, str(folder))
            assert found(admin), "a new grant enabled the source and put them back"
        finally:
            for api in (admin, service):
                api.close()
