"""Model-name routing: which requests get retrieval, over which collection, answered by which model."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ragd.answer.routing import RagTarget, rag_model_names, rag_target
from ragd.errors import InvalidRequest
from ragd.settings import ChatSettings

ALIASES = {"docs": "rag/kb", "handbook": "rag/hb/llama3.1:8b"}


@pytest.mark.parametrize(
    ("model", "collection", "expected"),
    [
        ("gpt-4o", None, None),  # not ours: passthrough
        ("rag", None, None),
        ("ragged/kb", None, None),
        ("rag/kb", None, RagTarget("kb", "default-m")),
        ("rag/kb/", None, RagTarget("kb", "default-m")),
        ("rag/kb/llama3", None, RagTarget("kb", "llama3")),
        ("rag/kb/meta-llama/Llama-3-8B", None, RagTarget("kb", "meta-llama/Llama-3-8B")),
        ("docs", None, RagTarget("kb", "default-m")),
        ("handbook", None, RagTarget("hb", "llama3.1:8b")),
        ("rag/kb/m", "other", RagTarget("other", "m")),  # the override wins
        ("gpt-4o", "kb", RagTarget("kb", "gpt-4o")),  # and turns retrieval on for any model
        ("rag//m", "kb", RagTarget("kb", "m")),
    ],
)
def test_rag_target(model: str, collection: str | None, expected: RagTarget | None) -> None:
    assert rag_target(model, aliases=ALIASES, default_model="default-m", collection=collection) == expected


@pytest.mark.parametrize(
    ("model", "collection", "message"),
    [
        ("rag/", None, "names no collection"),
        ("rag//m", None, "names no collection"),
        ("rag/bad name", None, "must match"),
        ("rag/../etc", None, "must match"),
        ("rag/" + "x" * 129, None, "must match"),
        ("gpt-4o", "a/b", "must match"),
        ("gpt-4o", "", "must match"),
    ],
)
def test_malformed_names_are_bad_requests(model: str, collection: str | None, message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        rag_target(model, aliases={}, default_model="m", collection=collection)


def test_without_a_default_model_the_name_must_say_which() -> None:
    with pytest.raises(InvalidRequest, match="names no upstream model") as caught:
        rag_target("rag/kb", aliases={}, default_model="")
    assert caught.value.hint is not None
    assert "RAGD_LLM__MODEL" in caught.value.hint
    assert rag_target("rag/kb/m", aliases={}, default_model="") == RagTarget("kb", "m")


def test_listed_names() -> None:
    listed = rag_model_names(
        ["kb", "hb", "bad name"], aliases=ALIASES, default_model="d", upstream_models=["x"]
    )
    assert listed == ["docs", "handbook", "rag/kb", "rag/hb"]
    crossed = rag_model_names(["kb"], aliases={}, default_model="", upstream_models=["x", "y"])
    assert crossed == ["rag/kb/x", "rag/kb/y"]
    many = rag_model_names(
        [f"c{i}" for i in range(50)], aliases={}, default_model="d", upstream_models=[], limit=7
    )
    assert many == [f"rag/c{i}" for i in range(7)]
    for name in listed + crossed:  # everything listed routes back to retrieval
        assert rag_target(name, aliases=ALIASES, default_model="d") is not None


def test_aliases_must_name_rag_targets() -> None:
    assert ChatSettings(models={"docs": "rag/kb/m"}).models == {"docs": "rag/kb/m"}
    for target in ("gpt-4o", "rag/", "kb"):
        with pytest.raises(ValidationError, match="must map to"):
            ChatSettings(models={"docs": target})
