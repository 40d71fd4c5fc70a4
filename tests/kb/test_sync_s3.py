"""An S3 prefix as a source: new and changed objects (by ETag) are indexed, deleted keys removed,
through the real services and job runner, against a real S3 server (moto) on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragd.bootstrap import open_services
from ragd.errors import Forbidden
from ragd.kb.datasets import create_dataset
from ragd.kb.files import list_files
from ragd.kb.sources import add_source, sync_source
from ragd.kb_types import JobStatus, Principal, SourceKind
from ragd.retrieve.search import SearchRequest
from ragd.settings import EmbeddingSettings, Settings
from tests.kb.conftest import run_to_end
from tests.support.s3_server import S3Server, s3_server

__all__ = ["s3_server"]

SERVICE = Principal(tenant_id=None, role="admin")


def note(marker: str) -> bytes:
    return f"# Memo\nThe {marker} memo explains the travel policy.\n".encode()


async def test_s3_prefix_converges(s3_server: S3Server, tmp_path: Path, model_cache: Path) -> None:
    bucket = s3_server.bucket(
        {"team/a.md": note("alderbrook"), "team/sub/b.md": note("birchvale"), "other/x.md": note("outside")}
    )
    settings = Settings(
        data_dir=tmp_path / "data",
        embedding=EmbeddingSettings(cache_dir=model_cache),
        s3=s3_server.settings(),
    )
    async with open_services(settings) as services:
        kb = services.knowledge()
        tenant = await kb.catalog.create_tenant("t")
        ds = await create_dataset(kb, SERVICE, name="s3", tenant_id=tenant.id)
        spec, job = await add_source(
            kb,
            SERVICE,
            ds.id,
            SourceKind.S3,
            {"bucket": bucket, "prefix": "team/"},
            folder_roots=[],
            allow_private=False,
        )
        first = await run_to_end(kb, job)
        assert (first.status, first.done, first.failed) == (JobStatus.SUCCEEDED, 2, 0)

        async def state() -> dict[str, str]:
            files = await list_files(kb, SERVICE, ds.id)
            return {str(f.item_key): f.status.value for f in files}

        assert await state() == {"team/a.md": "indexed", "team/sub/b.md": "indexed"}
        s3_server.put(bucket, "team/a.md", note("cedarfall"))  # changed: a new ETag
        s3_server.client.delete_object(Bucket=bucket, Key="team/sub/b.md")
        s3_server.put(bucket, "team/c.md", note("dunmoor"))
        second = await run_to_end(kb, await sync_source(kb, SERVICE, ds.id, spec.id))
        assert second.status is JobStatus.SUCCEEDED
        stages = sorted(i.stage.value for i in await kb.catalog.items(second.id))
        assert stages == ["deleted", "done", "done"]
        assert await state() == {"team/a.md": "indexed", "team/c.md": "indexed"}
        query = "alderbrook birchvale cedarfall dunmoor outside memo"
        hits = await services.retriever.search(SearchRequest(query, (ds.collection_name,), k=10))
        found = {
            m
            for m in ("alderbrook", "birchvale", "cedarfall", "dunmoor", "outside")
            for h in hits
            if m in h.content
        }
        assert found == {"cedarfall", "dunmoor"}
        third = await run_to_end(kb, await sync_source(kb, SERVICE, ds.id, spec.id))
        assert [i.stage.value for i in await kb.catalog.items(third.id)] == ["unchanged", "unchanged"]
        assert not list((settings.data_dir / "tmp").iterdir())  # downloads released


async def test_a_bucket_that_is_not_allowed_is_refused_when_the_source_is_added(
    s3_server: S3Server, tmp_path: Path, model_cache: Path
) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        embedding=EmbeddingSettings(cache_dir=model_cache),
        s3=s3_server.settings().model_copy(update={"allowed_buckets": ("openwebui",)}),
    )
    async with open_services(settings) as services:
        kb = services.knowledge()
        tenant = await kb.catalog.create_tenant("t")
        ds = await create_dataset(kb, SERVICE, name="s3", tenant_id=tenant.id)
        with pytest.raises(Forbidden, match="RAGD_S3__ALLOWED_BUCKETS"):
            await add_source(
                kb,
                SERVICE,
                ds.id,
                SourceKind.S3,
                {"bucket": "secret-bucket", "prefix": ""},
                folder_roots=[],
                allow_private=False,
                allowed_buckets=settings.s3.allowed_buckets,
            )
        assert await kb.catalog.list_sources(ds.id) == [], "nothing was stored"
