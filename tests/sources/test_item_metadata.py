"""What each source reader says about an item (its metadata, before the sync checks it): a page's
meta tags and dates parsed strictly, a folder's path, an S3 object's user metadata and tags over
the real adapter and a real S3 server (moto on loopback), a failed tag read tolerated."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ragd.objects.s3 import S3ObjectStore
from ragd.sources.base import ItemMetadata, SourceItem
from ragd.sources.folder import path_metadata
from ragd.sources.html_text import parse_html
from ragd.sources.page_meta import http_date, iso_date, page_metadata
from ragd.sources.s3_prefix import S3PrefixSource
from tests.support.s3_server import S3Server, s3_server

__all__ = ["s3_server"]


def meta_of(head: str, last_modified: str | None = None) -> ItemMetadata:
    return page_metadata(parse_html(f"<html><head>{head}</head><body><p>x</p></body></html>"), last_modified)


def test_a_page_gives_keywords_description_author_and_its_published_date() -> None:
    got = meta_of(
        '<meta name="KEYWORDS" content=" a, b ,,a"><meta name="description" content=" About "> '
        '<meta name="author" content="Ann"><meta name="date" content="2023-01-01">'
        '<meta property="article:published_time" content="2024-05-01T10:00:00+02:00">',
        "Wed, 03 Jan 2024 08:00:00 GMT",
    )
    assert got.tags == ("a", "b")
    assert dict(got.strings) == {"description": "About", "author": "Ann"}
    assert dict(got.dates) == {"published": "2024-05-01T08:00:00Z"}  # article:published_time first


@pytest.mark.parametrize(
    ("head", "last_modified", "published"),
    [
        ('<meta name="date" content="2023-01-01">', None, "2023-01-01T00:00:00Z"),
        ('<meta name="date" content="1 May 2024">', "Wed, 03 Jan 2024 08:00:00 GMT", "2024-01-03T08:00:00Z"),
        ('<meta name="date" content="2024-13-45">', None, None),
        ("", "not a date", None),
        ('<meta property="article:published_time" content="2024-05-01T10:00">', None, "2024-05-01T10:00:00Z"),
    ],
)
def test_dates_are_parsed_strictly_and_an_unparseable_one_is_dropped(
    head: str, last_modified: str | None, published: str | None
) -> None:
    dates = dict(meta_of(head, last_modified).dates)
    assert dates == ({"published": published} if published else {})


def test_a_text_page_has_only_its_header_date() -> None:
    assert page_metadata(None, None) == ItemMetadata()
    assert dict(page_metadata(None, "Wed, 03 Jan 2024 08:00:00 GMT").dates) == {
        "published": "2024-01-03T08:00:00Z"
    }
    assert iso_date("2024-05-01 10:00:00Z") == "2024-05-01T10:00:00Z"
    assert iso_date("20240501") is None
    assert http_date("") is None


def test_a_folder_file_gives_its_folders_and_path() -> None:
    assert path_metadata("a/b/c.md") == ItemMetadata(tags=("a", "b"), strings={"path": "a/b/c.md"})
    assert path_metadata("c.md") == ItemMetadata(strings={"path": "c.md"})


@pytest.fixture
async def store(s3_server: S3Server) -> AsyncIterator[S3ObjectStore]:
    opened = await S3ObjectStore.open(s3_server.settings())
    yield opened
    await opened.aclose()


async def test_an_s3_object_gives_its_user_metadata_and_tags_and_a_failed_tag_read_is_tolerated(
    s3_server: S3Server, store: S3ObjectStore, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bucket = s3_server.bucket()
    s3_server.client.put_object(
        Bucket=bucket, Key="p/a.md", Body=b"# a", Metadata={"team-name": "alpha"}, Tagging="kind=memo&draft="
    )
    s3_server.client.put_object(Bucket=bucket, Key="p/b.md", Body=b"# b", Metadata={"team": "beta"})
    source = S3PrefixSource(store, bucket, "p/", max_bytes=1000, scratch_dir=tmp_path / "scratch")
    items = {i.key: i async for i in source.scan() if isinstance(i, SourceItem)}
    async with source.loaded(items["p/a.md"]):
        got = await source.item_metadata(items["p/a.md"])
    assert got == ItemMetadata(tags=("kind=memo", "draft"), strings={"team_name": "alpha"})
    async with source.loaded(items["p/b.md"]):
        s3_server.client.delete_object(Bucket=bucket, Key="p/b.md")  # gone before its tags are read
        caplog.set_level(logging.WARNING, logger="ragd.sources.s3_prefix")
        got = await source.item_metadata(items["p/b.md"])
    assert got == ItemMetadata(strings={"team": "beta"})  # no tags, and no error
    assert "cannot read the tags of" in caplog.text
    await source.aclose()
