"""The multimodal model as an OpenAI-compatible chat-completions endpoint: one image per call.

    POST {RAGD_VISION__API_BASE_URL}/chat/completions
    {"model": ..., "temperature": 0, "max_tokens": ...,
     "messages": [{"role": "system", "content": <profile's system prompt>},
                  {"role": "user", "content": [{"type": "text", "text": <profile's user prompt>},
                                               ({"type": "text", "text": <context>},)
                                               {"type": "image_url",
                                                "image_url": {"url": "data:image/png;base64,..."}}]}]}

Synchronous (extraction runs in worker processes, :mod:`ragd.extract.isolation`) over one
``httpx.Client``.  Each call is bounded by ``RAGD_VISION__TIMEOUT_S`` and by the file's
:class:`~ragd.vision.budget.Deadline`, and waits for a slot of the process's
:class:`~ragd.vision.budget.CallRate`.  429 and 503 are retried (``RAGD_VISION__RETRIES``, with
backoff or the server's ``Retry-After``) while the deadline allows; every other failure (no
connection, a timeout, another status, an answer that is not chat-completions JSON) is
:class:`VisionUnavailable` at once.  An answer that stopped at ``max_tokens``
(``finish_reason: "length"``) is :class:`VisionOutputTooLong`: the file fails, it is never indexed
cut.  Answers are cached by image hash (:mod:`ragd.vision.cache`) before they are returned.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import time
from typing import Any

import httpx

from ragd.errors import VisionOutputTooLong, VisionUnavailable
from ragd.remote_json import Backoff, display_url, parse_retry_after
from ragd.settings import VisionSettings
from ragd.vision.budget import CallRate, Deadline
from ragd.vision.cache import AnswerCache, answer_key
from ragd.vision.profiles import Profile

logger = logging.getLogger(__name__)

_RETRY_STATUSES = frozenset({429, 503})
_BACKOFF = Backoff(base_s=1.0, max_s=30.0, max_retry_after_s=60.0)
_CONNECT_S = 10.0


class VisionClient:
    """Asks the model about one image at a time; answers come from the cache when they can."""

    def __init__(
        self,
        settings: VisionSettings,
        *,
        cache: AnswerCache,
        rate: CallRate | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._settings = settings
        self._cache = cache
        self._rate = rate or CallRate(settings.calls_per_minute)
        self._url = f"{settings.api_base_url.rstrip('/')}/chat/completions"
        headers = {"Content-Type": "application/json"}
        if settings.api_key is not None:
            headers["Authorization"] = f"Bearer {settings.api_key.get_secret_value()}"
        self._http = httpx.Client(headers=headers, transport=transport, follow_redirects=False)
        #: calls sent and answers read from the cache, for this client's lifetime
        self.calls = 0
        self.cached = 0

    @property
    def model(self) -> str:
        return self._settings.model

    def ask(
        self,
        image: bytes,
        profile: Profile,
        *,
        deadline: Deadline,
        context: str = "",
        mime: str = "image/png",
    ) -> str:
        """The model's answer (stripped; may be empty) about ``image`` under ``profile``."""
        digest = hashlib.sha256(image).hexdigest()
        key = answer_key(
            digest,
            model=self._settings.model,
            profile=profile.name,
            prompt_version=profile.version,
            language=self._settings.language_hint,
            context=context,
        )
        if (hit := self._cache.get(key)) is not None:
            self.cached += 1
            logger.debug("vision %s of image %s: cached", profile.name, digest[:12])
            return hit
        started = time.monotonic()
        text = self._call(self._body(image, mime, profile, context), deadline)
        self.calls += 1
        logger.debug(
            "vision %s of image %s: %d characters in %.2f s",
            profile.name,
            digest[:12],
            len(text),
            time.monotonic() - started,
        )
        self._cache.put(key, text)
        return text

    def close(self) -> None:
        self._http.close()

    def _body(self, image: bytes, mime: str, profile: Profile, context: str) -> dict[str, Any]:
        parts: list[dict[str, Any]] = [{"type": "text", "text": profile.user}]
        if context:
            parts.append({"type": "text", "text": context})
        data_uri = f"data:{mime};base64,{base64.b64encode(image).decode('ascii')}"
        parts.append({"type": "image_url", "image_url": {"url": data_uri}})
        return {
            "model": self._settings.model,
            "temperature": 0,
            "max_tokens": self._settings.max_tokens,
            "messages": [
                {"role": "system", "content": profile.system_prompt(self._settings.language_hint)},
                {"role": "user", "content": parts},
            ],
        }

    def _call(self, body: dict[str, Any], deadline: Deadline) -> str:
        attempt = 0
        while True:
            attempt += 1
            self._rate.wait(deadline)
            deadline.check()
            response = self._post(body, deadline)
            if response.status_code in _RETRY_STATUSES and attempt <= self._settings.retries:
                pause = _BACKOFF.delay(attempt, parse_retry_after(response.headers.get("retry-after")))
                if pause < deadline.left():
                    logger.info("vision endpoint answered %d; again in %.1f s", response.status_code, pause)
                    time.sleep(pause)
                    continue
            if response.status_code != 200:
                raise self._refused(response, deadline.source)
            return _answer(response, deadline.source, self._settings.max_tokens)

    def _post(self, body: dict[str, Any], deadline: Deadline) -> httpx.Response:
        seconds = max(min(self._settings.timeout_s, deadline.left()), 0.001)
        timeout = httpx.Timeout(seconds, connect=min(_CONNECT_S, seconds))
        try:
            return self._http.post(self._url, json=body, timeout=timeout)
        except httpx.TimeoutException as exc:
            if deadline.left() <= 0:
                raise deadline.expired() from exc
            raise VisionUnavailable(
                f"the vision model at {display_url(self._url)} did not answer about {deadline.source!r} "
                f"within {seconds:g} s",
                hint="raise RAGD_VISION__TIMEOUT_S, or check the endpoint's load",
            ) from exc
        except httpx.HTTPError as exc:
            raise VisionUnavailable(
                f"the vision model at {display_url(self._url)} cannot be reached "
                f"({type(exc).__name__}) while reading {deadline.source!r}",
                hint="check RAGD_VISION__API_BASE_URL and that the endpoint is up",
            ) from exc

    def _refused(self, response: httpx.Response, source: str) -> VisionUnavailable:
        hint = {
            401: "check RAGD_VISION__API_KEY",
            403: "check RAGD_VISION__API_KEY",
            404: "check RAGD_VISION__API_BASE_URL (it ends with /v1) and RAGD_VISION__MODEL",
        }.get(response.status_code, "check the endpoint's logs; RAGD_VISION__MODEL must take images")
        return VisionUnavailable(
            f"the vision model at {display_url(self._url)} answered HTTP {response.status_code} while "
            f"reading {source!r}: {_error_text(response)}",
            hint=hint,
        )


