"""Folder walking honours .gitignore files, default ignores and extra patterns."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragd.errors import NotFound
from ragd.ingest.sources import collect
from ragd.types import IngestReport, IngestStatus
from tests.support.listing import FailingListing


def write(root: Path, rel: str, text: str = "x") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_gitignore_default_and_extra_ignores(tmp_path: Path) -> None:
    for rel in [
        "a.md",
        "b.log",
        "sub/c.md",
        "sub/d.tmp",
        "sub/deep/e.md",
        ".hidden/f.md",
        "node_modules/g.js",
        ".env",
        "keep/h.txt",
        "Thumbs.db",
        "sub/desktop.ini",
        ".DS_Store",
        "._a.md",
        "~$report.docx",
    ]:
        write(tmp_path, rel)
    write(tmp_path, ".gitignore", "*.log\n")
    write(tmp_path, "sub/.gitignore", "*.tmp\ndeep/\n")
    found = {f.path.relative_to(tmp_path).as_posix() for f in collect([tmp_path], ignore=["keep/"])}
    assert found == {"a.md", "sub/c.md"}


def test_sources_are_labelled_relative_to_the_given_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "docs/x/y.md")
    monkeypatch.chdir(tmp_path)
    [file] = collect([Path("docs")])
    assert file.source == "docs/x/y.md"
    [single] = collect([Path("docs/x/y.md"), Path("docs")])  # de-duplicated
    assert single.source == "docs/x/y.md"


def test_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="no such file"):
        collect([tmp_path / "nope"])


def test_folders_that_cannot_be_listed_are_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "docs/a.md")
    write(tmp_path, "docs/locked/b.md")
    FailingListing(monkeypatch).deny(tmp_path.resolve() / "docs" / "locked")
    monkeypatch.chdir(tmp_path)
    reports: list[IngestReport] = []

    files = collect([Path("docs")], unlisted=reports.append)

    assert [f.source for f in files] == ["docs/a.md"]
    assert reports == [
        IngestReport(
            source="docs/locked/",
            status=IngestStatus.FAILED,
            code="EXTRACTION_FAILED",
            message="cannot list the folder (Permission denied); its files were left out",
        )
    ]
