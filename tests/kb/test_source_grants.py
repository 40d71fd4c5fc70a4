"""Sources bound to their tenant by grants (issue 30 §1.1), through the use-cases on the real
catalog, SQLite and PostgreSQL: who grants, what a grant may name, overlaps, what a tenant admin
may add, and what revoking or a start-up does to sources no grant covers."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from ragd.catalog.sql import SqlCatalog, open_catalog
from ragd.catalog.sql.tables import audit_log
from ragd.errors import (
    Forbidden,
    GrantOverlap,
    InvalidRequest,
    NotFound,
    SourceDisabled,
    SourceNotGranted,
)
from ragd.kb import grants
from ragd.kb.context import KbContext
from ragd.kb.files import new_job
from ragd.kb.indexing import index_entry
from ragd.kb.runs import run_job
from ragd.kb.sources import add_source, enable_source, sync_source
from ragd.kb.watcher import FolderWatcher
from ragd.kb_types import Dataset, FileEntry, JobKind, Principal, SourceGrant, SourceKind, SourceSpec
from tests.catalog.conftest import table_rows

SERVICE = Principal(tenant_id=None, role="admin")
BUCKET = "uploads"


@dataclass
class World:
    kb: KbContext
    url: str
    root: Path
    ids: dict[str, str]  # tenant name -> id
    datasets: dict[str, Dataset]

    def admin(self, name: str) -> Principal:
        return Principal(tenant_id=self.ids[name], role="admin", key_id=f"key-{name}")

    @property
    def catalog(self) -> SqlCatalog:
        return cast(SqlCatalog, self.kb.catalog)

    async def grant(self, name: str, kind: SourceKind, target: str, **kwargs: Any) -> Any:
        return await grants.create_grant(self.catalog, SERVICE, self.ids[name], kind, target, **kwargs)

    async def add(
        self, name: str, kind: SourceKind, config: dict[str, Any], who: Principal | None = None
    ) -> Any:
        principal = who or self.admin(name)
        return await add_source(
            self.kb,
            principal,
            self.datasets[name].id,
            kind,
            config,
            folder_roots=[self.root],
            allow_private=False,
        )

    async def actions(self) -> list[tuple[str, str, str | None]]:
        rows = sorted(await table_rows(self.url, audit_log), key=lambda r: r["seq"])
        return [(r["action"], r["outcome"], r["target_id"]) for r in rows]


@pytest.fixture
async def world(catalog_url: str, tmp_path: Path) -> AsyncIterator[World]:
    catalog = await open_catalog(catalog_url)
    unused = ("store", "ingestor", "chunker_for", "reader_for", "max_upload_bytes")
    kb = KbContext(catalog=catalog, files_dir=tmp_path, **cast(dict[str, Any], dict.fromkeys(unused)))
    root = tmp_path / "shares"
    ids, datasets = {}, {}
    for name in ("north", "south"):
        (root / name / "sub").mkdir(parents=True)
        tenant = await catalog.create_tenant(name)
        ids[name] = tenant.id
        datasets[name] = await catalog.create_dataset(
            Dataset(id=f"ds-{name}", tenant_id=tenant.id, name="docs", collection_name=f"kb-{name}")
        )
    yield World(kb, catalog_url, root, ids, datasets)
    await catalog.aclose()


async def test_a_tenant_admin_reaches_only_what_its_tenant_was_granted(world: World) -> None:
    await world.grant("south", SourceKind.FOLDER, str(world.root / "south"))
    await world.grant("south", SourceKind.S3, f"{BUCKET}/south/")
    refused = [
        (SourceKind.S3, {"bucket": BUCKET, "prefix": "south/"}),  # another tenant's prefix
        (SourceKind.S3, {"bucket": BUCKET, "prefix": ""}),  # the whole bucket
        (SourceKind.S3, {"bucket": BUCKET, "prefix": "north/"}),  # nobody's: not granted either
        (SourceKind.FOLDER, {"path": str(world.root / "south")}),  # another tenant's folder
        (SourceKind.FOLDER, {"path": str(world.root / "south" / "sub")}),
        (SourceKind.FOLDER, {"path": str(world.root)}),  # the folder that holds both
    ]
    for kind, config in refused:
        with pytest.raises(SourceNotGranted, match="no grant of this tenant covers") as caught:
            await world.add("north", kind, config)
        assert caught.value.http_status == 403
        assert caught.value.hint is not None
        assert "/grants" in caught.value.hint
    assert await world.catalog.list_sources(world.datasets["north"].id) == []

    await world.grant("north", SourceKind.FOLDER, str(world.root / "north"))
    await world.grant("north", SourceKind.S3, f"{BUCKET}/north/")
    folder, job = await world.add("north", SourceKind.FOLDER, {"path": str(world.root / "north" / "sub")})
    bucket, _ = await world.add("north", SourceKind.S3, {"bucket": BUCKET, "prefix": "north/deep/"})
    assert job.kind is JobKind.SYNC
    assert folder.config["path"] == str((world.root / "north" / "sub").resolve())
    assert bucket.disabled_reason is None
    with pytest.raises(SourceNotGranted):  # still not the other tenant's
        await world.add("north", SourceKind.FOLDER, {"path": str(world.root / "south")})


async def test_a_symlink_does_not_lead_a_source_out_of_its_grant(world: World) -> None:
    await world.grant("north", SourceKind.FOLDER, str(world.root / "north"))
    link = world.root / "north" / "to-south"
    link.symlink_to(world.root / "south", target_is_directory=True)
    with pytest.raises(SourceNotGranted):
        await world.add("north", SourceKind.FOLDER, {"path": str(link)})
    with pytest.raises(SourceNotGranted):
        await world.add("north", SourceKind.FOLDER, {"path": str(world.root / "north" / ".." / "south")})


async def test_a_missing_folder_outside_the_grant_is_not_revealed(world: World) -> None:
    await world.grant("north", SourceKind.FOLDER, str(world.root / "north"))
    with pytest.raises(SourceNotGranted):  # not NOT_FOUND: whether it exists is none of its business
        await world.add("north", SourceKind.FOLDER, {"path": "/no/such/folder"})
    with pytest.raises(NotFound):
        await world.add("north", SourceKind.FOLDER, {"path": str(world.root / "north" / "missing")})


async def test_only_the_service_key_grants_and_a_tenant_admin_lists_its_own(world: World) -> None:
    north = world.admin("north")
    target = str(world.root / "north")
    with pytest.raises(Forbidden):
        await grants.create_grant(world.catalog, north, world.ids["north"], SourceKind.FOLDER, target)
    with pytest.raises(NotFound):  # another tenant: like a missing one
        await grants.create_grant(world.catalog, north, world.ids["south"], SourceKind.FOLDER, target)
    made = await world.grant("north", SourceKind.FOLDER, target)
    with pytest.raises(Forbidden):
        await grants.revoke_grant(world.catalog, north, world.ids["north"], made.id)
    assert [g.id for g in await grants.list_grants(world.catalog, north, world.ids["north"])] == [made.id]
    with pytest.raises(NotFound):
        await grants.list_grants(world.catalog, north, world.ids["south"])
    reader = Principal(tenant_id=world.ids["north"], role="reader")
    with pytest.raises(Forbidden):
        await grants.list_grants(world.catalog, reader, world.ids["north"])
    with pytest.raises(NotFound):
        await grants.create_grant(world.catalog, SERVICE, "ghost", SourceKind.FOLDER, target)
    denied = [a for a in await world.actions() if a[1] == "denied"]
    assert [a[0] for a in denied] == ["grant.create", "grant.create", "grant.revoke"]


@pytest.mark.parametrize(
    ("kind", "target", "error"),
    [
        (SourceKind.FOLDER, "relative/path", InvalidRequest),
        (SourceKind.FOLDER, "/srv/../etc", InvalidRequest),
        (SourceKind.FOLDER, "/srv/a\x00b", InvalidRequest),
        (SourceKind.FOLDER, "/etc", Forbidden),  # outside RAGD_CATALOG__FOLDER_ROOTS
        (SourceKind.S3, "Not_A_Bucket!/x", InvalidRequest),
        (SourceKind.S3, "/prefix-without-bucket", InvalidRequest),
        (SourceKind.S3, "secret/x", Forbidden),  # outside RAGD_S3__ALLOWED_BUCKETS
        (SourceKind.WEB, "https://example.org/", InvalidRequest),
    ],
)
async def test_a_grant_names_a_clean_target_inside_the_outer_bounds(
    world: World, kind: SourceKind, target: str, error: type[Exception]
) -> None:
    with pytest.raises(error) as caught:
        await world.grant("north", kind, target, folder_roots=[world.root], allowed_buckets=[BUCKET])
    assert type(caught.value) is error
    assert await world.catalog.list_grants() == []
    outcome = "denied" if error is Forbidden else "failed"
    assert [(a, o) for a, o, _ in await world.actions()] == [("grant.create", outcome)]


async def test_grants_of_two_tenants_overlap_only_when_the_later_says_shared(world: World) -> None:
    await world.grant("south", SourceKind.FOLDER, str(world.root / "south"))
    await world.grant("south", SourceKind.S3, f"{BUCKET}/south/")
    overlapping = [
        (SourceKind.FOLDER, str(world.root / "south")),
        (SourceKind.FOLDER, str(world.root / "south" / "sub")),
        (SourceKind.FOLDER, str(world.root)),
        (SourceKind.S3, f"{BUCKET}/south/"),
        (SourceKind.S3, f"{BUCKET}/south/2024/"),
        (SourceKind.S3, f"{BUCKET}/"),
        (SourceKind.S3, BUCKET),
        (SourceKind.S3, f"{BUCKET}/sou"),  # lists south/ too
    ]
    for kind, target in overlapping:
        with pytest.raises(GrantOverlap) as caught:
            await world.grant("north", kind, target)
        assert caught.value.http_status == 409
    assert await world.catalog.list_grants(world.ids["north"]) == []
    await world.grant("north", SourceKind.FOLDER, str(world.root / "north"))  # beside it: fine
    await world.grant("north", SourceKind.S3, f"{BUCKET}/north/")
    await world.grant("north", SourceKind.S3, f"other-{BUCKET}/south/")
    await world.grant("south", SourceKind.FOLDER, str(world.root / "south" / "sub"))  # its own: fine
    shared = await world.grant("north", SourceKind.S3, f"{BUCKET}/south/", shared=True)
    assert shared.shared
    await world.add("north", SourceKind.S3, {"bucket": BUCKET, "prefix": "south/"})
    failed = [a[0] for a in await world.actions() if a[1] == "failed"]
    assert failed == ["grant.create"] * len(overlapping)


async def test_the_service_key_grants_what_it_adds_but_never_across_tenants(world: World) -> None:
    spec, _ = await world.add("north", SourceKind.FOLDER, {"path": str(world.root / "north")}, SERVICE)
    made = await world.catalog.list_grants(world.ids["north"])
    assert [(g.kind, g.target, g.created_by) for g in made] == [
        (SourceKind.FOLDER, str((world.root / "north").resolve()), "service")
    ]
    await world.add("north", SourceKind.FOLDER, {"path": str(world.root / "north" / "sub")}, SERVICE)
    assert len(await world.catalog.list_grants(world.ids["north"])) == 1, "covered: no second grant"
    with pytest.raises(GrantOverlap):
        await world.add("south", SourceKind.FOLDER, {"path": str(world.root / "north" / "sub")}, SERVICE)
    assert await world.catalog.list_sources(world.datasets["south"].id) == []
    assert spec.disabled_reason is None


async def test_revoking_disables_what_it_alone_covered_and_a_new_grant_enables_it(world: World) -> None:
    north = world.admin("north")
    ds = world.datasets["north"].id
    wide = await world.grant("north", SourceKind.FOLDER, str(world.root / "north"))
    narrow = await world.grant("north", SourceKind.FOLDER, str(world.root / "north" / "sub"))
    await world.grant("north", SourceKind.S3, f"{BUCKET}/north/")
    top, _ = await world.add("north", SourceKind.FOLDER, {"path": str(world.root / "north")})
    sub, _ = await world.add("north", SourceKind.FOLDER, {"path": str(world.root / "north" / "sub")})
    s3, _ = await world.add("north", SourceKind.S3, {"bucket": BUCKET, "prefix": "north/"})

    revoked, disabled = await grants.revoke_grant(world.catalog, SERVICE, world.ids["north"], wide.id)
    assert revoked.revoked_at is not None
    assert [s.id for s in disabled] == [top.id], "sub is still covered by the narrow grant"
    listed = {s.id: s for s in await world.catalog.list_sources(ds)}
    assert listed[top.id].disabled_reason is not None
    assert "no live grant" in str(listed[top.id].disabled_reason)
    assert listed[sub.id].disabled_reason is None
    assert listed[s3.id].disabled_reason is None
    with pytest.raises(SourceDisabled) as caught:
        await sync_source(world.kb, north, ds, top.id)
    assert caught.value.http_status == 409
    await sync_source(world.kb, north, ds, sub.id)  # the others sync on
    with pytest.raises(SourceNotGranted):
        await enable_source(world.kb, north, ds, top.id)
    listed_grants = await grants.list_grants(world.catalog, north, world.ids["north"], include_revoked=True)
    assert {g.id for g in listed_grants} == {wide.id, narrow.id, listed_grants[2].id}
    assert wide.id not in {g.id for g in await world.catalog.list_grants(world.ids["north"])}

    await world.grant("north", SourceKind.FOLDER, str(world.root / "north"))
    assert (await world.catalog.get_source(top.id)).disabled_reason is None  # type: ignore[union-attr]
    await sync_source(world.kb, north, ds, top.id)
    actions = [a[0] for a in await world.actions() if a[1] == "ok"]
    assert actions.count("grant.revoke") == 1
    assert ("source.disable", "ok", top.id) in await world.actions()
    assert ("source.enable", "ok", top.id) in await world.actions()


async def test_enable_checks_a_disabled_source_again(world: World) -> None:
    north = world.admin("north")
    ds = world.datasets["north"].id
    await world.grant("north", SourceKind.S3, f"{BUCKET}/north/")
    spec, _ = await world.add("north", SourceKind.S3, {"bucket": BUCKET, "prefix": "north/"})
    await world.catalog.set_source_disabled(spec.id, "an operator's reason")
    enabled = await enable_source(world.kb, north, ds, spec.id)
    assert enabled.disabled_reason is None
    with pytest.raises(NotFound):  # another tenant's admin
        await enable_source(world.kb, world.admin("south"), ds, spec.id)


async def test_a_queued_sync_of_a_source_disabled_since_is_refused_when_it_runs(world: World) -> None:
    dataset = world.datasets["north"]
    spec = SourceSpec(
        id="s-old", dataset_id=dataset.id, kind=SourceKind.FOLDER, config={"path": str(world.root / "north")}
    )
    await world.catalog.create_source(spec)
    job = await world.catalog.enqueue(new_job(dataset, JobKind.SYNC, {"source_id": spec.id}, 3))
    await world.catalog.set_source_disabled(spec.id, "revoked")
    with pytest.raises(SourceDisabled):
        await run_job(world.kb, job)


async def test_start_up_disables_sources_no_grant_covers(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    """Sources stored before grants existed (an upgrade): rows written straight to the catalog."""
    north, south = world.datasets["north"], world.datasets["south"]
    rows = [
        SourceSpec(
            id="f-north",
            dataset_id=north.id,
            kind=SourceKind.FOLDER,
            config={"path": str(world.root / "north")},
        ),
        SourceSpec(
            id="s3-all", dataset_id=north.id, kind=SourceKind.S3, config={"bucket": BUCKET, "prefix": ""}
        ),
        SourceSpec(
            id="f-south",
            dataset_id=south.id,
            kind=SourceKind.FOLDER,
            config={"path": str(world.root / "south")},
        ),
        SourceSpec(
            id="web", dataset_id=south.id, kind=SourceKind.WEB, config={"url": "https://example.org/"}
        ),
    ]
    for spec in rows:
        await world.catalog.create_source(spec)
    await world.catalog.create_grant(  # straight to the catalog too: no sweep ran
        SourceGrant(
            id="g", tenant_id=world.ids["south"], kind=SourceKind.FOLDER, target=str(world.root / "south")
        )
    )
    with caplog.at_level(logging.WARNING, logger="ragd.kb.grants"):
        await grants.sweep_at_start(world.catalog)
    state = {s.id: s.disabled_reason for s in await world.catalog.list_sources()}
    assert state["f-south"] is None
    assert state["web"] is None, "web sources are not grant-bound"
    assert state["f-north"] is not None
    assert state["s3-all"] is not None
    assert f"{BUCKET}/" in state["s3-all"]
    logged = caplog.text
    assert "source f-north disabled" in logged
    assert "source s3-all disabled" in logged
    disables = {a[2] for a in await world.actions() if a[0] == "source.disable"}
    assert disables == {"f-north", "s3-all"}
    await grants.sweep_at_start(world.catalog)  # again: nothing new
    await world.catalog.set_source_disabled("f-south", "by hand")
    await asyncio.gather(grants.sweep(world.catalog), grants.sweep(world.catalog))  # two replicas
    enables = [a for a in await world.actions() if a[0] == "source.enable"]
    assert enables == [("source.enable", "ok", "f-south")], "recorded once, by the sweep that did it"
    assert len([a for a in await world.actions() if a[0] == "source.disable"]) == 2


async def test_a_file_of_a_disabled_source_is_not_read_again_on_reindex(world: World) -> None:
    dataset = world.datasets["north"]
    spec = SourceSpec(id="s-dis", dataset_id=dataset.id, kind=SourceKind.S3, config={"bucket": BUCKET})
    await world.catalog.create_source(spec)
    entry = await world.catalog.put_file(
        FileEntry(id="f1", dataset_id=dataset.id, name="a.md", source_id=spec.id, item_key="a.md")
    )
    await world.catalog.set_source_disabled(spec.id, "revoked")
    with pytest.raises(SourceDisabled):
        await index_entry(world.kb, dataset, entry, force=True)


async def test_two_overlapping_grants_at_once_cannot_both_be_stored(world: World) -> None:
    """The overlap check and the insert are one transaction: of two concurrent grants of the same
    prefix to two tenants, one is stored and the other is GRANT_OVERLAP."""
    for round_ in range(5):
        target = f"{BUCKET}/race-{round_}/"
        results = await asyncio.gather(
            world.grant("north", SourceKind.S3, target),
            world.grant("south", SourceKind.S3, target),
            return_exceptions=True,
        )
        assert sorted(type(r).__name__ for r in results) == ["GrantOverlap", "SourceGrant"], results
        stored = [g for g in await world.catalog.list_grants() if g.target == target]
        assert len(stored) == 1


async def test_a_grant_check_that_raises_stores_nothing(world: World) -> None:
    grant = SourceGrant(id="g-x", tenant_id=world.ids["north"], kind=SourceKind.S3, target=f"{BUCKET}/x/")

    def refuse(live: list[SourceGrant]) -> None:
        raise GrantOverlap(f"refused with {len(live)} live")

    with pytest.raises(GrantOverlap, match="refused with 0 live"):
        await world.catalog.create_grant(grant, check=refuse)
    assert await world.catalog.get_grant("g-x") is None


async def test_the_folder_watcher_leaves_a_disabled_source_alone(world: World) -> None:
    watched: list[Path] = []

    async def watch(
        root: Path, ignore: Any, debounce_ms: int, stop: asyncio.Event
    ) -> AsyncIterator[set[str]]:
        watched.append(root)
        await stop.wait()
        yield set()

    dataset = world.datasets["north"]
    for name in ("live", "off"):
        config = {"path": str(world.root / "north" / name)}
        await world.catalog.create_source(
            SourceSpec(id=name, dataset_id=dataset.id, kind=SourceKind.FOLDER, config=config)
        )
    await world.catalog.set_source_disabled("off", "revoked")
    stop = asyncio.Event()
    watcher = FolderWatcher(world.kb, watch, debounce_ms=10, on_queue=lambda: None)
    await watcher._refresh(stop)  # one look at the catalog's sources, as every few seconds
    followed = dict(watcher._tasks)
    assert set(followed) == {"live"}
    stop.set()
    await asyncio.gather(*followed.values())
    assert watched == [world.root / "north" / "live"]
    queued = await world.catalog.list_jobs(world.ids["north"])
    assert [j.payload["source_id"] for j in queued] == ["live"], "no sync queued for the disabled one"