def _answer(response: httpx.Response, source: str, max_tokens: int) -> str:
    try:
        choice = response.json()["choices"][0]
        content = choice["message"]["content"]
        finish = choice.get("finish_reason")
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise VisionUnavailable(
            f"the vision model's answer about {source!r} is not a chat completion",
            hint="RAGD_VISION__API_BASE_URL must be an OpenAI-compatible endpoint (…/v1)",
        ) from exc
    if finish == "length":
        raise VisionOutputTooLong(
            f"the vision model's answer about a page of {source!r} reached the {max_tokens}-token cap "
            "and would be cut; the file was not indexed",
            hint="raise RAGD_VISION__MAX_TOKENS (within the model's context), or use a shorter profile",
        )
    return _content_text(content).strip()


def _content_text(content: object) -> str:
    """``message.content`` as text: a string, or a list of text parts (some servers), or null."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _error_text(response: httpx.Response) -> str:
    """The endpoint's own error message, short and on one line."""
    try:
        body = response.json()
    except ValueError:
        body = None
    message: object = None
    if isinstance(body, dict):
        error = body.get("error")
        message = error.get("message") if isinstance(error, dict) else error or body.get("detail")
    text = message if isinstance(message, str) else response.text
    return " ".join(text.split())[:200] or "no message"
