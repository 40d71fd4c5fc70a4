"""HTTP schemas of datasets' evaluation sets and eval runs (docs/knowledge-bases.md, "Evaluation sets")."""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ragd.api.schemas import KnobFields
from ragd.kb.evalset_run import MAX_K, EvalSpec
from ragd.kb.evalsets import MAX_ANSWER_CHARS, MAX_BATCH, MAX_REFS, Label
from ragd.kb.search import MAX_QUERY_CHARS
from ragd.kb_types import EvalSource
from ragd.settings import RetrievalSettings
from ragd.types import SearchMode


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LabelBody(_Body):
    """One labelled query: ``files`` (ids or names of the dataset's files) and/or ``chunks`` (chunk ids)."""

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    files: list[str] = Field(default_factory=list, max_length=MAX_REFS)
    chunks: list[str] = Field(default_factory=list, max_length=MAX_REFS)
    answer: str | None = Field(None, max_length=MAX_ANSWER_CHARS)

    def label(self) -> Label:
        return Label(self.query, tuple(self.files), tuple(self.chunks), self.answer)


class EvalSetAdd(_Body):
    """``POST …/evalset``: one labelled query (``query`` …) or many (``queries``)."""

    source: EvalSource = Field(
        EvalSource.API, description="api, import, sandbox (a hit marked as answering) or chat"
    )
    query: str | None = Field(None, min_length=1, max_length=MAX_QUERY_CHARS)
    files: list[str] = Field(default_factory=list, max_length=MAX_REFS)
    chunks: list[str] = Field(default_factory=list, max_length=MAX_REFS)
    answer: str | None = Field(None, max_length=MAX_ANSWER_CHARS)
    queries: list[LabelBody] | None = Field(None, min_length=1, max_length=MAX_BATCH)

    @field_validator("source", mode="before")
    @classmethod
    def _source(cls, v: object) -> object:
        return EvalSource.parse(str(v))

    @model_validator(mode="after")
    def _one_or_many(self) -> Self:
        if (self.query is None) == (self.queries is None):
            raise ValueError("give either query (one labelled query) or queries (many)")
        if self.queries is not None and (self.files or self.chunks or self.answer is not None):
            raise ValueError("with queries, files/chunks/answer go inside each query")
        return self

    def labels(self) -> list[Label]:
        if self.queries is not None:
            return [q.label() for q in self.queries]
        assert self.query is not None
        return [Label(self.query, tuple(self.files), tuple(self.chunks), self.answer)]


class EvalKnobs(_Body, KnobFields):
    """How an eval run searches: the dataset search's mode and knobs, and ``k`` hits judged."""

    mode: SearchMode = SearchMode.HYBRID
    k: int | None = Field(
        None,
        ge=1,
        le=MAX_K,
        description="hits judged per query (recall@k; nDCG, MRR at 10); default 10, a baseline's the run's",
    )

    @field_validator("mode", mode="before")
    @classmethod
    def _mode(cls, v: object) -> object:
        return SearchMode.parse(str(v))

    def spec(self, defaults: RetrievalSettings, k: int = 10) -> EvalSpec:
        return EvalSpec(self.mode, self.knobs(defaults), self.k or k)


class EvalBody(EvalKnobs):
    """``POST …/eval``: these knobs, and a ``baseline`` (``{}``: the dataset's current settings)."""

    baseline: EvalKnobs | None = Field(
        None,
        description="also run with these knobs and report wins/losses; {}: the dataset's current settings",
    )
    offset: int = Field(0, ge=0, description="run the set from this query (oldest first)")
    limit: int | None = Field(None, ge=1, description="at most this many queries (default: to the end)")
