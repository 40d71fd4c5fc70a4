"""The numbered context: sources in rank order, whole, within the token budget — and never none."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragd.answer.context import (
    ELLIPSIS,
    cap_chars,
    citation,
    fit_budget,
    number_hits,
    render_source,
    render_sources_list,
    truncate_tokens,
)
from ragd.chunk.approx_counter import ApproxTokenCounter
from ragd.chunk.base import TokenCounter
from ragd.embed.base import DenseEmbedder
from ragd.types import Citation, Hit

APPROX = ApproxTokenCounter()


def hit(i: int, text: str, **meta: object) -> Hit:
    return Hit(id=f"id-{i}", content=text, meta={"file_id": f"f{i}", "name": f"n{i}.md", **meta}, score=0.5)


def sources(texts: list[str]) -> list[Citation]:
    return number_hits(hit(i, t) for i, t in enumerate(texts))


@pytest.fixture(params=["approx", "model"])
def counter(request: pytest.FixtureRequest) -> TokenCounter:
    if request.param == "approx":
        return APPROX
    dense: DenseEmbedder = request.getfixturevalue("dense")  # the real model's tokenizer
    assert dense.tokenizer is not None
    return dense.tokenizer


def test_citation_reads_the_stored_meta() -> None:
    meta = {"source": "docs/a.md", "split_id": 3, "page": 0, "headers": ["A", "B"]}
    item = citation(hit(1, "text", **meta), 4)
    assert item == Citation(
        4, "id-1", "f1", "n1.md", "docs/a.md", "text", 0.5, split_id=3, page=0, headers=("A", "B")
    )
    bare = citation(Hit(id="x", content="t", meta={"split_id": True}, score=1), 1)
    assert (bare.name, bare.source, bare.split_id, bare.page, bare.headers) == ("", "", None, None, ())


def test_render_source_escapes_attributes_and_shows_pages_one_based() -> None:
    item = citation(hit(1, "body <b>", source='a "b".md', page=2, headers=["H1", "H2"], split_id=0), 1)
    rendered = render_source(item)
    assert rendered.startswith(
        '<document index="1" source="n1.md" path="a &quot;b&quot;.md" chunk="0" score="0.500"'
    )
    assert 'page="3" section="H1 &gt; H2"' in rendered
    assert rendered.endswith(">\nbody <b>\n</document>")


def test_whole_sources_are_kept_while_they_fit(counter: TokenCounter) -> None:
    texts = ["alpha beta gamma delta", "one two three four five six", "seven eight", "nine"]
    sizes = [counter.count(t) for t in texts]
    budget = sizes[0] + sizes[1] + sizes[2] - 1  # the third does not fit; the fourth would, but order rules
    kept = fit_budget(sources(texts), counter, budget)
    assert [c.text for c in kept] == texts[:2]
    assert [c.number for c in kept] == [1, 2]
    assert fit_budget(sources(texts), counter, sum(sizes)) == sources(texts)


def test_a_first_source_over_budget_is_cut_not_dropped(counter: TokenCounter) -> None:
    text = "The alpha protocol requires three approvals from the steering board, every time."
    [kept] = fit_budget(sources([text, "short"]), counter, 4)
    assert kept.text.endswith(ELLIPSIS)
    shown = kept.text.removesuffix(ELLIPSIS)
    assert text.startswith(shown)
    assert counter.count(shown) <= 4
    assert (kept.number, kept.chunk_id) == (1, "id-0")


def test_nothing_in_nothing_out() -> None:
    assert fit_budget([], APPROX, 10) == []


@given(
    st.lists(st.text(alphabet="abcdefgh ,.", min_size=1, max_size=60), min_size=1, max_size=8),
    st.integers(min_value=1, max_value=80),
)
def test_budget_properties(texts: list[str], budget: int) -> None:
    given_sources = sources(texts)
    kept = fit_budget(given_sources, APPROX, budget)
    assert kept  # never empty
    assert [c.number for c in kept] == list(range(1, len(kept) + 1))  # a prefix, in rank order
    cut = [c for c in kept if c.text != texts[c.number - 1]]
    if cut:  # only a lone first source is ever cut, to a prefix of itself
        assert kept == cut == kept[:1]
        assert texts[0].startswith(kept[0].text.removesuffix(ELLIPSIS))
    else:
        assert sum(APPROX.count(c.text) for c in kept) <= budget
        assert len(kept) == len(texts) or sum(APPROX.count(t) for t in texts[: len(kept) + 1]) > budget


def test_truncate_tokens_leaves_short_text_alone(counter: TokenCounter) -> None:
    assert truncate_tokens("short text", counter, 50) == "short text"
    assert truncate_tokens("one two three", counter, 0).endswith(ELLIPSIS)  # at least one token stays


# -- ragproxy's sources-list style and character cap (issue 34, seed 004) ------------------------------


def test_the_sources_list_numbers_each_source_with_its_title_and_url_then_its_text() -> None:
    page = citation(hit(1, "Ferries leave at nine.", source="https://example.org/ferries"), 1)
    report = citation(hit(2, "Revenue rose.", source="reports/q3.pdf", page=2), 2)
    bare = citation(hit(3, "Plain text."), 3)  # no source: the name alone
    assert render_sources_list([page, report, bare]) == (
        "[1] n1.md\nhttps://example.org/ferries\nFerries leave at nine.\n\n"
        "[2] n2.md, page 3\nreports/q3.pdf\nRevenue rose.\n\n"
        "[3] n3.md\nPlain text."
    )


def test_the_character_cap_cuts_long_sources_at_a_word_and_keeps_short_ones() -> None:
    long, short = sources(["alpha beta gamma delta epsilon zeta", "tiny"])
    capped = cap_chars([long, short], 20)
    assert capped[0].text == "alpha beta gamma" + ELLIPSIS
    assert capped[1] == short
    assert cap_chars([long], None) == [long]
    unbroken = sources(["x" * 50])[0]
    assert cap_chars([unbroken], 10)[0].text == "x" * 10 + ELLIPSIS


@given(st.text(min_size=0, max_size=300), st.integers(min_value=1, max_value=200))
def test_a_capped_text_never_exceeds_the_cap(text: str, cap: int) -> None:
    (item,) = cap_chars(sources([text]), cap)
    assert len(item.text) <= cap + len(ELLIPSIS)
    assert item.text == text or item.text.endswith(ELLIPSIS)
