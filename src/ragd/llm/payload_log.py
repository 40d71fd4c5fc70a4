"""The requests ragd sends to an LLM, logged at DEBUG on ``ragd.llm.payload``, sanitised.

One line per request (the agent's steps, query generation, the chat proxy's answers and tool
rounds): the model, then the request body as JSON with

* every value under a key that names a credential (``api_key``, ``authorization``, ``token``,
  ``secret``, ``password``, ``cookie`` …) replaced by ``[redacted]``, and ``Bearer …`` or ``sk-…``
  inside any text as well;
* every string cut at :data:`TEXT_CHARS` characters (``…`` marks the cut), so a context of
  documents is a preview, never a copy of the corpus in the log;
* control characters, line separators and bidi overrides escaped (``\\x1b``, ``\\u2028`` …).

The API key itself never reaches the body (the client sends it as a header, which is not logged).
Turn it on without the rest of DEBUG: ``RAGD_LOG__LEVELS=ragd.llm.payload=DEBUG``.
Nothing is built while the logger is not enabled for DEBUG.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from typing import Any

from ragd.observe.logging import sanitize

log = logging.getLogger("ragd.llm.payload")

#: characters kept of each string in the body
TEXT_CHARS = 300
#: characters of the whole line at most
LINE_CHARS = 20_000
REDACTED = "[redacted]"
_SECRET_KEY = re.compile(
    r"api[_-]?key|authori[sz]ation|secret|password|passwd|token$|cookie|credential", re.I
)
_SECRET_TEXT = re.compile(r"(?i)\bbearer\s+[^\s\"']+|\bsk-[A-Za-z0-9_-]{8,}")


def log_request(kind: str, model: str, payload: Mapping[str, Any]) -> None:
    """Log ``payload`` (a chat-completions request body) sent to ``model`` for ``kind`` of call."""
    if not log.isEnabledFor(logging.DEBUG):
        return
    body = json.dumps(_clean(payload), ensure_ascii=False, default=str)
    log.debug(
        "LLM request (%s) to %s: %s", kind, sanitize(model, limit=128), sanitize(body, limit=LINE_CHARS)
    )


def _clean(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): REDACTED if _SECRET_KEY.search(str(k)) else _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(item) for item in value]
    if isinstance(value, str):
        text = _SECRET_TEXT.sub(REDACTED, value)
        return text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS] + "…"
    return value
