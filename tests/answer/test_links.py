"""The URL and title a client shows for a cited source: a web page's address, else a ragd:// URL."""

from __future__ import annotations

import pytest

from ragd.answer.links import is_web_address, source_title, source_url
from ragd.types import Citation


def cite(source: str, *, file_id: str = "f1", split_id: int | None = 3, page: int | None = None) -> Citation:
    return Citation(
        number=1,
        chunk_id="0b7c6d1e-0000-5000-8000-000000000001",
        file_id=file_id,
        name="Guide",
        source=source,
        text="text",
        score=0.5,
        split_id=split_id,
        page=page,
    )


def test_a_web_page_is_cited_by_its_address() -> None:
    assert source_url(cite("https://docs.example.org/guide/setup?v=2#top"), "kb") == (
        "https://docs.example.org/guide/setup?v=2#top"
    )
    assert source_url(cite("HTTP://docs.example.org/"), "kb") == "HTTP://docs.example.org/"


@pytest.mark.parametrize(
    "source", ["docs/guide.md", "guide.md", "ftp://host/file", "file:///etc/passwd", "https:no-host", ""]
)
def test_anything_else_is_cited_by_its_chunk(source: str) -> None:
    assert source_url(cite(source), "kb") == "ragd://kb/f1#chunk=3"


def test_the_file_id_is_percent_encoded_and_an_unknown_place_names_the_point() -> None:
    item = cite("a.md", file_id="team/a b#1?x", split_id=None)
    assert (
        source_url(item, "kb") == "ragd://kb/team%2Fa%20b%231%3Fx#point=0b7c6d1e-0000-5000-8000-000000000001"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://x.org/a", True),
        ("http://x.org", True),
        (" https://x.org/a", False),
        ("https://[::1", False),  # urlsplit raises: not an address
        ("mailto:a@x.org", False),
        ("x.org/a", False),
    ],
)
def test_is_web_address(text: str, expected: bool) -> None:
    assert is_web_address(text) is expected


def test_the_title_is_the_name_and_the_page_for_people() -> None:
    assert source_title(cite("a.md")) == "Guide"
    assert source_title(cite("a.pdf", page=0)) == "Guide, page 1"
    assert source_title(cite("a.pdf", page=4)) == "Guide, page 5"
