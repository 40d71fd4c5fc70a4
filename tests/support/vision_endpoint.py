"""A multimodal model on loopback: OpenAI's ``POST /v1/chat/completions`` with ``image_url`` parts,
answering from the pictures it receives.

It runs on :class:`tests.support.scripted_http.ScriptedServer` (real sockets, the real wire
format) and decodes every ``data:image/...;base64,`` part with Pillow, so a test proves which
bytes reached the model:

    with VisionEndpoint() as model:                      # or the ``vision_endpoint`` fixture
        settings = VisionSettings(api_base_url=model.url, model="scripted-vl")
        ... extract ...
        assert model.calls[0].images[0].sha256 == sha256(expected_png)
        assert model.calls[0].profile == "general"

How it answers (the first rule that gives an answer wins):

1. :meth:`VisionEndpoint.answer` — a table of image sha256 -> answer text;
2. rules added with :meth:`VisionEndpoint.rule` (``call -> str | None``);
3. the default: :func:`describe` — a deterministic sentence naming the image's sha256 prefix and
   pixel size (a Mermaid graph of one node for the diagram profiles); :meth:`VisionEndpoint.use_ocr`
   makes Tesseract read the picture instead (:func:`ocr_rule`), so the "model" really reads it.

Faults, for the next ``times`` calls (None: every call until :meth:`heal`): :meth:`fail` (an HTTP
status with an OpenAI error body), :meth:`hang` (no answer for that long: the client's timeout),
:meth:`drop` (the connection closes), :meth:`garbage` (200 with JSON that is not a chat
completion), :meth:`cut` (an answer with ``finish_reason: "length"``).
Every request is recorded (:attr:`calls`), faults included.  Closing the server makes the endpoint
unreachable (connection refused).
"""

from __future__ import annotations

import base64
import hashlib
import io
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import pytest
from PIL import Image

from ragd.vision.profiles import PROFILE_NAMES, profile
from tests.support.scripted_http import RecordedRequest, Reply, ScriptedServer

PATH = "/v1/chat/completions"
MODEL = "scripted-vl"


@dataclass(frozen=True, slots=True)
class SeenImage:
    """One picture of a call: its bytes' sha256, its MIME type and its size in pixels."""

    sha256: str
    mime: str
    width: int
    height: int
    data: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class VisionCall:
    """One chat-completions request as the model saw it."""

    model: str
    max_tokens: int | None
    system: str
    texts: tuple[str, ...]  # the user message's text parts, in order
    images: tuple[SeenImage, ...]
    body: dict[str, Any] = field(repr=False)

    @property
    def profile(self) -> str | None:
        """The ragd prompt profile whose user prompt opens the message, if any."""
        for name in PROFILE_NAMES:
            if self.texts and self.texts[0] == profile(name).user:
                return name
        return None

    @property
    def image(self) -> SeenImage:
        [only] = self.images
        return only


Rule = Callable[[VisionCall], "str | None"]


def describe(call: VisionCall) -> str:
    """The default answer: the picture's hash prefix and size, in words (or as a one-node graph)."""
    image = call.image
    if call.profile in ("diagram", "diagram-topology"):
        return f'```mermaid\nflowchart TD\n  n1["picture {image.sha256[:12]}"]\n```'
    return f"Picture {image.sha256[:12]} of {image.width} x {image.height} pixels."


def ocr_rule(call: VisionCall) -> str | None:
    """Tesseract's words of the picture (its text as one line per line of the picture)."""
    program = shutil.which("tesseract")
    if program is None:
        pytest.skip("the OCR rule needs Tesseract (apt-get install tesseract-ocr)")
    done = subprocess.run(
        [program, "stdin", "stdout", "--psm", "6"],
        input=call.image.data,
        capture_output=True,
        check=True,
        timeout=60,
    )
    return done.stdout.decode("utf-8", "replace").strip()


@dataclass
class _Fault:
    reply: Callable[[], Reply] | None  # None: answer, but cut at max_tokens
    times: int | None


