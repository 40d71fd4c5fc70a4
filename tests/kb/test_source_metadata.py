"""Sources fill their files' metadata and ``source_label`` (issue 34 §1: folder path segments, S3
object metadata and tags, a web page's meta tags and dates), through the real services and job
runner: a folder on a tmp dir, a real S3 server (moto) on loopback, a loopback web site.  Each
source-given field is found by a filter; a user's own keys survive a re-sync."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragd.bootstrap import open_services
from ragd.kb.datasets import create_dataset
from ragd.kb.file_metadata import update_metadata
from ragd.kb.files import list_files
from ragd.kb.sources import add_source, sync_source
from ragd.kb_types import FieldType, FileEntry, FileMetadata, JobStatus, Principal, SourceKind
from ragd.retrieve.filters import parse_filter
from ragd.retrieve.search import SearchRequest
from ragd.settings import EmbeddingSettings, Settings
from tests.kb.conftest import run_to_end
from tests.sources.site import LoopbackSite, Page
from tests.support.s3_server import S3Server, s3_server

__all__ = ["s3_server"]

SERVICE = Principal(tenant_id=None, role="admin")
pytestmark = pytest.mark.slow  # each syncs a source through the real services (5-8 s)


def memo(marker: str) -> str:
    return f"# Memo\nThe {marker} memo explains the travel policy for the whole team.\n"


async def _files(kb: object, dataset_id: str) -> dict[str, FileEntry]:
    return {str(f.item_key): f for f in await list_files(kb, SERVICE, dataset_id)}  # type: ignore[arg-type]


async def test_a_folder_source_gives_folders_as_tags_and_the_path_and_keeps_user_keys(
    tmp_path: Path, model_cache: Path
) -> None:
    folder = tmp_path / "docs"
    (folder / "reports" / "2024").mkdir(parents=True)
    (folder / "reports" / "2024" / "q1.md").write_text(memo("alderbrook"))
    (folder / "top.md").write_text(memo("birchvale"))
    settings = Settings(data_dir=tmp_path / "data", embedding=EmbeddingSettings(cache_dir=model_cache))
    async with open_services(settings) as services:
        kb = services.knowledge()
        tenant = await kb.catalog.create_tenant("t")
        ds = await create_dataset(kb, SERVICE, name="folder", tenant_id=tenant.id)
        spec, job = await add_source(
            kb, SERVICE, ds.id, SourceKind.FOLDER, {"path": str(folder)}, folder_roots=[], allow_private=False
        )
        assert (await run_to_end(kb, job)).status is JobStatus.SUCCEEDED
        files = await _files(kb, ds.id)
        q1, top = files["reports/2024/q1.md"], files["top.md"]
        assert q1.metadata.tags == ("reports", "2024")
        assert dict(q1.metadata.fields) == {"path": "reports/2024/q1.md"}
        assert (top.metadata.tags, dict(top.metadata.fields)) == ((), {"path": "top.md"})
        assert q1.source_label == f"folder:{folder.resolve()}"

        async def found(flt: object) -> set[str]:
            request = SearchRequest(
                "travel policy memo", (ds.collection_name,), k=10, where=parse_filter(flt)
            )
            return {h.meta.get("name", "") for h in await services.retriever.search(request)}

        assert await found({"must": [{"key": "tags", "match": {"value": "reports"}}]}) == {"q1.md"}
        by_path = {"must": [{"key": "fields.path", "match": {"value": "top.md"}}]}
        assert await found(by_path) == {"top.md"}

        # the user's own keys survive a re-sync; the source's are written again
        await update_metadata(kb, SERVICE, ds.id, q1.id, tags=["mine"], fields={"owner": "ann", "path": "x"})
        (folder / "reports" / "2024" / "q1.md").write_text(memo("cedarfall"))
        assert (
            await run_to_end(kb, await sync_source(kb, SERVICE, ds.id, spec.id))
        ).status is JobStatus.SUCCEEDED
        q1 = (await _files(kb, ds.id))["reports/2024/q1.md"]
        assert q1.metadata.tags == ("mine", "reports", "2024")
        assert dict(q1.metadata.fields) == {"owner": "ann", "path": "reports/2024/q1.md"}
        owned = {
            "must": [
                {"key": "fields.owner", "match": {"value": "ann"}},
                {"key": "tags", "match": {"value": "2024"}},
            ]
        }
        assert await found(owned) == {"q1.md"}


async def test_an_s3_source_gives_user_metadata_as_fields_and_object_tags_as_tags(
    s3_server: S3Server, tmp_path: Path, model_cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bucket = s3_server.bucket()
    s3_server.client.put_object(
        Bucket=bucket,
        Key="team/a.md",
        Body=memo("alderbrook").encode(),
        Metadata={"team": "alpha", "reviewed-on": "2024-05-01", "9lives": "dropped", "level": "high"},
        Tagging="kind=memo&draft=",
    )
    s3_server.put(bucket, "team/b.md", memo("birchvale").encode())
    settings = Settings(
        data_dir=tmp_path / "data",
        embedding=EmbeddingSettings(cache_dir=model_cache),
        s3=s3_server.settings(),
    )
    caplog.set_level(logging.DEBUG, logger="ragd.kb.source_metadata")
    async with open_services(settings) as services:
        kb = services.knowledge()
        tenant = await kb.catalog.create_tenant("t")
        ds = await create_dataset(kb, SERVICE, name="s3", tenant_id=tenant.id)
        # another file already made "level" a number in this dataset: the source's string is dropped
        other = await kb.catalog.put_file(FileEntry(id=str(uuid.uuid4()), dataset_id=ds.id, name="other.md"))
        await kb.catalog.set_file_metadata(
            other.id, FileMetadata(fields={"level": 3}), {"level": FieldType.NUMBER}
        )
        _, job = await add_source(
            kb,
            SERVICE,
            ds.id,
            SourceKind.S3,
            {"bucket": bucket, "prefix": "team/"},
            folder_roots=[],
            allow_private=False,
        )
        done = await run_to_end(kb, job)
        assert (done.status, done.done, done.failed) == (JobStatus.SUCCEEDED, 2, 0)
        files = await _files(kb, ds.id)
        a, b = files["team/a.md"], files["team/b.md"]
        assert a.status.value == b.status.value == "indexed"
        assert sorted(a.metadata.tags) == ["draft", "kind=memo"]
        # a value that reads as a date stays a string; "-" in a name is "_"; a name the rules refuse
        # is dropped
        assert dict(a.metadata.fields) == {"team": "alpha", "reviewed_on": "2024-05-01"}
        assert "'9lives' dropped" in caplog.text
        assert "'level' dropped" in caplog.text
        assert (b.metadata.tags, dict(b.metadata.fields)) == ((), {})
        assert a.source_label == b.source_label == f"s3://{bucket}/team/"
        assert (await kb.catalog.field_types(ds.id))["reviewed_on"].value == "string"
        where = parse_filter({"must": [{"key": "fields.team", "match": {"value": "alpha"}}]})
        hits = await services.retriever.search(
            SearchRequest("memo", (ds.collection_name,), k=10, where=where)
        )
        assert {h.meta.get("name") for h in hits} == {"a.md"}
        assert any("tagging" in r.query for r in s3_server.requests_for(bucket))


PUBLISHED_PAGE = (
    "<!DOCTYPE html><html><head><title>Alderbrook</title>"
    '<meta name="keywords" content="travel, policy, , travel">'
    '<meta name="description" content="How we travel">'
    '<meta name="Author" content="Ann Example">'
    '<meta property="article:published_time" content="2024-05-01T10:00:00+02:00">'
    "</head><body><main><article><h1>Alderbrook</h1><p>"
    + "The alderbrook memo explains the travel policy for the whole team. " * 3
    + '</p><a href="/b.html">next</a></article></main></body></html>'
)
UNDATED_PAGE = (
    "<!DOCTYPE html><html><head><title>Birchvale</title>"
    '<meta name="date" content="yesterday">'
    "</head><body><main><article><h1>Birchvale</h1><p>"
    + "The birchvale memo explains the expense policy for the whole team. " * 3
    + "</p></article></main></body></html>"
)


@pytest.fixture
def site() -> Iterator[LoopbackSite]:
    pages = {
        "/a.html": Page(PUBLISHED_PAGE.encode()),
        "/b.html": Page(UNDATED_PAGE.encode(), headers={"Last-Modified": "Wed, 03 Jan 2024 08:00:00 GMT"}),
    }
    with LoopbackSite(pages) as running:
        yield running


async def test_a_web_source_gives_meta_tags_and_the_page_date(
    site: LoopbackSite, tmp_path: Path, model_cache: Path
) -> None:
    settings = Settings(data_dir=tmp_path / "data", embedding=EmbeddingSettings(cache_dir=model_cache))
    async with open_services(settings) as services:
        kb = services.knowledge()
        tenant = await kb.catalog.create_tenant("t")
        ds = await create_dataset(kb, SERVICE, name="web", tenant_id=tenant.id)
        _, job = await add_source(
            kb,
            SERVICE,
            ds.id,
            SourceKind.WEB,
            {"url": site.url("/a.html"), "delay_s": 0},
            folder_roots=[],
            allow_private=False,
        )
        assert (await run_to_end(kb, job)).status is JobStatus.SUCCEEDED
        files = {f.name: f for f in await list_files(kb, SERVICE, ds.id)}
        a, b = files["Alderbrook"], files["Birchvale"]
        assert a.metadata.tags == ("travel", "policy")
        assert dict(a.metadata.fields) == {
            "description": "How we travel",
            "author": "Ann Example",
            "published": "2024-05-01T08:00:00Z",
        }
        # "yesterday" is no date: dropped, and the Last-Modified header gives it
        assert dict(b.metadata.fields) == {"published": "2024-01-03T08:00:00Z"}
        assert a.source_label == site.url("/a.html")
        recent = parse_filter({"must": [{"key": "fields.published", "range": {"gte": "2024-03-01"}}]})
        hits = await services.retriever.search(
            SearchRequest("policy memo", (ds.collection_name,), k=10, where=recent)
        )
        assert {h.meta.get("name") for h in hits} == {"Alderbrook"}
