"""A :class:`~ragd.rerank.base.Reranker` over a remote rerank endpoint (Cohere-style or TEI).

Build it with the synchronous :meth:`HttpReranker.from_settings`, like the local cross-encoder
(it makes no request: the first goes out with the first :meth:`~HttpReranker.rerank`); close it
with :meth:`~HttpReranker.aclose`.

* Passages go out in batches of ``rerank.batch_size`` documents, **sent concurrently**, so
  ``rerank.timeout_s`` (which bounds one request including its retries) also bounds the whole
  call.  Each batch's results are mapped back to the passages' order.
* Retries, backoff and error wording are :mod:`ragd.remote_json`'s: connect errors, timeouts,
  408/429/5xx are retried ``rerank.retries`` times; any other 4xx fails at once.  Every failure
  is a :class:`~ragd.errors.RerankFailed`; the API key (sent as ``Authorization: Bearer``) never
  appears in a message or a log line.
* Scores: kept as they are when they all lie in [0, 1]; when a server returns logits (any score of
  the call outside [0, 1]) every score of the call goes through the logistic sigmoid, and so do
  all later calls of this reranker (the server is known to send logits).  A document the server
  left out of its results scores **0.0** (a server that leaves documents out judged them not worth
  returning); a reply that scores none of a batch's documents, an index out of range or
  repeated, or a non-numeric / non-finite score is a RerankFailed.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Sequence

from ragd.errors import ConfigurationError, RerankFailed
from ragd.remote_json import Backoff, ErrorTerms, RemoteJsonClient, display_url
from ragd.rerank.scores import outside_unit_interval, unit_scores
from ragd.rerank.wire_formats import CohereWire, RerankWire, TeiWire
from ragd.settings import RerankSettings

logger = logging.getLogger(__name__)

RERANK_ERRORS = ErrorTerms(
    group="rerank",
    error=RerankFailed,
    hints={
        400: "the server rejected the request; check rerank.model and rerank.api",
        401: "check rerank.api_key",
        403: "check rerank.api_key and its permissions",
        404: "check rerank.base_url and rerank.api (cohere: POST /v1/rerank, tei: POST /rerank)",
        413: "lower rerank.batch_size (TEI refuses batches over its --max-client-batch-size, 32 by default)",
        422: "the server could not process the input; check rerank.model and rerank.batch_size",
    },
)


class HttpReranker:
    """Scores (query, passage) pairs on a remote server; build with :meth:`from_settings`."""

    def __init__(self, client: RemoteJsonClient, wire: RerankWire, *, name: str, batch_size: int) -> None:
        self.name = name
        self._client = client
        self._wire = wire
        self._batch_size = batch_size
        self._logits = False  # set once the server has been seen to return logits

    @classmethod
    def from_settings(cls, settings: RerankSettings, *, backoff: Backoff | None = None) -> HttpReranker:
        """Check the settings and open the HTTP client (no request yet).  ConfigurationError if unusable."""
        base_url = (settings.base_url or "").strip()
        if not base_url:
            raise ConfigurationError(
                "rerank.base_url is required when rerank.provider is 'remote'",
                hint="e.g. RAGD_RERANK__BASE_URL=http://localhost:8080",
            )
        model = settings.model.strip()
        if settings.api == "cohere" and not model:
            raise ConfigurationError(
                "rerank.model must name the server's model when rerank.api is 'cohere'",
                hint="e.g. RAGD_RERANK__MODEL=BAAI/bge-reranker-base",
            )
        api_key = settings.api_key.get_secret_value() if settings.api_key else None
        client = RemoteJsonClient(
            base_url,
            api_key=api_key,
            timeout_s=settings.timeout_s,
            retries=settings.retries,
            terms=RERANK_ERRORS,
            backoff=backoff,
        )
        wire: RerankWire = TeiWire()
        if settings.api == "cohere":
            wire = CohereWire.for_base_url(model, client.base_url.path)
        label = model or display_url(client.base_url).rstrip("/")
        return cls(client, wire, name=f"remote:{label}", batch_size=settings.batch_size)

    async def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score in [0, 1] per passage, in the passages' order; RerankFailed on any failure."""
        if not passages:
            return []
        starts = range(0, len(passages), self._batch_size)
        batches = [(start, passages[start : start + self._batch_size]) for start in starts]
        if len(batches) == 1:
            raw = await self._fetch(query, *batches[0])
        else:
            raw = await self._fetch_concurrently(query, batches)
        return self._unit_scores(raw, len(passages))

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _fetch_concurrently(
        self, query: str, batches: list[tuple[int, Sequence[str]]]
    ) -> dict[int, float]:
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(self._fetch(query, start, batch)) for start, batch in batches]
        except* RerankFailed as failures:  # the first failure cancelled the other batches
            raise failures.exceptions[0]  # noqa: B904 - keeps the failure's own cause
        scores: dict[int, float] = {}
        for task in tasks:
            scores.update(task.result())
        return scores

    async def _fetch(self, query: str, start: int, documents: Sequence[str]) -> dict[int, float]:
        """One request; ``{global index: raw score}`` for the documents the server scored."""
        payload = await self._client.post_json(self._wire.path, self._wire.request(query, documents))
        source = self._client.endpoint(self._wire.path)
        try:
            scores = self._wire.scores(payload, len(documents))
        except ValueError as exc:
            raise RerankFailed(f"{source} returned an unexpected response: {exc}") from exc
        if not scores:
            raise RerankFailed(f"{source} scored none of the {len(documents)} document(s) sent")
        if len(scores) < len(documents):
            logger.debug(
                "%s left %d of %d document(s) unscored", source, len(documents) - len(scores), len(documents)
            )
        return {start + index: score for index, score in scores.items()}

    def _unit_scores(self, raw: dict[int, float], count: int) -> list[float]:
        indices = sorted(raw)
        values = [raw[i] for i in indices]
        if not all(math.isfinite(v) for v in values):
            raise RerankFailed(f"reranker {self.name} returned a score that is not a finite number")
        if not self._logits and outside_unit_interval(values):
            logger.info("reranker %s returns scores outside [0, 1]; reading them as logits", self.name)
            self._logits = True
        scaled = unit_scores(values, logits=self._logits)
        scores = [0.0] * count
        for index, score in zip(indices, scaled, strict=True):
            scores[index] = score
        return scores