class VisionEndpoint:
    """The endpoint; :attr:`url` is the base URL ragd takes (``…/v1``)."""

    def __init__(self) -> None:
        self._server = ScriptedServer()
        self._lock = threading.Lock()
        self._answers: dict[str, str] = {}
        self._rules: list[Rule] = []
        self._default: Rule = describe
        self._faults: list[_Fault] = []
        self.calls: list[VisionCall] = []

    # -- lifecycle -----------------------------------------------------------------
    def start(self) -> VisionEndpoint:
        self._server.on("POST", PATH, self._handle)
        self._server.start()
        return self

    def close(self) -> None:
        self._server.close()

    def __enter__(self) -> VisionEndpoint:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def url(self) -> str:
        return f"{self._server.url}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """The raw HTTP requests (headers included)."""
        return self._server.requests_to("POST", PATH)

    # -- answers -------------------------------------------------------------------
    def answer(self, sha256: str, text: str) -> VisionEndpoint:
        """Answer ``text`` about the picture whose bytes hash to ``sha256``."""
        with self._lock:
            self._answers[sha256] = text
        return self

    def rule(self, rule: Rule) -> VisionEndpoint:
        """Answer with ``rule(call)`` when it returns text (rules added first are asked first)."""
        with self._lock:
            self._rules.append(rule)
        return self

    def use_ocr(self) -> VisionEndpoint:
        """Read every picture with Tesseract instead of describing it."""
        self._default = ocr_rule
        return self

    # -- faults --------------------------------------------------------------------
    def fail(
        self, status: int = 500, *, times: int | None = 1, retry_after: str | None = None
    ) -> VisionEndpoint:
        headers = {"Retry-After": retry_after} if retry_after is not None else None
        return self._fault(lambda: Reply.error(status, f"scripted {status}", headers), times)

    def hang(self, seconds: float = 30.0, *, times: int | None = 1) -> VisionEndpoint:
        return self._fault(lambda: Reply.json({}, delay_s=seconds), times)

    def drop(self, *, times: int | None = 1) -> VisionEndpoint:
        return self._fault(Reply.dropped, times)

    def garbage(self, *, times: int | None = 1) -> VisionEndpoint:
        """Answer 200 with JSON that is not a chat completion."""
        return self._fault(lambda: Reply.json({"data": []}), times)

    def cut(self, *, times: int | None = 1) -> VisionEndpoint:
        """Answer as if the answer reached ``max_tokens`` (``finish_reason: "length"``)."""
        with self._lock:
            self._faults.append(_Fault(None, times))
        return self

    def heal(self) -> VisionEndpoint:
        with self._lock:
            self._faults.clear()
        return self

    def _fault(self, reply: Callable[[], Reply], times: int | None) -> VisionEndpoint:
        with self._lock:
            self._faults.append(_Fault(reply, times))
        return self

    # -- serving -------------------------------------------------------------------
    def _handle(self, request: RecordedRequest) -> Reply:
        call = _parse(request.json)
        with self._lock:
            self.calls.append(call)
            fault = self._next_fault()
        if fault is not None and fault.reply is not None:
            return fault.reply()
        text = self._text(call)
        finish = "length" if fault is not None else "stop"
        return Reply.json(_completion(call.model, text, finish))

    def _next_fault(self) -> _Fault | None:
        if not self._faults:
            return None
        fault = self._faults[0]
        if fault.times is not None:
            fault.times -= 1
            if fault.times <= 0:
                self._faults.pop(0)
        return fault

    def _text(self, call: VisionCall) -> str:
        with self._lock:
            fixed = self._answers.get(call.image.sha256) if len(call.images) == 1 else None
            rules = list(self._rules)
        if fixed is not None:
            return fixed
        for rule in rules:
            if (text := rule(call)) is not None:
                return text
        return self._default(call) or ""


def _parse(body: Any) -> VisionCall:
    system = ""
    texts: list[str] = []
    images: list[SeenImage] = []
    for message in body["messages"]:
        content = message["content"]
        if message["role"] == "system":
            system = content if isinstance(content, str) else ""
            continue
        for part in content if isinstance(content, list) else [{"type": "text", "text": content}]:
            if part["type"] == "text":
                texts.append(part["text"])
            elif part["type"] == "image_url":
                images.append(_image(part["image_url"]["url"]))
    return VisionCall(
        body.get("model", ""), body.get("max_tokens"), system, tuple(texts), tuple(images), body
    )


def _image(url: str) -> SeenImage:
    head, _, payload = url.partition(",")
    if not head.startswith("data:image/") or not head.endswith(";base64"):
        raise ValueError(f"not a base64 image data URI: {head[:40]!r}")
    data = base64.b64decode(payload, validate=True)
    with Image.open(io.BytesIO(data)) as picture:
        width, height = picture.size
    return SeenImage(hashlib.sha256(data).hexdigest(), head[5:-7], width, height, data)


def _completion(model: str, text: str, finish: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": model or MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 1, "completion_tokens": max(len(text.split()), 1), "total_tokens": 2},
    }


@pytest.fixture
def vision_endpoint() -> Iterator[VisionEndpoint]:
    """A started :class:`VisionEndpoint`, closed after the test."""
    with VisionEndpoint() as endpoint:
        yield endpoint
