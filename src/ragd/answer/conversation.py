"""The messages sent upstream: the client's conversation plus, with context, the RAG instructions.

Pure functions.  Client-side tool traffic (``tool`` turns, assistant turns that only call tools)
is dropped: the proxy answers with its own tools.  The instructions join the client's leading
system message rather than adding a second one, which some chat templates ignore or reject.
"""

from __future__ import annotations

from collections.abc import Iterable

from ragd.types import Message

KEPT_ROLES = frozenset({"system", "developer", "user", "assistant"})


def client_turns(messages: Iterable[Message]) -> list[Message]:
    return [
        Message(m.role, m.content)
        for m in messages
        if m.role in KEPT_ROLES and (m.role == "user" or m.content.strip())
    ]


def with_instructions(messages: list[Message], instructions: str) -> list[Message]:
    """``messages`` with ``instructions`` in the (first) system message."""
    if messages and messages[0].role == "system":
        first = messages[0]
        return [Message("system", f"{first.content.rstrip()}\n\n{instructions}"), *messages[1:]]
    return [Message("system", instructions), *messages]
