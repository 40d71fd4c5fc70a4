"""The server-side tools a model may call while answering: ``read_full_document``, ``search_documents``.

A tool call never fails the answer for the model's mistakes (bad JSON, an unknown tool, a path
that is no indexed document): the model gets an ``Error: …`` message and may try again.  Failures
of ragd's own parts (store, embedder) do raise.

``read_full_document`` resolves its argument only against stored values — a path, name or file
id of a source in this answer, else a file id in the collection — and reassembles the document
from its chunks; nothing ever reaches the file system, so ``../../etc/passwd`` is just a string
that matches no document.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ragd.answer.context import cap_chars, fit_budget, render_context, render_sources_list, truncate_tokens
from ragd.answer.documents import read_document
from ragd.answer.sources import SourceBook
from ragd.chunk.base import TokenCounter
from ragd.llm.base import ToolSpec
from ragd.observe.metrics import Metrics
from ragd.prompts import READ_FULL_DOCUMENT, SEARCH_DOCUMENTS
from ragd.store.base import VectorStore
from ragd.types import Hit, PromptStyle, ToolCall

log = logging.getLogger(__name__)

READ_TOOL = ToolSpec(
    name="read_full_document",
    description=READ_FULL_DOCUMENT,
    parameters={
        "type": "object",
        "properties": {"file_path": {"type": "string", "description": "a document's path or file_id"}},
        "required": ["file_path"],
        "additionalProperties": False,
    },
)
SEARCH_TOOL = ToolSpec(
    name="search_documents",
    description=SEARCH_DOCUMENTS,
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "what to search for"}},
        "required": ["query"],
        "additionalProperties": False,
    },
)
TOOLS = (READ_TOOL, SEARCH_TOOL)
MAX_ECHO = 200
_ESCAPING = re.compile(r"(^|[\\/])\.\.([\\/]|$)|^[\\/~]|^[A-Za-z]:")

#: runs one search query over the answer's collection
Search = Callable[[str], Awaitable[list[Hit]]]


def echo(value: str) -> str:
    """A model-written value as it may appear in a message back to it: one line, bounded."""
    flat = " ".join(value.split())
    return flat if len(flat) <= MAX_ECHO else flat[:MAX_ECHO] + "…"


class ToolBox:
    """Runs the model's tool calls for one answer over one collection."""

    specs = TOOLS

    def __init__(
        self,
        *,
        store: VectorStore,
        search: Search,
        collection: str,
        book: SourceBook,
        counter: TokenCounter,
        budget: int,
        metrics: Metrics,
        style: PromptStyle = PromptStyle.DOCUMENTS,
        source_max_chars: int | None = None,
        served: Callable[[], Awaitable[str | None]] | None = None,
    ) -> None:
        """``style`` and ``source_max_chars``: search results are given as the context was;
        ``served``: the version of the collection's chunks searches read (a migration running)."""
        self._served = served
        self._style = style
        self._source_max_chars = source_max_chars
        self._store = store
        self._search = search
        self._collection = collection
        self._book = book
        self._counter = counter
        self._budget = budget
        self._metrics = metrics

    async def run(self, call: ToolCall) -> str:
        tool = call.name if call.name in (READ_TOOL.name, SEARCH_TOOL.name) else "unknown"
        self._metrics.chat_tool_calls.labels(tool).inc()
        log.info("tool call %s", tool)
        if tool == "unknown":
            names = " and ".join(t.name for t in TOOLS)
            return f"Error: unknown tool {echo(call.name)!r}; the tools are {names}"
        args = _arguments(call.arguments)
        if args is None:
            return "Error: the arguments must be a JSON object"
        if tool == READ_TOOL.name:
            return await self._read(_string(args, "file_path", "file_id", "path"))
        return await self._find(_string(args, "query"))

    async def _read(self, reference: str) -> str:
        if not reference:
            return "Error: give file_path, a document's path or file_id from the context"
        file_id = self._book.find_file(reference) or reference
        generation = await self._served() if self._served is not None else None
        document = await read_document(self._store, self._collection, file_id, generation=generation)
        if document is None:
            if _ESCAPING.search(reference):
                return "Error: Access denied. Path is outside the indexed documents."
            return f"Error: File not found: {echo(reference)}"
        text = truncate_tokens(document.text, self._counter, self._budget)
        return (
            f'<document source="{_attr(document.name)}" path="{_attr(document.source)}"'
            f' file_id="{_attr(document.file_id)}">\n{text}\n</document>'
        )

    async def _find(self, query: str) -> str:
        if not query:
            return "Error: give query, what to search for"
        numbered = cap_chars(self._book.preview(await self._search(query)), self._source_max_chars)
        found = fit_budget(numbered, self._counter, self._budget)
        if not found:
            return f"No documents matched {echo(query)!r}."
        self._book.keep(found)
        if self._style is PromptStyle.SOURCES_LIST:
            return render_sources_list(found)
        return f"<retrieved_documents>\n{render_context(found)}\n</retrieved_documents>"


def _arguments(text: str) -> Mapping[str, Any] | None:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _string(args: Mapping[str, Any], *names: str) -> str:
    for name in names:
        value = args.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
