"""The command line end to end, in-process through typer's runner, on a temporary data dir."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragd.cli.app import app
from tests.conftest import shared_path
from tests.support.knobs_corpus import CAR, FILES, HARBOUR
from tests.support.listing import FailingListing


@pytest.fixture
def cli(tmp_path: Path, model_cache: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("RAGD_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RAGD_EMBEDDING__CACHE_DIR", str(model_cache))
    return CliRunner()


def write_notes(root: Path) -> Path:
    folder = root / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "holidays.md").write_text("# Holidays\n\nStaff get thirty days of paid leave per year.\n")
    (folder / "sub" / "security.md").write_text(
        "# Security\n\nRotate the VPN certificates every ninety days.\n"
    )
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7 this is not really a pdf")
    (folder / "blob.bin").write_bytes(bytes(range(256)) * 8)
    (folder / ".gitignore").write_text("ignored/\n")
    (folder / "ignored").mkdir()
    (folder / "ignored" / "secret.md").write_text("# Secret\n\nnot to be indexed")
    return folder


def test_ingest_search_stats_roundtrip(cli: CliRunner, tmp_path: Path) -> None:
    folder = write_notes(tmp_path)
    result = cli.invoke(app, ["ingest", str(folder), "-c", "team"])
    assert result.exit_code == 1, result.output  # two files fail
    assert "2 indexed" in result.output
    assert "EXTRACTION_FAILED" in result.output
    assert "UNSUPPORTED_TYPE" in result.output
    assert "secret" not in result.output

    again = cli.invoke(app, ["ingest", str(folder / "holidays.md"), "-c", "team"])
    assert again.exit_code == 0, again.output
    assert "1 unchanged" in again.output

    found = cli.invoke(app, ["search", "how much paid leave do staff get", "-c", "team", "--json", "-k", "2"])
    assert found.exit_code == 0, found.output
    hits = json.loads(found.output)
    assert hits[0]["meta"]["name"] == "holidays.md"
    assert hits[0]["score"] == 1.0
    assert hits[0]["meta"]["collection_name"] == "team"

    other = cli.invoke(app, ["search", "paid leave", "-c", "nobody", "--json"])
    assert json.loads(other.output) == [], "tenant filter: another collection sees nothing"

    stats = cli.invoke(app, ["stats"])
    assert stats.exit_code == 0, stats.output
    assert "team" in stats.output
    assert "all-MiniLM-L6-v2" in stats.output


def test_a_folder_that_cannot_be_listed_is_a_listed_failure(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write_notes(tmp_path)
    (folder / "broken.pdf").unlink()
    (folder / "blob.bin").unlink()
    FailingListing(monkeypatch).deny(folder.resolve() / "sub")
    result = cli.invoke(app, ["ingest", str(folder), "-c", "team"], env={"COLUMNS": "300"})

    assert result.exit_code == 1, result.output
    assert "1 indexed" in result.output
    assert f"{folder.as_posix()}/sub/" in result.output
    assert "cannot list the folder (Permission denied)" in result.output
    assert "EXTRACTION_FAILED" in result.output


RTF_CODES = (
    r"{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0\froman\fprq2\fcharset0 Liberation Serif;}}"
    r"{\colortbl;\red0\green0\blue0;}\pard\plain \s0\f0\fs24 Disk error codes\par "
    + "".join(
        r"\trowd\trql\trleft0\cellx4819\cellx9638"
        rf"\pard\plain \intbl\qr\f0\sa0\li0\fi0 {code}\cell\pard\plain \intbl\ql\f0 {meaning}\cell\row"
        for code, meaning in [
            ("83", "the disk is full"),
            ("84", "a bad sector was found"),
            ("85", "seek error"),
        ]
    )
    + r"\pard\par}"
)


def test_an_rtf_file_is_indexed_as_its_text_and_markup_is_never_indexed(
    cli: CliRunner, tmp_path: Path
) -> None:
    folder = tmp_path / "codes"
    folder.mkdir()
    (folder / "codes.txt").write_text(RTF_CODES)  # RTF by its content, whatever it is called
    (folder / "drawing.txt").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg">' + "<rect x='1' y='2'/>" * 300
    )
    (folder / "holidays.md").write_text("# Holidays\n\nStaff get thirty days of paid leave per year.\n")
    result = cli.invoke(app, ["ingest", str(folder), "-c", "ops"], env={"COLUMNS": "300"})
    assert result.exit_code == 1, result.output
    assert "2 indexed" in result.output
    assert "EXTRACTION_UNUSABLE" in result.output
    assert "drawing.txt" in result.output

    found = cli.invoke(app, ["search", "which code means a bad sector", "-c", "ops", "--json", "-k", "5"])
    hits = json.loads(found.output)
    assert hits[0]["meta"]["name"] == "codes.txt"
    assert "| 84 | a bad sector was found |" in hits[0]["content"]
    assert all("\\" not in hit["content"] for hit in hits)
    assert {hit["meta"]["name"] for hit in hits} == {"codes.txt", "holidays.md"}, "nothing of drawing.txt"


def test_bad_mode_and_missing_path_are_clear_errors(cli: CliRunner, tmp_path: Path) -> None:
    bad = cli.invoke(app, ["search", "x", "--mode", "fuzzy"], env={"COLUMNS": "300"})
    assert bad.exit_code == 2
    assert "valid values: dense, sparse, hybrid" in " ".join(bad.output.split())
    missing = cli.invoke(app, ["ingest", str(tmp_path / "nope")])
    assert missing.exit_code == 2
    assert "NOT_FOUND" in missing.output


#: the shared documents over 500 KB (a 10-K in HTML, an annual report, a manual and a 33-page paper
#: in PDF): their formats have smaller files here, and their extraction is proven by tests/extract/
#: test_shared_documents.py; embedding their thousands of chunks would only make the suite slower
LARGE_BYTES = 500_000


@pytest.mark.slow
@pytest.mark.shared
def test_ingest_shared_documents_indexes_every_supported_file(cli: CliRunner, tmp_path: Path) -> None:
    docs = tmp_path / "documents"
    docs.mkdir()
    every = [p for p in shared_path("documents").iterdir() if p.is_file()]
    for path in every:
        if path.stat().st_size <= LARGE_BYTES:
            shutil.copyfile(path, docs / path.name)  # a copy: folder ingest skips symlinks
    assert {p.suffix for p in docs.iterdir()} == {p.suffix for p in every}, "every format stays"
    result = cli.invoke(app, ["ingest", str(docs), "-c", "shared"])
    files = [p for p in docs.iterdir() if p.is_file()]
    failed_lines = [line for line in result.output.splitlines() if "_" in line and "│" in line]
    print(result.output)
    assert result.exit_code in (0, 1), result.output
    indexed = int(result.output.split(" indexed")[0].split()[-1])
    assert indexed >= len(files) - 3, "only scanned-without-OCR or unsupported files may fail"
    if result.exit_code == 1:
        assert failed_lines, "failures are listed with their codes"


@pytest.mark.slow  # > 5 s (the fast tier's bound)
def test_search_knobs_on_the_command_line(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ragd search`` runs the pipeline with the same knobs as the HTTP surfaces."""
    folder = tmp_path / "knobs"
    folder.mkdir()
    for _, name, data in FILES:
        (folder / name).write_bytes(data)
    monkeypatch.setenv("RAGD_CHUNKING__TOKEN_SIZE", "40")
    monkeypatch.setenv("RAGD_CHUNKING__TOKEN_OVERLAP", "0")
    assert cli.invoke(app, ["ingest", str(folder), "-c", "k"]).exit_code == 0

    def names(query: str, *options: str) -> list[str]:
        result = cli.invoke(app, ["search", query, "-c", "k", "--json", "-k", "3", *options])
        assert result.exit_code == 0, result.output
        return [h["meta"]["name"] for h in json.loads(result.output)]

    assert names(CAR, "--vector-weight", "0")[0] == "parking.md"
    assert names(CAR, "--vector-weight", "1")[0] == "engine.md"
    capped = names(HARBOUR, "--max-per-file", "1")
    assert len(set(capped)) == len(capped) == 3
    assert names(HARBOUR, "--diversity", "0.7").count("tariffs.md") < names(HARBOUR).count("tariffs.md")
    assert names(CAR, "--min-score", "1") == []
    assert set(names(HARBOUR, "--language", "de")) == {"hafen.md"}
    bad = cli.invoke(app, ["search", CAR, "--vector-weight", "2"], env={"COLUMNS": "300"})
    assert bad.exit_code == 2


