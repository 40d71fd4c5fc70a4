"""Wire shapes of the model endpoints: OpenAI's embeddings, TEI's ``/embed``, ragproxy's
``/ragproxy/embed``, Cohere's rerank.

Edge models only: unknown fields are ignored (clients send ``user`` and vendor extras), and the
limits and name lookups are the domain's (:mod:`ragd.embed.serving`, :mod:`ragd.rerank.serving`),
so an over-limit request is a 400 that names the limit rather than a schema 422.  Responses are
built as plain JSON here: a float vector is a JSON array, or with ``encoding_format: "base64"`` its
little-endian float32 bytes in base64 (what the ``openai`` SDKs decode).
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ragd.embed.serving import Embedded, ServedModel
from ragd.errors import InvalidRequest
from ragd.rerank.serving import Ranked
from ragd.types import DenseVector

_TOKEN_ARRAYS = "token arrays are not accepted: ragd tokenizes itself; send the text as a string"


class EmbeddingsBody(BaseModel):
    """``POST /v1/embeddings``: OpenAI's request, plus ``input_type``."""

    model_config = ConfigDict(extra="ignore")
    input: str | list[str] | list[int] | list[list[int]] = Field(
        description="a string or a list of strings (token arrays are refused)"
    )
    model: str | None = Field(
        None,
        max_length=512,
        description="a dense model: 'default' or 'ragd', a RAGD_EMBEDDERS name, or the model's id; "
        "unset: the default one",
    )
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(None, description="must equal the model's dimension when given")
    input_type: str | None = Field(
        None,
        max_length=64,
        description="ragd extension: 'query' (the model's query prefix) or 'document' (the default: the "
        "document prefix, as the index stores chunks)",
    )
    user: str | None = Field(None, max_length=512, description="accepted and ignored")

    def texts(self) -> list[str]:
        if isinstance(self.input, str):
            return unicode_texts([self.input])
        if any(isinstance(item, int | list) for item in self.input):
            raise InvalidRequest(_TOKEN_ARRAYS)
        return unicode_texts([str(item) for item in self.input])


class TeiEmbedBody(BaseModel):
    """``POST /embed``: Text Embeddings Inference's request."""

    model_config = ConfigDict(extra="ignore")
    inputs: str | list[str] | list[int] | list[list[int]] = Field(
        description="a string or a list of strings; a string also answers a list of one vector"
    )
    normalize: bool = Field(True, description="ragd's vectors are always L2-normalised: false is refused")
    truncate: bool | None = Field(
        None, description="accepted: ragd always cuts a text to the model's window, as its index does"
    )
    truncation_direction: str | None = Field(None, max_length=16, description="'right' only")
    prompt_name: str | None = Field(
        None, max_length=64, description="'query' (the query prefix) or 'document'/'passage' (the default)"
    )
    dimensions: int | None = Field(None, description="must equal the model's dimension when given")

    def texts(self) -> list[str]:
        if isinstance(self.inputs, str):
            return unicode_texts([self.inputs])
        if any(isinstance(item, int | list) for item in self.inputs):
            raise InvalidRequest(_TOKEN_ARRAYS)
        return unicode_texts([str(item) for item in self.inputs])

    def check(self) -> None:
        if not self.normalize:
            raise InvalidRequest("normalize: false is not supported: ragd's vectors are L2-normalised")
        if self.truncation_direction is not None and self.truncation_direction.lower() != "right":
            raise InvalidRequest("truncation_direction: ragd cuts long texts on the right only")


class RagproxyEmbedBody(BaseModel):
    """``POST /ragproxy/embed``: ragproxy's embedder request, ``inputs`` or ``texts``."""

    model_config = ConfigDict(extra="ignore")
    inputs: str | list[str] | None = Field(None, description="the texts (or 'texts'; one of the two)")
    texts: str | list[str] | None = Field(None, description="the texts (or 'inputs'; one of the two)")
    normalize: bool = Field(True, description="ragd's vectors are always L2-normalised: false is refused")
    input_type: str | None = Field(
        None,
        max_length=64,
        description="ragd extension: 'query' (the query prefix) or 'document' (the default)",
    )

    def text_list(self) -> list[str]:
        if not self.normalize:
            raise InvalidRequest("normalize: false is not supported: ragd's vectors are L2-normalised")
        if (self.inputs is None) == (self.texts is None):
            raise InvalidRequest("give the texts as 'inputs' or as 'texts' (one of the two)")
        given = self.inputs if self.inputs is not None else self.texts
        return unicode_texts([given] if isinstance(given, str) else list(given or []))


