"""The markdown strategy: heading breadcrumbs, fences, setext headings, merging, long sections."""

from __future__ import annotations

from ragd.types import Chunk, ChunkStrategy, Document
from tests.chunk.chunk_support import Setup, WhitespaceCounter, check_invariants


def words(label: str, n: int) -> str:
    return " ".join(f"{label}{i}" for i in range(n)) + "."


def chunk(text: str, *, size: int = 40, overlap: int = 0, max_tokens: int = 256) -> list[Chunk]:
    setup = Setup(
        ChunkStrategy.MARKDOWN, WhitespaceCounter(), max_tokens, token_size=size, token_overlap=overlap
    )
    document = Document(text=text, extractor="test")
    chunks = setup.build().chunk(document)
    check_invariants(setup, document, chunks)
    return chunks


def by_first_line(chunks: list[Chunk]) -> dict[str, tuple[str, ...]]:
    return {c.text.split("\n", 1)[0]: c.headers for c in chunks}


def test_nested_headings_give_breadcrumbs_without_repeating_the_chunks_own_heading() -> None:
    text = "\n\n".join(
        [
            "# Guide",
            words("g", 20),
            "## Install",
            words("i", 20),
            "### On Linux",
            words("l", 20),
            "## Usage",
            words("u", 20),
            "# Appendix",
            words("a", 20),
        ]
    )
    headers = by_first_line(chunk(text))
    assert headers == {
        "# Guide": (),
        "## Install": ("Guide",),
        "### On Linux": ("Guide", "Install"),
        "## Usage": ("Guide",),
        "# Appendix": (),
    }


def test_pieces_of_a_long_section_carry_its_heading() -> None:
    text = "# Top\n\n## Long\n\n" + "\n\n".join(words(f"p{k}x", 15) for k in range(6))
    chunks = chunk(text, size=40, overlap=10)
    long_pieces = [c for c in chunks if "p0x0" in c.text or c.text.startswith("p")]
    assert len(long_pieces) >= 3
    assert long_pieces[0].headers == ("Top",)
    assert all(c.headers == ("Top", "Long") for c in long_pieces[1:])
    assert all(c.embedding_text().startswith("Top > Long\n") for c in long_pieces[1:])


def test_long_sections_are_cut_at_paragraphs_when_they_fit() -> None:
    paragraphs = [words(f"q{k}x", 12) for k in range(8)]
    text = "## Body\n\n" + "\n\n".join(paragraphs)
    chunks = chunk(text, size=40)
    for c in chunks:
        assert c.text.endswith("."), f"chunk ends mid-paragraph: {c.text[-30:]!r}"


def test_hash_lines_inside_code_fences_are_not_headings() -> None:
    text = (
        "# Real\n\n"
        + words("r", 20)
        + "\n\n```python\n# just a comment\n## not a heading either\nx = 1\n```\n\n"
        + "~~~\n# tilde fenced\n~~~\n\n"
        + words("s", 20)
    )
    chunks = chunk(text, size=200)
    assert all(h == "Real" for c in chunks for h in c.headers)


def test_setext_headings_open_sections() -> None:
    text = "Title\n=====\n\n" + words("t", 20) + "\n\nPart\n----\n\n" + words("p", 20)
    headers = by_first_line(chunk(text))
    assert headers == {"Title": (), "Part": ("Title",)}


def test_thematic_break_after_a_blank_line_is_not_a_heading() -> None:
    text = "# Top\n\n" + words("a", 20) + "\n\n---\n\n" + words("b", 20)
    chunks = chunk(text, size=200)
    assert len(chunks) == 1
    assert chunks[0].headers == ()


def test_tiny_sibling_sections_merge_but_not_across_parents() -> None:
    text = "# A\n\n## B1\n\nshort b1.\n\n## B2\n\nshort b2.\n\n### C\n\nshort c.\n\n# D\n\n" + words("d", 30)
    chunks = chunk(text, size=40)
    first = chunks[0]
    assert "## B1" in first.text
    assert "## B2" in first.text
    assert first.headers == ()
    assert all("# D" not in c.text for c in chunks if "short b1" in c.text)
    assert by_first_line(chunks)["# D"] == ()


def test_a_tiny_deep_section_does_not_swallow_a_shallower_one() -> None:
    text = "# A\n\n## B\n\n" + words("b", 30) + "\n\n### Deep\n\nshort.\n\n## Mid\n\n" + words("m", 30)
    headers = by_first_line(chunk(text, size=40))
    assert headers["### Deep"] == ("A", "B")
    assert headers["## Mid"] == ("A",)


def test_closing_hashes_and_skipped_levels() -> None:
    text = (
        "# A #\n\n" + words("a", 20) + "\n\n### C ###\n\n" + words("c", 20) + "\n\n## B\n\n" + words("b", 20)
    )
    headers = by_first_line(chunk(text))
    assert headers == {"# A #": (), "### C ###": ("A",), "## B": ("A",)}


def test_overlong_breadcrumb_is_shortened_to_fit_the_window() -> None:
    title = " ".join(f"w{i}" for i in range(60))
    text = f"# {title}\n\n## Sub\n\n" + "\n\n".join(words(f"z{k}x", 20) for k in range(5))
    chunks = chunk(text, size=400, max_tokens=64)
    deep = [c for c in chunks if c.headers and c.headers[-1] == "Sub"]
    assert deep, "the outer heading is dropped first, keeping the inner one"
    assert all(len(c.headers) == 1 for c in deep)
    first = chunks[0]
    assert first.text.startswith("# w0")
    assert all(WhitespaceCounter().count(" > ".join(c.headers)) <= 31 for c in chunks)


def test_preamble_before_the_first_heading_has_no_breadcrumb() -> None:
    text = words("pre", 30) + "\n\n# H\n\n" + words("h", 30)
    chunks = chunk(text)
    assert [(c.text.split()[0], c.headers) for c in chunks] == [("pre0", ()), ("#", ())]