@pytest.mark.slow
def test_search_filter_on_the_command_line(cli: CliRunner, tmp_path: Path) -> None:
    """``ragd search --filter`` runs the one filter language; a bad one is INVALID_FILTER, exit 2."""
    folder = tmp_path / "knobs"
    folder.mkdir()
    for _, name, data in FILES:
        (folder / name).write_bytes(data)
    assert cli.invoke(app, ["ingest", str(folder), "-c", "k"]).exit_code == 0

    def names(*options: str) -> list[str]:
        result = cli.invoke(app, ["search", HARBOUR, "-c", "k", "--json", "-k", "10", *options])
        assert result.exit_code == 0, result.output
        return [h["meta"]["name"] for h in json.loads(result.output)]

    everything = set(names())
    assert len(everything) > 2
    one = sorted(everything)[0]
    only = json.dumps({"must": [{"key": "name", "match": {"value": one}}]})
    assert set(names("--filter", only)) == {one}
    others = json.dumps({"must_not": [{"key": "name", "match": {"value": one}}]})
    assert set(names("--filter", others)) == everything - {one}
    assert names("--filter", json.dumps({"must": [{"key": "tags", "match": {"value": "none"}}]})) == []

    bad = cli.invoke(app, ["search", HARBOUR, "-c", "k", "--filter", '{"must": [{"key": "colour"}]}'])
    assert bad.exit_code == 2
    assert "INVALID_FILTER: --filter.must[0].key: unknown key 'colour'" in bad.stderr
    broken = cli.invoke(app, ["search", HARBOUR, "-c", "k", "--filter", "{must"])
    assert broken.exit_code == 2
    assert "INVALID_FILTER: --filter: not JSON" in broken.stderr
    evaluated = cli.invoke(app, ["eval", str(tmp_path), "--filter", '{"must": 1}'])
    assert evaluated.exit_code == 2
    assert "INVALID_FILTER: --filter.must: must be a list" in evaluated.stderr