def ragproxy_embed_response(embedded: Embedded, dimension: int, normalize: bool) -> dict[str, Any]:
    """ragproxy's answer: ``{"vectors": [[…]], "normalize": …, "dim": n}``."""
    return {"vectors": [v.tolist() for v in embedded.vectors], "normalize": normalize, "dim": dimension}


class RerankDocument(BaseModel):
    model_config = ConfigDict(extra="ignore")
    text: str


class RerankBody(BaseModel):
    """``POST /v1/rerank``: Cohere's request (Open WebUI's, Jina's…), or TEI's ``texts``."""

    model_config = ConfigDict(extra="ignore")
    model: str | None = Field(
        None, max_length=512, description="'default' or 'ragd', a RAGD_RERANKERS name, or its model"
    )
    query: str
    documents: list[str | RerankDocument] | None = None
    texts: list[str] | None = Field(None, description="TEI's name for documents")
    top_n: int | None = Field(None, ge=1, description="the best this many (default: all)")
    return_documents: bool = False
    return_text: bool = Field(False, description="TEI's name for return_documents")

    def document_texts(self) -> list[str]:
        if self.documents is not None and self.texts is not None:
            raise InvalidRequest("send documents or texts, not both")
        given = self.documents if self.documents is not None else self.texts or []
        unicode_texts([self.query], "the query")
        return unicode_texts([item if isinstance(item, str) else item.text for item in given], "document")


def unicode_texts(texts: list[str], what: str = "input") -> list[str]:
    """``texts``, unless one holds a lone surrogate (a JSON ``\\ud800`` escape) no tokenizer reads."""
    for index, text in enumerate(texts):
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                where = what if len(texts) == 1 else f"{what} {index}"
                raise InvalidRequest(f"{where} is not valid Unicode (a lone surrogate)") from None
    return texts


def check_dimensions(requested: int | None, dimension: int, model: str) -> None:
    if requested is not None and requested != dimension:
        raise InvalidRequest(
            f"dimensions={requested}: the model {model[:64]!r} makes {dimension}-dimensional vectors",
            hint="omit dimensions, or ask for the model's own",
        )


def encode(vector: DenseVector, encoding_format: str) -> list[float] | str:
    if encoding_format == "base64":
        return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")
    return vector.tolist()  # type: ignore[no-any-return]


def embeddings_response(embedded: Embedded, model: str, encoding_format: str) -> dict[str, Any]:
    data = [
        {"object": "embedding", "index": i, "embedding": encode(v, encoding_format)}
        for i, v in enumerate(embedded.vectors)
    ]
    usage = {"prompt_tokens": embedded.tokens, "total_tokens": embedded.tokens}
    return {"object": "list", "data": data, "model": model, "usage": usage}


def rerank_response(
    ranked: Sequence[Ranked], documents: Sequence[str], model: str, *, top_n: int | None, with_text: bool
) -> dict[str, Any]:
    results = []
    for item in ranked[:top_n]:
        result: dict[str, Any] = {"index": item.index, "relevance_score": item.score}
        if with_text:
            result["document"] = {"text": documents[item.index]}
        results.append(result)
    return {"id": str(uuid.uuid4()), "results": results, "model": model}


def model_object(model_id: str, model: ServedModel) -> dict[str, Any]:
    """OpenAI's model object, with ragd's facts about the model under ``ragd``."""
    spec = model.embedder.spec
    facts = {
        "name": model.name,
        "kind": "embedding",
        "model": spec.model,
        "dimension": spec.dimension,
        "max_tokens": spec.max_tokens,
    }
    return {"id": model_id, "object": "model", "created": 0, "owned_by": "ragd", "ragd": facts}
